// Command images builds the score-controllers and scorectl images without a container engine
// (internal/build/image) into OUT/NAME, an OCI image layout each, and prints each image's
// digest and size. With --push PREFIX it then pushes them to PREFIX/NAME:VERSION with the
// credentials of the Docker config (~/.docker/config.json, as docker login or crane auth login
// write it).
//
//	go run ./hack/images --commit $(git rev-parse HEAD) [--version 0.2.0] [--out bin/images] [--push registry.example.com/platform]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/score-orchestrator/score-orchestrator/internal/build/image"
	"github.com/score-orchestrator/score-orchestrator/internal/version"
)

func main() {
	var b image.Build
	var out, push string
	flag.StringVar(&out, "out", "bin/images", "directory of the image layouts")
	flag.StringVar(&b.Version, "version", "", "the version the labels and tag say (default and only allowed value: the file VERSION, which the binaries report)")
	flag.StringVar(&b.Commit, "commit", "unknown", "commit stamped into the binaries and the labels")
	flag.StringVar(&b.Arch, "arch", "", "GOARCH to build for (default: this machine's)")
	flag.StringVar(&push, "push", "", "push each image to PREFIX/NAME:VERSION")
	plainHTTP := flag.Bool("plain-http", false, "reach the registry over plain HTTP (a local registry)")
	flag.Parse()
	if err := run(context.Background(), b, out, push, *plainHTTP); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, b image.Build, out, push string, plainHTTP bool) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	b.Root = root
	if b.Version == "" {
		if b.Version, err = version.Read(root); err != nil {
			return err
		}
	}
	if out, err = filepath.Abs(out); err != nil {
		return err
	}
	results, err := b.All(ctx, out)
	if err != nil {
		return err
	}
	for _, r := range results {
		rel, _ := filepath.Rel(root, r.Dir)
		fmt.Printf("%-18s %s  %s  %.1f MB compressed, %.1f MB unpacked\n", r.Spec.Name, rel, r.Digest, float64(r.Compressed)/1e6, float64(r.Uncompressed)/1e6)
		if push == "" {
			continue
		}
		repo := push + "/" + r.Spec.Name
		digest, err := image.Push(ctx, r.Dir, b.Version, repo, plainHTTP)
		if err != nil {
			return err
		}
		fmt.Printf("%-18s pushed %s:%s@%s\n", "", repo, b.Version, digest)
	}
	return nil
}
