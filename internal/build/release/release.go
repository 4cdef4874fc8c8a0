// Package release builds a release of the project under one folder (make release): scorectl for
// every platform it ships on, the Docker runtime's agent for Linux, the images as OCI archives, the packaged chart, the CRD bundle, a
// CycloneDX SBOM of every binary and the SHA-256 sums of them all.
//
// Built twice from one commit, the folders are byte-identical: the binaries by
// internal/build/gobuild, the images by internal/build/image (their layers dated 1970), every
// archive this package writes with its entries sorted, owned by root and dated by the commit
// (SOURCE_DATE_EPOCH), and the SBOMs without a time, with a serial number drawn from the
// binary's bytes, written by a generator built as reproducibly as the binaries. make test
// checks each kind of file so (release_test.go); make release-check builds the whole release a
// second time from a copy of the commit elsewhere with an empty build cache, and compares.
package release

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/score-orchestrator/score-orchestrator/internal/build/gobuild"
	"github.com/score-orchestrator/score-orchestrator/internal/build/image"
	"github.com/score-orchestrator/score-orchestrator/internal/version"
)

// CLITargets are the platforms scorectl is released for.
var CLITargets = []gobuild.Target{
	{OS: "linux", Arch: "amd64"}, {OS: "linux", Arch: "arm64"},
	{OS: "darwin", Arch: "amd64"}, {OS: "darwin", Arch: "arm64"},
}

// AgentTargets are the platforms score-docker-agent, the Docker runtime's agent, is released
// for: the Docker hosts it runs on.
var AgentTargets = []gobuild.Target{{OS: "linux", Arch: "amd64"}, {OS: "linux", Arch: "arm64"}}

// ImageArchs are the architectures of the images (linux), one index each.
var ImageArchs = []string{"amd64", "arm64"}

// SBOMTool is the CycloneDX generator, a tool of go.mod (its version pinned there).
const SBOMTool = "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod"

// Paths in the repository, and the names of the files a release holds besides the binaries,
// their SBOMs, the image archives and the chart.
const (
	ChartDir      = "charts/score-orchestrator"
	CRDDir        = "config/crd/bases"
	CRDBundleName = "crds.yaml"
	SumsName      = "SHA256SUMS"
)

// Options are a release's inputs.
type Options struct {
	// Root is the repository's tree the release is built from.
	Root string
	// Version is the release's version; the tree's file VERSION must say the same.
	Version string
	// Commit is stamped into the binaries and the images' labels.
	Commit string
	// Epoch dates the archives' entries (SOURCE_DATE_EPOCH: the commit's time).
	Epoch time.Time
	// Out is the folder the release is written to (replaced when the build succeeds).
	Out string
	// Env is added to the go command's environment (GOCACHE=..., for example).
	Env []string
	// Log receives a line per step.
	Log io.Writer
}

// File is one file of a release.
type File struct {
	Name   string
	Size   int64
	SHA256 string
}

// CLIName is the file name of scorectl for t.
func CLIName(t gobuild.Target) string { return "scorectl-" + t.OS + "-" + t.Arch }

// AgentName is the file name of score-docker-agent for t.
func AgentName(t gobuild.Target) string { return "score-docker-agent-" + t.OS + "-" + t.Arch }

// SBOMName is the file name of the SBOM of the binary named binary.
func SBOMName(binary string) string { return binary + ".cdx.json" }

// ImageArchiveName is the file name of the archive of the image named name.
func ImageArchiveName(name string) string { return name + ".oci.tar" }

// Build writes the release to o.Out and returns its files. What it builds goes to a folder
// beside o.Out first, which replaces o.Out only once every file is written: a failed build
// leaves the release that was there.
func Build(ctx context.Context, o Options) ([]File, error) {
	if err := version.Check(o.Root, o.Version); err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	b, err := newBuild(o)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(b.scratch)
	host := gobuild.Target{OS: runtime.GOOS, Arch: runtime.GOARCH}
	if err := b.step("the SBOM generator", func() error {
		return gobuild.Build{Dir: o.Root, Package: SBOMTool, Target: host, Env: o.Env}.Run(ctx, b.sbomTool)
	}); err != nil {
		return nil, err
	}
	bins, err := b.binaries(ctx)
	if err != nil {
		return nil, err
	}
	for _, spec := range image.Images {
		if err := b.step("the image "+spec.Name, func() error { return b.imageArchive(spec, bins[spec.Name]) }); err != nil {
			return nil, err
		}
	}
	if err := b.step("the chart", func() error {
		_, err := Chart(filepath.Join(o.Root, ChartDir), o.Version, o.Epoch, b.work)
		return err
	}); err != nil {
		return nil, err
	}
	if err := b.step("the CRD bundle", func() error {
		return CRDBundle(filepath.Join(o.Root, CRDDir), o.Version, filepath.Join(b.work, CRDBundleName))
	}); err != nil {
		return nil, err
	}
	var files []File
	if err := b.step("the sums", func() error {
		files, err = Sums(b.work)
		return err
	}); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(o.Out); err != nil {
		return nil, err
	}
	return files, os.Rename(b.work, o.Out)
}

