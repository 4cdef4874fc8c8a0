package configsource

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	oras "oras.land/oras-go/v2"
	"oras.land/oras-go/v2/registry/remote"

	"net/http/httptest"

	"github.com/score-orchestrator/score-orchestrator/internal/rendering/ocifetch"
)

func publish(t *testing.T, host string, doc []byte) string {
	t.Helper()
	ctx := context.Background()
	repo, err := remote.NewRepository(host + "/platform/orchestrator-config")
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	layer, err := oras.PushBytes(ctx, repo, ConfigLayerMediaType, doc)
	if err != nil {
		t.Fatal(err)
	}
	m, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, ConfigArtifactType, oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		t.Fatal(err)
	}
	return host + "/platform/orchestrator-config@" + m.Digest.String()
}

func TestOCISource(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	valid, err := os.ReadFile("../../../config/samples/orchestrator-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fetcher := &ocifetch.Fetcher{PlainHTTP: true, CacheDir: t.TempDir()}

	store := NewStore()
	changes := store.Subscribe()
	ref := publish(t, host, valid)
	if err := (&OCISource{Ref: ref, Fetcher: fetcher, Store: store}).Start(ctx); err != nil {
		t.Fatal(err)
	}
	loaded, ok := store.Get()
	if !ok || !strings.HasPrefix(loaded.Source, "oci/sha256:") || len(loaded.Config.Profiles) != 3 {
		t.Fatalf("loaded %+v", loaded)
	}
	select {
	case <-changes:
	default:
		t.Fatal("subscribers were not told")
	}

	t.Run("an invalid artifact never replaces the valid config", func(t *testing.T) {
		bad := publish(t, host, []byte("apiVersion: score.dev/v1b1\nkind: OrchestratorConfig\nprofiles: []\n"))
		if err := (&OCISource{Ref: bad, Fetcher: fetcher, Store: store}).Start(ctx); err != nil {
			t.Fatal(err)
		}
		if now, _ := store.Get(); now.Revision != loaded.Revision {
			t.Fatalf("replaced by %s", now.Revision)
		}
	})

	t.Run("an unreachable registry is retried until the context ends", func(t *testing.T) {
		short, stop := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer stop()
		empty := NewStore()
		src := &OCISource{Ref: "127.0.0.1:1/nothing@sha256:" + strings.Repeat("a", 64), Fetcher: &ocifetch.Fetcher{PlainHTTP: true}, Store: empty, MaxBackoff: 50 * time.Millisecond}
		if err := src.Start(short); err != nil {
			t.Fatal(err)
		}
		if _, ok := empty.Get(); ok {
			t.Fatal("nothing should be loaded")
		}
	})
}
