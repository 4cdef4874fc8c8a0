package ocifetch

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	oras "oras.land/oras-go/v2"
	"oras.land/oras-go/v2/registry/remote"
)

const (
	artifactType = "application/vnd.score.dev.test.v1"
	layerType    = "application/vnd.score.dev.test.v1+yaml"
)

// push publishes an artifact with one layer to the in-process registry and returns its
// pinned reference.
func push(t *testing.T, host, repoName string, data []byte) string {
	t.Helper()
	ctx := context.Background()
	repo, err := remote.NewRepository(host + "/" + repoName)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	layer, err := oras.PushBytes(ctx, repo, layerType, data)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, artifactType, oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		t.Fatal(err)
	}
	return host + "/" + repoName + "@" + manifest.Digest.String()
}

func TestFetch(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ref := push(t, host, "platform/config", []byte("apiVersion: score.dev/v1b1\n"))
	cache := t.TempDir()
	f := &Fetcher{CacheDir: cache, PlainHTTP: true}
	ctx := context.Background()

	t.Run("fetches and verifies", func(t *testing.T) {
		r, err := f.Fetch(ctx, "oci://"+ref, layerType)
		if err != nil {
			t.Fatal(err)
		}
		if string(r.Data) != "apiVersion: score.dev/v1b1\n" || r.FromCache {
			t.Fatalf("got %+v", r)
		}
	})
	t.Run("an unknown digest fails", func(t *testing.T) {
		other := host + "/platform/config@sha256:" + strings.Repeat("0", 64)
		if _, err := f.Fetch(ctx, other, layerType); err == nil {
			t.Fatal("want an error")
		}
	})
	t.Run("a missing media type fails", func(t *testing.T) {
		if _, err := f.Fetch(ctx, ref, "application/other"); err == nil || !strings.Contains(err.Error(), "no layer of media type") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a mutable ref is refused", func(t *testing.T) {
		if _, err := f.Fetch(ctx, host+"/platform/config:latest", layerType); err == nil || !strings.Contains(err.Error(), "not pinned by digest") {
			t.Fatalf("got %v", err)
		}
	})

	srv.Close()
	t.Run("the cache answers when the registry is gone", func(t *testing.T) {
		r, err := f.Fetch(ctx, ref, layerType)
		if err != nil {
			t.Fatal(err)
		}
		if !r.FromCache || r.FetchErr == nil || string(r.Data) != "apiVersion: score.dev/v1b1\n" {
			t.Fatalf("got %+v", r)
		}
	})
	t.Run("a tampered cache is not trusted", func(t *testing.T) {
		blobs, _ := filepath.Glob(filepath.Join(cache, "blobs", "*"))
		if err := os.WriteFile(blobs[0], []byte("apiVersion: evil\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Fetch(ctx, ref, layerType); err == nil {
			t.Fatal("want an error")
		}
	})
}

// A registry that answers with other bytes than the digest names is a hard failure, and the
// verified cached copy stays.
func TestLyingRegistry(t *testing.T) {
	reg := registry.New()
	lie := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lie && strings.Contains(r.URL.Path, "/blobs/") && r.Method == http.MethodGet {
			rec := httptest.NewRecorder()
			reg.ServeHTTP(rec, r)
			body := bytes.ReplaceAll(rec.Body.Bytes(), []byte("good"), []byte("evil"))
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = io.Copy(w, bytes.NewReader(body))
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ref := push(t, host, "platform/config", []byte("value: good\n"))
	cache := t.TempDir()
	f := &Fetcher{CacheDir: cache, PlainHTTP: true}
	ctx := context.Background()
	if _, err := f.Fetch(ctx, ref, layerType); err != nil {
		t.Fatal(err)
	}
	lie = true
	_, err := f.Fetch(ctx, ref, layerType)
	if !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("want a digest mismatch, got %v", err)
	}
	got, err := f.fromCache(mustDigest(t, ref), layerType)
	if err != nil || string(got) != "value: good\n" {
		t.Fatalf("the verified copy must stay: %q %v", got, err)
	}
}

func mustDigest(t *testing.T, ref string) digest.Digest {
	t.Helper()
	_, dg, err := splitRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	return dg
}