// build is one run of Build: work is the folder the release's files are written to (beside
// o.Out, replacing it at the end), scratch holds what is built but not released (removed at
// the end), sbomTool is the SBOM generator built there.
type build struct {
	o                       Options
	work, scratch, sbomTool string
}

// newBuild empties the work folder and makes the scratch folder.
func newBuild(o Options) (*build, error) {
	work := o.Out + ".partial"
	if err := os.RemoveAll(work); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp("", "score-release-")
	if err != nil {
		return nil, err
	}
	return &build{o: o, work: work, scratch: scratch, sbomTool: filepath.Join(scratch, "cyclonedx-gomod")}, nil
}

// step runs f, naming the step in its error, and logs how long it took.
func (b *build) step(what string, f func() error) error {
	start := time.Now()
	if err := f(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	fmt.Fprintf(b.o.Log, "[release] %-44s %5.1fs\n", what, time.Since(start).Seconds())
	return nil
}

// binary builds a command for t and writes its SBOM beside the release's files.
func (b *build) binary(ctx context.Context, pkg string, t gobuild.Target, path string) error {
	return b.step("go build "+pkg+" "+t.String(), func() error {
		if err := (gobuild.Build{Dir: b.o.Root, Package: pkg, Target: t, Commit: b.o.Commit, Env: b.o.Env}).Run(ctx, path); err != nil {
			return err
		}
		return SBOM(ctx, b.sbomTool, path, t, b.o.Version, filepath.Join(b.work, SBOMName(filepath.Base(path))))
	})
}

// binaries builds scorectl for every CLITarget and score-docker-agent for every AgentTarget
// into the release, and the other images' commands for every ImageArch into scratch. It returns each image's binary by arch: an
// image of scorectl carries the very binary released.
func (b *build) binaries(ctx context.Context) (map[string]map[string]string, error) {
	bins := map[string]map[string]string{} // image name, arch: the binary
	for _, spec := range image.Images {
		bins[spec.Name] = map[string]string{}
	}
	for _, t := range CLITargets {
		path := filepath.Join(b.work, CLIName(t))
		if err := b.binary(ctx, "./cmd/scorectl", t, path); err != nil {
			return nil, err
		}
		if t.OS == "linux" {
			bins["scorectl"][t.Arch] = path // the image carries the very same binary
		}
	}
	for _, t := range AgentTargets {
		if err := b.binary(ctx, "./cmd/score-docker-agent", t, filepath.Join(b.work, AgentName(t))); err != nil {
			return nil, err
		}
	}
	for _, spec := range image.Images {
		for _, arch := range ImageArchs {
			if bins[spec.Name][arch] != "" {
				continue
			}
			path := filepath.Join(b.scratch, spec.Name+"-linux-"+arch)
			if err := b.binary(ctx, spec.Package, gobuild.Target{OS: "linux", Arch: arch}, path); err != nil {
				return nil, err
			}
			bins[spec.Name][arch] = path
		}
	}
	return bins, nil
}

// imageArchive writes the archive of the image spec, an index of one image per ImageArch, each
// carrying its binary of bins.
func (b *build) imageArchive(spec image.Spec, bins map[string]string) error {
	var imgs []v1.Image
	for _, arch := range ImageArchs {
		img, err := image.Build{Root: b.o.Root, Version: b.o.Version, Commit: b.o.Commit, Arch: arch}.Image(spec, bins[arch])
		if err != nil {
			return err
		}
		imgs = append(imgs, img)
	}
	dir := filepath.Join(b.scratch, "layout-"+spec.Name)
	if _, err := image.WriteIndexLayout(dir, imgs, b.o.Version); err != nil {
		return err
	}
	return TarDir(dir, filepath.Join(b.work, ImageArchiveName(spec.Name)), b.o.Epoch)
}

// SBOM writes the CycloneDX SBOM (JSON) of the Go binary at binary, built for t, to out, with
// tool (cyclonedx-gomod): the modules the binary's build information names (with their go.sum
// hashes) and the Go standard library, the binary's own hashes, the version of the main
// module. Reproducible: no timestamp, and a serial number drawn from the binary's SHA-256.
func SBOM(ctx context.Context, tool, binary string, t gobuild.Target, version, out string) error {
	sum, err := fileSHA256(binary)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, tool, "bin", "-json", "-std", "-notimestamp",
		"-serial", SerialNumber(sum), "-version", version, "-output", out, binary)
	// The generator names the platform in each package URL from GOOS and GOARCH.
	cmd.Env = append(os.Environ(), "GOOS="+t.OS, "GOARCH="+t.Arch)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("the SBOM of %s: %w\n%s", filepath.Base(binary), err, msg)
	}
	return nil
}

