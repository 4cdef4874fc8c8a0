package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/score-orchestrator/score-orchestrator/internal/build/gobuild"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
	"github.com/score-orchestrator/score-orchestrator/internal/version"
)

// The commit's time of a made-up release.
var epoch = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

// twice runs build into two fresh folders and fails unless both wrote the same bytes; it
// returns the first.
func twice(t *testing.T, build func(dir string) (string, error)) []byte {
	t.Helper()
	var outs [][]byte
	for range 2 {
		path, err := build(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, data)
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Fatalf("built twice, %d and %d bytes that differ", len(outs[0]), len(outs[1]))
	}
	return outs[0]
}

// entries are the headers of a tar archive.
func entries(t *testing.T, r io.Reader) []*tar.Header {
	t.Helper()
	var hs []*tar.Header
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return hs
		}
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
}

// The packaged chart: the same bytes twice, every entry dated by the commit, and helm loads it
// at the version the binaries report.
func TestChartIsReproducible(t *testing.T) {
	chartDir := filepath.Join(testenv.RepoRoot(), ChartDir)
	data := twice(t, func(dir string) (string, error) { return Chart(chartDir, version.Version, epoch, dir) })
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	hs := entries(t, zr)
	if len(hs) < 10 {
		t.Fatalf("%d entries", len(hs))
	}
	for _, h := range hs {
		if !h.ModTime.Equal(epoch) {
			t.Errorf("%s is dated %s, want the commit's time %s", h.Name, h.ModTime, epoch)
		}
	}
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.Version != version.Version || ch.Metadata.AppVersion != version.Version {
		t.Errorf("the packaged chart's version %q and appVersion %q, the binaries report %q", ch.Metadata.Version, ch.Metadata.AppVersion, version.Version)
	}
	if len(ch.CRDObjects()) == 0 {
		t.Error("the packaged chart carries no CRDs")
	}
}

// A chart whose version is not the release's is not packaged as it.
func TestChartRefusesAnotherVersion(t *testing.T) {
	_, err := Chart(filepath.Join(testenv.RepoRoot(), ChartDir), "9.8.7", epoch, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), `are not "9.8.7": run make generate`) {
		t.Fatalf("error %v", err)
	}
}

