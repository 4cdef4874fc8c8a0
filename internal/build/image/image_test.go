package image

import (
	"archive/tar"
	"context"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
	"github.com/score-orchestrator/score-orchestrator/internal/version"
)

// TestImages builds both images as make images does, opens each from its layout on disk and
// checks what a platform team relies on: the entrypoint, the non-root user, the labels, the
// base's files, and that the binary inside reports the version and commit it was built from.
func TestImages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both binaries")
	}
	b := Build{Root: testenv.RepoRoot(), Version: version.Version, Commit: "0123456789abcdef0123456789abcdef01234567"}
	out := t.TempDir()
	results, err := b.All(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(Images) {
		t.Fatalf("%d images, want %d", len(results), len(Images))
	}
	versionArgs := map[string][]string{"score-controllers": {"--version"}, "scorectl": {"version"}}
	for _, r := range results {
		t.Run(r.Spec.Name, func(t *testing.T) {
			img, err := Open(r.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if d, _ := img.Digest(); d != r.Digest {
				t.Errorf("the layout holds %s, the build reported %s", d, r.Digest)
			}
			if tag := layoutTag(t, r.Dir); tag != version.Version {
				t.Errorf("the layout's image is tagged %q, want the version %q", tag, version.Version)
			}
			cfg, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			c := cfg.Config
			if len(c.Entrypoint) != 1 || c.Entrypoint[0] != "/"+r.Spec.Name {
				t.Errorf("entrypoint %v", c.Entrypoint)
			}
			if c.User != "65532:65532" {
				t.Errorf("user %q, want the non-root 65532:65532", c.User)
			}
			for k, want := range map[string]string{
				"org.opencontainers.image.title": r.Spec.Name, "org.opencontainers.image.version": b.Version,
				"org.opencontainers.image.revision": b.Commit, "org.opencontainers.image.source": Source,
			} {
				if c.Labels[k] != want {
					t.Errorf("label %s = %q, want %q", k, c.Labels[k], want)
				}
			}
			if cfg.OS != "linux" || cfg.Architecture == "" {
				t.Errorf("platform %s/%s", cfg.OS, cfg.Architecture)
			}

			// The file system, as a runtime unpacks it.
			files := map[string][]byte{}
			modes := map[string]int64{}
			tr := tar.NewReader(mutate.Extract(img))
			for {
				h, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				data, err := io.ReadAll(tr)
				if err != nil {
					t.Fatal(err)
				}
				name := strings.TrimSuffix(h.Name, "/")
				files[name], modes[name] = data, h.Mode
			}
			if !strings.Contains(string(files["etc/passwd"]), "nonroot:x:65532:65532:") {
				t.Errorf("/etc/passwd does not name the user 65532: %q", files["etc/passwd"])
			}
			if !strings.Contains(string(files["etc/ssl/certs/ca-certificates.crt"]), "BEGIN CERTIFICATE") {
				t.Error("no CA certificates")
			}
			if modes["tmp"] != 0o1777 {
				t.Errorf("/tmp mode %o", modes["tmp"])
			}
			for _, shell := range []string{"bin/sh", "bin/bash"} {
				if _, ok := files[shell]; ok {
					t.Errorf("the image has %s", shell)
				}
			}

			// The binary inside reports the version and commit it was built from.
			bin := filepath.Join(t.TempDir(), r.Spec.Name)
			if err := os.WriteFile(bin, files[r.Spec.Name], 0o755); err != nil {
				t.Fatal(err)
			}
			got, err := exec.Command(bin, versionArgs[r.Spec.Name]...).CombinedOutput()
			if err != nil {
				t.Fatalf("%s %v: %v\n%s", r.Spec.Name, versionArgs[r.Spec.Name], err, got)
			}
			if want := r.Spec.Name + " " + b.Version + " (commit " + b.Commit + ")"; strings.TrimSpace(string(got)) != want {
				t.Errorf("the binary says %q, want %q", strings.TrimSpace(string(got)), want)
			}
			t.Logf("%s %s: %.1f MB compressed, %.1f MB unpacked", r.Spec.Name, r.Digest, float64(r.Compressed)/1e6, float64(r.Uncompressed)/1e6)
		})
	}
}

// layoutTag is the tag (org.opencontainers.image.ref.name) of the only entry of the OCI image
// layout at dir.
func layoutTag(t *testing.T, dir string) string {
	t.Helper()
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 {
		t.Fatalf("%s holds %d entries, want 1", dir, len(m.Manifests))
	}
	return m.Manifests[0].Annotations["org.opencontainers.image.ref.name"]
}

// The images are labelled and tagged with the version their binaries report, or not built.
func TestImagesRefuseAnotherVersion(t *testing.T) {
	b := Build{Root: testenv.RepoRoot(), Version: "9.8.7", Commit: "abc"}
	_, err := b.All(context.Background(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), `version "9.8.7": the binaries built from`) {
		t.Fatalf("error %v, want the refusal of another version", err)
	}
}

// Images of two architectures in one index: each under its platform, the index tagged.
func TestIndexLayout(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "app")
	if err := os.WriteFile(bin, []byte("#!/not/a/real/binary\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var imgs []v1.Image
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := Build{Version: "v1", Commit: "abc", Arch: arch}.Image(Spec{Name: "app"}, bin)
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, img)
	}
	dir := filepath.Join(t.TempDir(), "layout")
	digest, err := WriteIndexLayout(dir, imgs, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if tag := layoutTag(t, dir); tag != "v1" {
		t.Errorf("tagged %q", tag)
	}
	outer, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := outer.ImageIndex(digest)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for i, d := range m.Manifests {
		platforms = append(platforms, d.Platform.String())
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := imgs[i].Digest(); d.Digest != want {
			t.Errorf("%s: %s, built %s", d.Platform, d.Digest, want)
		}
		if cfg, err := img.ConfigFile(); err != nil || cfg.Architecture != d.Platform.Architecture {
			t.Errorf("%s: the image's config says %v (%v)", d.Platform, cfg, err)
		}
	}
	if got := strings.Join(platforms, ","); got != "linux/amd64,linux/arm64" {
		t.Errorf("platforms %s", got)
	}
}

// The same binary gives the same image, byte for byte.
func TestImageIsReproducible(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "app")
	if err := os.WriteFile(bin, []byte("#!/not/a/real/binary\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := Build{Version: "v1", Commit: "abc"}
	var digests []string
	for range 2 {
		img, err := b.Image(Spec{Name: "app"}, bin)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d.String())
	}
	if digests[0] != digests[1] {
		t.Fatalf("two builds of one binary: %v", digests)
	}
}

// Push copies a built layout to a registry (here one in this process), where it has the
// layout's digest under the version's tag.
func TestPush(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials: the registry is open
	dir := t.TempDir()
	bin := filepath.Join(dir, "app")
	if err := os.WriteFile(bin, []byte("#!/not/a/real/binary\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	img, err := Build{Version: "v1", Commit: "abc"}.Image(Spec{Name: "app"}, bin)
	if err != nil {
		t.Fatal(err)
	}
	r, err := WriteLayout(filepath.Join(dir, "layout"), Spec{Name: "app"}, img, "v1")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	pushed, err := Push(context.Background(), r.Dir, "v1", host+"/platform/app", true)
	if err != nil {
		t.Fatal(err)
	}
	if pushed != r.Digest.String() {
		t.Fatalf("pushed %s, built %s", pushed, r.Digest)
	}
	repo, err := remote.NewRepository(host + "/platform/app")
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	desc, err := repo.Resolve(context.Background(), "v1")
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest.String() != pushed {
		t.Fatalf("the registry has %s under v1, want %s", desc.Digest, pushed)
	}
}
