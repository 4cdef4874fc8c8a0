// Package ocifetch fetches one layer of an OCI artifact pinned by digest, verifies it, and
// caches it on disk by digest. A fetch failure with a cached copy still succeeds; a digest
// mismatch is a hard failure and never replaces the cached copy. The Orchestrator Config's
// OCI source and the runtime's template source use it.
package ocifetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// ErrDigestMismatch is content that does not match the digest it was asked for.
var ErrDigestMismatch = errors.New("content does not match its digest")

// Fetcher fetches artifact layers.
type Fetcher struct {
	// CacheDir holds verified manifests and blobs by digest; empty disables the disk cache.
	CacheDir string
	// PlainHTTP reaches registries over HTTP instead of HTTPS (local development, tests).
	PlainHTTP bool
	// MaxBytes bounds a manifest or layer (default 4 MiB).
	MaxBytes int64
	// PullSecret, when set, holds the registries' credentials; without it registries are
	// reached anonymously.
	PullSecret *PullSecret
}

// Result is a fetched layer.
type Result struct {
	Data []byte
	// Digest is the manifest digest the artifact was pinned by.
	Digest string
	// FromCache is true when the registry could not be reached and the cache answered.
	FromCache bool
	// FetchErr is the registry error that the cache covered, if any.
	FetchErr error
}

// Fetch returns the first layer of mediaType in the artifact ref
// ("<registry>/<repository>@sha256:<hex>", optionally with a tag before the digest).
func (f *Fetcher) Fetch(ctx context.Context, ref, mediaType string) (Result, error) {
	repoRef, dgst, err := splitRef(ref)
	if err != nil {
		return Result{}, err
	}
	data, fetchErr := f.fetchRemote(ctx, repoRef, dgst, mediaType)
	if fetchErr == nil {
		return Result{Data: data, Digest: dgst.String()}, nil
	}
	if errors.Is(fetchErr, ErrDigestMismatch) {
		return Result{}, fetchErr
	}
	if cached, err := f.fromCache(dgst, mediaType); err == nil {
		return Result{Data: cached, Digest: dgst.String(), FromCache: true, FetchErr: fetchErr}, nil
	}
	return Result{}, fetchErr
}

func splitRef(ref string) (string, digest.Digest, error) {
	repo, d, ok := strings.Cut(strings.TrimPrefix(ref, "oci://"), "@")
	if !ok {
		return "", "", fmt.Errorf("%q is not pinned by digest", ref)
	}
	dgst, err := digest.Parse(d)
	if err != nil || dgst.Algorithm() != digest.SHA256 {
		return "", "", fmt.Errorf("%q: the digest must be sha256:<64 hex>", ref)
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i] // a tag beside a digest is informative only
	}
	return repo, dgst, nil
}

func (f *Fetcher) maxBytes() int64 {
	if f.MaxBytes > 0 {
		return f.MaxBytes
	}
	return 4 << 20
}

func (f *Fetcher) fetchRemote(ctx context.Context, repoRef string, dgst digest.Digest, mediaType string) ([]byte, error) {
	repo, err := remote.NewRepository(repoRef)
	if err != nil {
		return nil, fmt.Errorf("repository %q: %w", repoRef, err)
	}
	repo.PlainHTTP = f.PlainHTTP
	if f.PullSecret != nil {
		repo.Client = &auth.Client{Client: retry.DefaultClient, Cache: auth.NewCache(), Credential: f.PullSecret.Credential}
	}
	manifestDesc, err := repo.Resolve(ctx, dgst.String())
	if err != nil {
		return nil, fmt.Errorf("resolving %s@%s: %w", repoRef, dgst, f.refused(repoRef, err))
	}
	if manifestDesc.Digest != dgst {
		return nil, fmt.Errorf("%w: asked for %s, the registry answered %s", ErrDigestMismatch, dgst, manifestDesc.Digest)
	}
	if manifestDesc.Size > f.maxBytes() {
		return nil, fmt.Errorf("the manifest is %d bytes, more than %d", manifestDesc.Size, f.maxBytes())
	}
	manifestBytes, err := fetchVerified(ctx, repo, manifestDesc)
	if err != nil {
		return nil, fmt.Errorf("fetching the manifest: %w", f.refused(repoRef, err))
	}
	layer, err := findLayer(manifestBytes, mediaType)
	if err != nil {
		return nil, err
	}
	if layer.Size > f.maxBytes() {
		return nil, fmt.Errorf("the layer is %d bytes, more than %d", layer.Size, f.maxBytes())
	}
	data, err := fetchVerified(ctx, repo.Blobs(), layer)
	if err != nil {
		return nil, fmt.Errorf("fetching the layer: %w", f.refused(repoRef, err))
	}
	f.store(dgst, manifestBytes, layer.Digest, data)
	return data, nil
}

// fetchVerified reads content and checks its size and digest against the descriptor.
func fetchVerified(ctx context.Context, f content.Fetcher, desc ocispec.Descriptor) ([]byte, error) {
	rc, err := f.Fetch(ctx, desc)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := content.ReadAll(rc, desc)
	if err != nil {
		if errors.Is(err, content.ErrMismatchedDigest) || errors.Is(err, content.ErrTrailingData) {
			return nil, fmt.Errorf("%w: %v", ErrDigestMismatch, err)
		}
		return nil, err
	}
	return data, nil
}

func findLayer(manifestBytes []byte, mediaType string) (ocispec.Descriptor, error) {
	var m ocispec.Manifest
	if err := json.Unmarshal(manifestBytes, &m); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("the manifest is not an OCI image manifest: %w", err)
	}
	for _, l := range m.Layers {
		if l.MediaType == mediaType {
			return l, nil
		}
	}
	return ocispec.Descriptor{}, fmt.Errorf("the artifact has no layer of media type %s", mediaType)
}

// The disk cache: manifests/<hex> and blobs/<hex>, each verified again when read.

func (f *Fetcher) store(manifest digest.Digest, manifestBytes []byte, layer digest.Digest, data []byte) {
	if f.CacheDir == "" {
		return
	}
	_ = writeAtomic(filepath.Join(f.CacheDir, "manifests", manifest.Encoded()), manifestBytes)
	_ = writeAtomic(filepath.Join(f.CacheDir, "blobs", layer.Encoded()), data)
}

func (f *Fetcher) fromCache(manifest digest.Digest, mediaType string) ([]byte, error) {
	if f.CacheDir == "" {
		return nil, errors.New("no cache")
	}
	manifestBytes, err := readVerified(filepath.Join(f.CacheDir, "manifests", manifest.Encoded()), manifest)
	if err != nil {
		return nil, err
	}
	layer, err := findLayer(manifestBytes, mediaType)
	if err != nil {
		return nil, err
	}
	return readVerified(filepath.Join(f.CacheDir, "blobs", layer.Digest.Encoded()), layer.Digest)
}

func readVerified(path string, want digest.Digest) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	if "sha256:"+hex.EncodeToString(sum[:]) != want.String() {
		return nil, fmt.Errorf("%w: cached %s", ErrDigestMismatch, path)
	}
	return data, nil
}

func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