// The CRD bundle: the same bytes twice, every CRD of config/crd/bases once, in the order of
// their files.
func TestCRDBundleIsReproducible(t *testing.T) {
	root := testenv.RepoRoot()
	data := twice(t, func(dir string) (string, error) {
		out := filepath.Join(dir, CRDBundleName)
		return out, CRDBundle(filepath.Join(root, CRDDir), version.Version, out)
	})
	files, err := filepath.Glob(filepath.Join(root, CRDDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, f := range files {
		want = append(want, strings.TrimPrefix(strings.TrimSuffix(filepath.Base(f), ".yaml"), "score.dev_")+".score.dev")
	}
	for _, doc := range strings.Split(string(data), "\n---\n")[1:] {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict([]byte(doc), &crd); err != nil {
			t.Fatal(err)
		}
		if crd.Kind != "CustomResourceDefinition" {
			t.Errorf("a %s in the bundle", crd.Kind)
		}
		got = append(got, crd.Name)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("the bundle holds %v, want %v", got, want)
	}
}

// An archive of a folder is its content alone: not the order the files were written in, their
// times, nor where the folder is.
func TestTarDirIsReproducible(t *testing.T) {
	write := func(dir string, names []string, when time.Time) {
		for _, n := range names {
			p := filepath.Join(dir, n)
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			// Modes as a writer's umask leaves them: the archive says 0644 whatever they are.
			mode := os.FileMode(0o600)
			if strings.HasPrefix(n, "blobs/") {
				mode = 0o755
			}
			if err := os.WriteFile(p, []byte("content of "+n), mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, when, when); err != nil {
				t.Fatal(err)
			}
		}
	}
	names := []string{"oci-layout", "index.json", "blobs/sha256/bb", "blobs/sha256/aa"}
	n := 0
	data := twice(t, func(dir string) (string, error) {
		src := filepath.Join(dir, "layout")
		order := names
		if n++; n == 2 {
			order = []string{names[3], names[1], names[2], names[0]}
		}
		write(src, order, time.Now().Add(time.Duration(n)*time.Hour))
		out := filepath.Join(dir, "image.oci.tar")
		return out, TarDir(src, out, epoch)
	})
	var got []string
	for _, h := range entries(t, bytes.NewReader(data)) {
		got = append(got, h.Name)
		mode := int64(0o644)
		if h.Typeflag == tar.TypeDir {
			mode = 0o755
		}
		if !h.ModTime.Equal(epoch) || h.Uid != 0 || h.Gid != 0 || h.Mode != mode {
			t.Errorf("%s: dated %s, owned by %d:%d, mode %o", h.Name, h.ModTime, h.Uid, h.Gid, h.Mode)
		}
	}
	if want := "blobs/,blobs/sha256/,blobs/sha256/aa,blobs/sha256/bb,index.json,oci-layout"; strings.Join(got, ",") != want {
		t.Errorf("entries %s, want %s", strings.Join(got, ","), want)
	}
}

// tinyModule writes, at dir, a module of the project's path whose command prints the commit
// stamped into internal/version, as the project's do: a binary that builds in seconds.
func tinyModule(t *testing.T, dir string) {
	t.Helper()
	for name, text := range map[string]string{
		"go.mod":                      "module github.com/score-orchestrator/score-orchestrator\n\ngo 1.26\n",
		"internal/version/version.go": "package version\n\nvar Commit = \"unknown\"\n",
		"main.go":                     "package main\n\nimport (\n\t\"os\"\n\n\t\"github.com/score-orchestrator/score-orchestrator/internal/version\"\n)\n\nfunc main() { os.Stdout.WriteString(version.Commit + \"\\n\") }\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const commit = "8f9eed73a0430feed9a14f6c80b75c0cb761facb"

// A binary built as the release builds them is the same wherever its source is and whatever the
// build cache holds: the second build is of a copy in another folder, with an empty cache, so
// that every package is compiled and linked again.
func TestBinaryIsReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the standard library it uses")
	}
	host := gobuild.Target{OS: runtime.GOOS, Arch: runtime.GOARCH}
	var first string
	data := twice(t, func(dir string) (string, error) {
		src := filepath.Join(dir, "src")
		tinyModule(t, src)
		b := gobuild.Build{Dir: src, Package: ".", Target: host, Commit: commit, Env: []string{"GOWORK=off"}}
		if first != "" {
			b.Env = append(b.Env, "GOCACHE="+filepath.Join(dir, "gocache"))
		}
		out := filepath.Join(dir, "tiny")
		if first == "" {
			first = out
		}
		return out, b.Run(context.Background(), out)
	})
	got, err := exec.Command(first).Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(got)) != commit {
		t.Errorf("the binary says %q, want the commit stamped", got)
	}
	t.Logf("%d bytes, the same twice", len(data))
}

// The SBOM of a binary: the same bytes twice, CycloneDX naming the binary's main module at the
// release's version, its platform, the Go standard library and the binary's SHA-256, with a
// serial number of the binary's own.
func TestSBOMIsReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the SBOM generator")
	}
	ctx := context.Background()
	dir := t.TempDir()
	host := gobuild.Target{OS: runtime.GOOS, Arch: runtime.GOARCH}
	tool := filepath.Join(dir, "cyclonedx-gomod")
	if err := (gobuild.Build{Dir: testenv.RepoRoot(), Package: SBOMTool, Target: host}).Run(ctx, tool); err != nil {
		t.Fatal(err)
	}
	tinyModule(t, filepath.Join(dir, "src"))
	bin := filepath.Join(dir, "tiny")
	if err := (gobuild.Build{Dir: filepath.Join(dir, "src"), Package: ".", Target: host, Commit: commit, Env: []string{"GOWORK=off"}}).Run(ctx, bin); err != nil {
		t.Fatal(err)
	}
	target := gobuild.Target{OS: "linux", Arch: "arm64"} // as the release names the platform of a cross-compiled binary
	data := twice(t, func(out string) (string, error) {
		out = filepath.Join(out, SBOMName("tiny"))
		return out, SBOM(ctx, tool, bin, target, "9.8.7", out)
	})
	var bom struct {
		BOMFormat, SpecVersion, SerialNumber string
		Metadata                             struct {
			Timestamp  string
			Component  struct{ Name, Version, Purl string }
			Properties []struct{ Name, Value string }
		}
		Components []struct{ Name, Version string }
	}
	if err := json.Unmarshal(data, &bom); err != nil {
		t.Fatal(err)
	}
	bin2, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bin2)
	if bom.BOMFormat != "CycloneDX" || bom.SpecVersion == "" {
		t.Errorf("format %q %q", bom.BOMFormat, bom.SpecVersion)
	}
	if bom.SerialNumber != SerialNumber(sum) || bom.Metadata.Timestamp != "" {
		t.Errorf("serial number %q (want %q), timestamp %q (want none)", bom.SerialNumber, SerialNumber(sum), bom.Metadata.Timestamp)
	}
	c := bom.Metadata.Component
	if c.Name != "github.com/score-orchestrator/score-orchestrator" || c.Version != "9.8.7" || !strings.Contains(c.Purl, "goarch=arm64") || !strings.Contains(c.Purl, "goos=linux") {
		t.Errorf("the component %+v", c)
	}
	props := map[string]string{}
	for _, p := range bom.Metadata.Properties {
		props[p.Name] = p.Value
	}
	if got := props["cdx:gomod:binary:hash:SHA-256"]; got != hex.EncodeToString(sum[:]) {
		t.Errorf("the binary's SHA-256 %q, want %x", got, sum)
	}
	var std bool
	for _, c := range bom.Components {
		std = std || (c.Name == "std" && c.Version == runtime.Version())
	}
	if !std {
		t.Errorf("no component std at %s: %+v", runtime.Version(), bom.Components)
	}
}

