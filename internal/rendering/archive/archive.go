// Package archive packs and unpacks template archives (tar+gzip): Helm charts and
// kustomization directories. Pack is deterministic — the same files always give the same
// bytes, whatever the Go version — so a packed archive can be pinned by its sha256. Unpack
// is bounded and refuses paths that would leave the archive's root.
package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
)

// Limits bound what Unpack accepts.
const (
	MaxFiles = 1000
	MaxBytes = 16 << 20
)

// Pack writes files (slash-separated relative paths) as a tar+gzip archive in path order,
// with fixed modes and times. The gzip stream uses stored (uncompressed) blocks: their
// format is fixed, so the bytes do not change with the compressor's implementation.
func Pack(files map[string][]byte) ([]byte, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		if err := checkPath(name); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.NoCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	for _, name := range names {
		hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(files[name])), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[name]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Unpack reads a tar+gzip archive into its regular files by cleaned relative path.
// Directories are implied by the paths; links and other special entries are refused.
func Unpack(data []byte) (map[string][]byte, error) {
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("the archive is not gzip: %w", err)
	}
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	var total int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("the archive is not a tar: %w", err)
		}
		switch hdr.Typeflag {
		case tar.TypeDir, tar.TypeXGlobalHeader:
			continue
		case tar.TypeReg:
		default:
			return nil, fmt.Errorf("the archive's entry %s is not a regular file", hdr.Name)
		}
		name := strings.TrimPrefix(path.Clean(strings.TrimPrefix(hdr.Name, "./")), "/")
		if err := checkPath(name); err != nil {
			return nil, err
		}
		if _, dup := files[name]; dup {
			return nil, fmt.Errorf("the archive holds %s twice", name)
		}
		if len(files) >= MaxFiles {
			return nil, fmt.Errorf("the archive holds more than %d files", MaxFiles)
		}
		total += hdr.Size
		if total > MaxBytes {
			return nil, fmt.Errorf("the archive unpacks to more than %d bytes", MaxBytes)
		}
		b, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		files[name] = b
	}
}

// checkPath accepts clean, relative, slash-separated paths inside the archive's root.
func checkPath(name string) error {
	if name == "" || name == "." || path.IsAbs(name) || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") || strings.Contains(name, `\`) {
		return fmt.Errorf("%q is not a relative path inside the archive", name)
	}
	return nil
}
