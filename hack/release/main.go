// Command release builds a release under OUT/VERSION (internal/build/release) and prints each
// file's size and SHA-256; `compare A B` compares two release folders file by file. make
// release and make release-check run it.
//
//	go run ./hack/release --version 0.2.0 --commit $(git rev-parse HEAD) --epoch $(git log -1 --format=%ct) [--out dist]
//	go run ./hack/release compare dist/0.2.0 /tmp/elsewhere/dist/0.2.0
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/score-orchestrator/score-orchestrator/internal/build/release"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "compare" {
		os.Exit(compare(os.Args[2:]))
	}
	var o release.Options
	var out, epoch string
	flag.StringVar(&o.Version, "version", "", "the release's version (the file VERSION must say the same)")
	flag.StringVar(&o.Commit, "commit", "", "the commit stamped into the binaries and the images' labels")
	flag.StringVar(&epoch, "epoch", os.Getenv("SOURCE_DATE_EPOCH"), "the archives' date, in seconds since 1970 (the commit's time; default $SOURCE_DATE_EPOCH)")
	flag.StringVar(&out, "out", "dist", "the folder the release's folder, VERSION, is written under")
	flag.Parse()
	if o.Version == "" || o.Commit == "" || epoch == "" {
		fmt.Fprintln(os.Stderr, "release: --version, --commit and --epoch (or SOURCE_DATE_EPOCH) are required")
		os.Exit(2)
	}
	seconds, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil || seconds < 0 {
		fmt.Fprintf(os.Stderr, "release: --epoch %q is not a number of seconds since 1970\n", epoch)
		os.Exit(2)
	}
	o.Epoch = time.Unix(seconds, 0).UTC()
	if o.Root, err = os.Getwd(); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	if o.Out, err = filepath.Abs(filepath.Join(out, o.Version)); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	o.Log = os.Stderr
	start := time.Now()
	files, err := release.Build(context.Background(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	rel, _ := filepath.Rel(o.Root, o.Out)
	fmt.Printf("%s (commit %s, dated %s), in %.0fs:\n", rel, o.Commit, o.Epoch.Format(time.RFC3339), time.Since(start).Seconds())
	printFiles(files)
}

func printFiles(files []release.File) {
	for _, f := range files {
		fmt.Printf("  %11d  %s  %s\n", f.Size, f.SHA256, f.Name)
	}
}

// compare prints the files of two release folders and what differs; 1 when anything does.
func compare(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: release compare A B")
		return 2
	}
	files, err := release.Describe(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		return 1
	}
	diffs, err := release.Compare(args[0], args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		return 1
	}
	fmt.Printf("%s:\n", args[0])
	printFiles(files)
	if len(diffs) > 0 {
		fmt.Printf("%s differs from it:\n", args[1])
		for _, d := range diffs {
			fmt.Println("  " + d)
		}
		return 1
	}
	fmt.Printf("%s: the same %d files, byte for byte\n", args[1], len(files))
	return 0
}
