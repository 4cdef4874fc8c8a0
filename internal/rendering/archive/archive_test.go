package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"reflect"
	"strings"
	"testing"
)

func TestPackIsDeterministicAndRoundTrips(t *testing.T) {
	files := map[string][]byte{"Chart.yaml": []byte("name: x\n"), "templates/a.yaml": []byte("a"), "b/c.txt": nil}
	first, err := Pack(files)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		again, _ := Pack(files)
		if !bytes.Equal(first, again) {
			t.Fatal("Pack is not deterministic")
		}
	}
	got, err := Unpack(first)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || string(got["templates/a.yaml"]) != "a" || len(got["b/c.txt"]) != 0 {
		t.Fatalf("round trip %v", got)
	}
}

// tgz builds an archive by hand, so Unpack meets entries Pack would never write.
func tgz(t *testing.T, entries ...tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, h := range entries {
		h.Mode = 0o644
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			_, _ = tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
		}
	}
	_ = tw.Close()
	_ = gz.Close()
	return buf.Bytes()
}

func TestUnpack(t *testing.T) {
	for _, tc := range []struct {
		name    string
		data    []byte
		want    []string
		wantErr string
	}{
		{name: "a leading ./ and directories are fine", data: tgz(t, tar.Header{Name: "./", Typeflag: tar.TypeDir}, tar.Header{Name: "./kustomization.yaml", Typeflag: tar.TypeReg, Size: 1}), want: []string{"kustomization.yaml"}},
		{name: "a path out of the root is refused", data: tgz(t, tar.Header{Name: "../etc/passwd", Typeflag: tar.TypeReg, Size: 1}), wantErr: "not a relative path"},
		{name: "a symlink is refused", data: tgz(t, tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}), wantErr: "not a regular file"},
		{name: "a duplicate is refused", data: tgz(t, tar.Header{Name: "a", Typeflag: tar.TypeReg, Size: 1}, tar.Header{Name: "./a", Typeflag: tar.TypeReg, Size: 1}), wantErr: "twice"},
		{name: "too large is refused", data: tgz(t, tar.Header{Name: "big", Typeflag: tar.TypeReg, Size: MaxBytes + 1}), wantErr: "more than"},
		{name: "not gzip", data: []byte("plain"), wantErr: "not gzip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Unpack(tc.data)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for n := range got {
				names = append(names, n)
			}
			if !reflect.DeepEqual(names, tc.want) {
				t.Fatalf("got %v", names)
			}
		})
	}
}