func TestSerialNumber(t *testing.T) {
	a, b := SerialNumber(sha256.Sum256([]byte("a"))), SerialNumber(sha256.Sum256([]byte("b")))
	if a == b {
		t.Fatalf("two binaries, one serial number %s", a)
	}
	// urn:uuid:xxxxxxxx-xxxx-8xxx-[89ab]xxx-xxxxxxxxxxxx
	for _, s := range []string{a, b} {
		if len(s) != len("urn:uuid:")+36 || s[len("urn:uuid:")+14] != '8' || !strings.ContainsRune("89ab", rune(s[len("urn:uuid:")+19])) {
			t.Errorf("%s is not a version 8 UUID", s)
		}
	}
}

// A release is of the version its binaries report, or not built.
func TestBuildRefusesAnotherVersion(t *testing.T) {
	_, err := Build(context.Background(), Options{Root: testenv.RepoRoot(), Version: "9.8.7", Commit: commit, Out: filepath.Join(t.TempDir(), "9.8.7")})
	if err == nil || !strings.Contains(err.Error(), `version "9.8.7": the binaries built from`) {
		t.Fatalf("error %v", err)
	}
}

// Sums and Compare: the sums file in sha256sum's form, and a difference named.
func TestSumsAndCompare(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, dir := range []string{a, b} {
		for name, text := range map[string]string{"scorectl-linux-amd64": "bin", "crds.yaml": "crds"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := Sums(dir); err != nil {
			t.Fatal(err)
		}
	}
	sums, err := os.ReadFile(filepath.Join(a, SumsName))
	if err != nil {
		t.Fatal(err)
	}
	crds, bin := sha256.Sum256([]byte("crds")), sha256.Sum256([]byte("bin"))
	if want := hex.EncodeToString(crds[:]) + "  crds.yaml\n" + hex.EncodeToString(bin[:]) + "  scorectl-linux-amd64\n"; string(sums) != want {
		t.Errorf("SHA256SUMS:\n%s\nwant:\n%s", sums, want)
	}
	if diffs, err := Compare(a, b); err != nil || len(diffs) != 0 {
		t.Fatalf("the same files: %v %v", diffs, err)
	}
	if err := os.WriteFile(filepath.Join(b, "crds.yaml"), []byte("other"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a, "extra"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	diffs, err := Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) != 2 || !strings.HasPrefix(diffs[0], "crds.yaml: 4 bytes") || diffs[1] != "extra: only in "+a {
		t.Errorf("diffs %q", diffs)
	}
}
