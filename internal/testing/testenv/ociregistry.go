package testenv

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	oras "oras.land/oras-go/v2"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// Registry is an OCI registry in the test's process (go-containerregistry's), over plain
// HTTP. With a User it is private: it refuses every request without that user's Password
// (HTTP basic authentication, as registries behind a login do), anonymous pulls included.
type Registry struct {
	Host, User, Password string
}

// StartRegistry starts a registry for the test; user "" makes it open.
func StartRegistry(t testing.TB, user, password string) *Registry {
	t.Helper()
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); user != "" && (!ok || u != user || p != password) {
			w.Header().Set("WWW-Authenticate", `Basic realm="test registry"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`))
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return &Registry{Host: strings.TrimPrefix(srv.URL, "http://"), User: user, Password: password}
}

// Push publishes an artifact of one layer (mediaType, data) to repository and returns its
// reference pinned by digest.
func (r *Registry) Push(t testing.TB, repository, artifactType, mediaType string, data []byte) string {
	t.Helper()
	ctx := context.Background()
	repo, err := remote.NewRepository(r.Host + "/" + repository)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	if r.User != "" {
		repo.Client = &auth.Client{Client: retry.DefaultClient, Credential: auth.StaticCredential(r.Host, auth.Credential{Username: r.User, Password: r.Password})}
	}
	layer, err := oras.PushBytes(ctx, repo, mediaType, data)
	if err != nil {
		t.Fatal(err)
	}
	m, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, artifactType, oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		t.Fatal(err)
	}
	return r.Host + "/" + repository + "@" + m.Digest.String()
}

// DockerConfig is a .dockerconfigjson (kubernetes.io/dockerconfigjson) holding the user and
// password given for the registry.
func (r *Registry) DockerConfig(user, password string) []byte {
	b, _ := json.Marshal(map[string]any{"auths": map[string]any{r.Host: map[string]string{
		"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + password)),
	}}})
	return b
}
