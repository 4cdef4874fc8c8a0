// Package image builds the project's container images without a container engine: a static
// Go binary, stamped with its version and commit, on a minimal non-root base that this package
// writes itself (the CA certificates, /etc/passwd and /etc/group naming the user nonroot,
// 65532, and /tmp; no shell, no package manager), written as an OCI image layout. The layers
// and the configuration are reproducible: the same binary gives the same digest. make images
// calls it through hack/images.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/score-orchestrator/score-orchestrator/internal/build/gobuild"
	"github.com/score-orchestrator/score-orchestrator/internal/version"
)

// Spec is one image: a command of the repository as its entrypoint.
type Spec struct {
	// Name is the image's and the binary's name (/Name in the image).
	Name string
	// Package is the command's Go package, relative to the repository.
	Package     string
	Description string
	// Ports are the TCP ports the command listens on.
	Ports []int
}

// Images are the images the project ships.
var Images = []Spec{
	{Name: "score-controllers", Package: "./cmd/score-controllers", Ports: []int{8080, 8081},
		Description: "Score Orchestrator controllers: the orchestrator, the provisioner and the Kubernetes runtime"},
	{Name: "scorectl", Package: "./cmd/scorectl",
		Description: "Score Orchestrator command line: convert, render, apply and inspect Score workloads"},
}

// NonRoot is the user and group the images run as (distroless's nonroot).
const NonRoot = 65532

// Source is the repository named in the images' labels.
const Source = "https://github.com/score-orchestrator/score-orchestrator"

// Build is how the images are built.
type Build struct {
	// Root is the repository.
	Root string
	// Version is the images' tag and label: the version their binaries report (the file
	// VERSION, compiled in; All refuses another). Commit is stamped into the binaries and the
	// labels.
	Version, Commit string
	// Arch is the GOARCH to build for (default: this machine's).
	Arch string
	// CACerts is the CA bundle to carry (default /etc/ssl/certs/ca-certificates.crt).
	CACerts string
}

func (b Build) arch() string {
	if b.Arch != "" {
		return b.Arch
	}
	return runtime.GOARCH
}

// Binary builds spec's command as a static linux binary at out (internal/build/gobuild: stamped
// with the commit, reproducible).
func (b Build) Binary(ctx context.Context, spec Spec, out string) error {
	return gobuild.Build{Dir: b.Root, Package: spec.Package, Target: gobuild.Target{OS: "linux", Arch: b.arch()}, Commit: b.Commit}.Run(ctx, out)
}