// SerialNumber is an SBOM's serial number for the binary of SHA-256 sum: a UUID (version 8,
// RFC 9562's for custom ones) of the sum's first 16 bytes, so that the same binary gets the
// same SBOM and another binary another serial number.
func SerialNumber(sum [sha256.Size]byte) string {
	u := sum[:16]
	u[6] = u[6]&0x0f | 0x80 // version 8
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	h := hex.EncodeToString(u)
	return "urn:uuid:" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// Chart packages the chart at dir into outDir (NAME-VERSION.tgz, as helm package names it) and
// returns its path. Its files are dated epoch (helm's own SOURCE_DATE_EPOCH stamp), in the order
// helm's loader reads them (sorted). The chart's version and appVersion must be version: make
// generate writes them from VERSION.
func Chart(dir, version string, epoch time.Time, outDir string) (string, error) {
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return "", err
	}
	if ch.Metadata.Version != version || ch.Metadata.AppVersion != version {
		return "", fmt.Errorf("the chart's version %q and appVersion %q are not %q: run make generate (it writes VERSION into the chart)", ch.Metadata.Version, ch.Metadata.AppVersion, version)
	}
	if err := ch.Validate(); err != nil {
		return "", err
	}
	ch.StampModTimes(epoch)
	return chartutil.Save(ch, outDir)
}

// CRDBundle writes the CRDs of dir (its *.yaml files, sorted) as one multi-document YAML file at
// out, for `kubectl apply --server-side -f`.
func CRDBundle(dir, version, out string) error {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return fmt.Errorf("no CRDs in %s", dir)
	}
	sort.Strings(paths)
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Score Orchestrator %s: the score.dev CRDs. Apply them before the chart or the\n", version)
	fmt.Fprintf(&b, "# controllers (docs/upgrading.md):\n#   kubectl apply --server-side -f %s\n", CRDBundleName)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.HasPrefix(data, []byte("---\n")) {
			b.WriteString("---\n")
		}
		b.Write(data)
		if !bytes.HasSuffix(data, []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	return os.WriteFile(out, b.Bytes(), 0o644)
}

// TarDir writes the files and folders under dir as an uncompressed tar at out (an OCI image
// layout as an OCI archive: `skopeo copy oci-archive:FILE`, or unpack it for `oras cp
// --from-oci-layout`): names relative to dir, sorted, owned by root, folders 0755 and files
// 0644, dated epoch. Nothing in an image layout is run from it, and the modes its writer left
// (go-containerregistry writes some files 0777 less the umask) are the build machine's, not
// the release's.
func TarDir(dir, out string, epoch time.Time) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	// WalkDir visits in lexical order: the same tree gives the same archive.
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: epoch.UTC().Truncate(time.Second)}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
		case d.Type().IsRegular():
			h.Typeflag, h.Size, h.Mode = tar.TypeReg, info.Size(), 0o644
		default:
			return fmt.Errorf("%s is neither a file nor a folder", path)
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// Sums writes the SHA-256 sums of the files of dir to dir/SHA256SUMS, sorted by name, in the
// form `sha256sum --check` reads, and returns every file with its size and sum (the sums file
// last).
func Sums(dir string) ([]File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []File
	var b strings.Builder
	for _, e := range entries { // sorted by name
		if e.Name() == SumsName {
			continue
		}
		if !e.Type().IsRegular() {
			return nil, fmt.Errorf("%s: a release holds files only", e.Name())
		}
		f, err := describe(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		fmt.Fprintf(&b, "%s  %s\n", f.SHA256, f.Name)
	}
	path := filepath.Join(dir, SumsName)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	f, err := describe(path)
	if err != nil {
		return nil, err
	}
	return append(files, f), nil
}

// Describe lists the files of a release folder with their sizes and sums, sorted by name.
func Describe(dir string) ([]File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []File
	for _, e := range entries {
		f, err := describe(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

func describe(path string) (File, error) {
	sum, err := fileSHA256(path)
	if err != nil {
		return File{}, err
	}
	info, err := os.Stat(path)
	if err != nil {
		return File{}, err
	}
	return File{Name: filepath.Base(path), Size: info.Size(), SHA256: hex.EncodeToString(sum[:])}, nil
}

func fileSHA256(path string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, err
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// Compare is what differs between two release folders: a file in one only, or of other bytes.
// Empty, they are identical.
func Compare(a, b string) ([]string, error) {
	fa, err := Describe(a)
	if err != nil {
		return nil, err
	}
	fb, err := Describe(b)
	if err != nil {
		return nil, err
	}
	in := map[string]File{}
	for _, f := range fb {
		in[f.Name] = f
	}
	var diffs []string
	for _, f := range fa {
		g, ok := in[f.Name]
		delete(in, f.Name)
		switch {
		case !ok:
			diffs = append(diffs, f.Name+": only in "+a)
		case f != g:
			diffs = append(diffs, fmt.Sprintf("%s: %d bytes %s in %s, %d bytes %s in %s", f.Name, f.Size, f.SHA256, a, g.Size, g.SHA256, b))
		}
	}
	for name := range in {
		diffs = append(diffs, name+": only in "+b)
	}
	sort.Strings(diffs)
	return diffs, nil
}