// Image is spec's image around the binary at path: the base layer, then the binary's.
func (b Build) Image(spec Spec, binary string) (v1.Image, error) {
	caPath := b.CACerts
	if caPath == "" {
		caPath = "/etc/ssl/certs/ca-certificates.crt"
	}
	ca, err := os.ReadFile(caPath)
	if err != nil {
		return nil, fmt.Errorf("the CA bundle: %w", err)
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	id := strconv.Itoa(NonRoot)
	base, err := layer([]file{
		{path: "etc/", mode: 0o755, dir: true},
		{path: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:" + id + ":" + id + ":nonroot:/home/nonroot:/sbin/nologin\n")},
		{path: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:" + id + ":\n")},
		{path: "etc/ssl/", mode: 0o755, dir: true},
		{path: "etc/ssl/certs/", mode: 0o755, dir: true},
		{path: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: ca},
		{path: "home/", mode: 0o755, dir: true},
		{path: "home/nonroot/", mode: 0o700, dir: true, owner: NonRoot},
		{path: "tmp/", mode: 0o1777, dir: true},
	})
	if err != nil {
		return nil, err
	}
	app, err := layer([]file{{path: spec.Name, mode: 0o755, data: bin}})
	if err != nil {
		return nil, err
	}
	ports := map[string]struct{}{}
	for _, p := range spec.Ports {
		ports[strconv.Itoa(p)+"/tcp"] = struct{}{}
	}
	labels := map[string]string{
		"org.opencontainers.image.title":       spec.Name,
		"org.opencontainers.image.description": spec.Description,
		"org.opencontainers.image.version":     b.Version,
		"org.opencontainers.image.revision":    b.Commit,
		"org.opencontainers.image.source":      Source,
		"org.opencontainers.image.licenses":    "Apache-2.0",
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, base, app)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", b.arch()
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config = v1.Config{
		Entrypoint:   []string{"/" + spec.Name},
		User:         id + ":" + id,
		WorkingDir:   "/home/nonroot",
		Env:          []string{"HOME=/home/nonroot", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		Labels:       labels,
		ExposedPorts: ports,
	}
	return mutate.ConfigFile(img, cfg)
}

// file is one entry of a layer.
type file struct {
	path  string
	mode  int64
	data  []byte
	dir   bool
	owner int
}

// layer is a gzipped tar of files, owned by root unless said otherwise, dated 1970.
func layer(files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.path, Mode: f.mode, Uid: f.owner, Gid: f.owner, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// Result is one built image.
type Result struct {
	Spec Spec
	// Dir is its OCI image layout.
	Dir    string
	Image  v1.Image
	Digest v1.Hash
	// Compressed is the size of its layers as a registry stores them; Uncompressed unpacked.
	Compressed, Uncompressed int64
}

// All builds every image into out/NAME (an OCI image layout each), their binaries in out/bin.
func (b Build) All(ctx context.Context, out string) ([]Result, error) {
	if err := version.Check(b.Root, b.Version); err != nil {
		return nil, err
	}
	var results []Result
	for _, spec := range Images {
		bin := filepath.Join(out, "bin", spec.Name)
		if err := b.Binary(ctx, spec, bin); err != nil {
			return nil, err
		}
		img, err := b.Image(spec, bin)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", spec.Name, err)
		}
		r, err := WriteLayout(filepath.Join(out, spec.Name), spec, img, b.Version)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", spec.Name, err)
		}
		results = append(results, r)
	}
	return results, nil
}

// WriteLayout writes img as the only image of an OCI image layout at dir (replacing what was
// there), tagged version.
func WriteLayout(dir string, spec Spec, img v1.Image, version string) (Result, error) {
	if err := os.RemoveAll(dir); err != nil {
		return Result{}, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return Result{}, err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": version})); err != nil {
		return Result{}, err
	}
	r := Result{Spec: spec, Dir: dir, Image: img}
	if r.Digest, err = img.Digest(); err != nil {
		return Result{}, err
	}
	layers, err := img.Layers()
	if err != nil {
		return Result{}, err
	}
	for _, l := range layers {
		size, err := l.Size()
		if err != nil {
			return Result{}, err
		}
		r.Compressed += size
		rc, err := l.Uncompressed()
		if err != nil {
			return Result{}, err
		}
		n, err := io.Copy(io.Discard, rc)
		_ = rc.Close()
		if err != nil {
			return Result{}, err
		}
		r.Uncompressed += n
	}
	return r, nil
}

// WriteIndexLayout writes imgs, one per platform (each built by Image with its Arch), as one
// image index, the only entry of an OCI image layout at dir (replacing what was there), tagged
// version: one reference from which a node pulls the image of its architecture. It returns the
// index's digest.
func WriteIndexLayout(dir string, imgs []v1.Image, version string) (v1.Hash, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, img := range imgs {
		cfg, err := img.ConfigFile()
		if err != nil {
			return v1.Hash{}, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture},
		}})
	}
	if err := os.RemoveAll(dir); err != nil {
		return v1.Hash{}, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": version})); err != nil {
		return v1.Hash{}, err
	}
	return idx.Digest()
}

// Open reads the image of the OCI image layout at dir.
func Open(dir string) (v1.Image, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("%s holds %d images, want 1", dir, len(m.Manifests))
	}
	return idx.Image(m.Manifests[0].Digest)
}

// Push copies the image tagged tag in the OCI image layout at dir to repository (a
// registry/path reference without tag), tagged tag, with the credentials of the Docker config
// (~/.docker/config.json and its credential helpers, as docker login, oras login or crane
// auth login write them). It returns the pushed manifest's digest.
func Push(ctx context.Context, dir, tag, repository string, plainHTTP bool) (string, error) {
	src, err := oci.NewWithContext(ctx, dir)
	if err != nil {
		return "", err
	}
	repo, err := remote.NewRepository(repository)
	if err != nil {
		return "", err
	}
	repo.PlainHTTP = plainHTTP
	store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{})
	if err != nil {
		return "", fmt.Errorf("the Docker config's credentials: %w", err)
	}
	repo.Client = &auth.Client{Client: retry.DefaultClient, Cache: auth.NewCache(), Credential: credentials.Credential(store)}
	desc, err := oras.Copy(ctx, src, tag, repo, tag, oras.DefaultCopyOptions)
	if err != nil {
		return "", fmt.Errorf("pushing to %s:%s: %w", repository, tag, err)
	}
	return desc.Digest.String(), nil
}
