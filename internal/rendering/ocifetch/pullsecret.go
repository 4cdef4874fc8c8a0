package ocifetch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PullSecret is registry credentials kept in a Secret of type kubernetes.io/dockerconfigjson,
// the form `kubectl create secret docker-registry` writes and Flux's OCI sources take: the
// .dockerconfigjson key, its auths by registry host, each with auth (base64 user:password),
// username and password, or an identity token. The Secret is read through the API at each
// fetch that needs it (fetches are rare: artifacts are pinned by digest and cached), so a
// replaced Secret is used without a restart.
type PullSecret struct {
	Reader client.Reader
	Key    types.NamespacedName
}

// Credential returns the Secret's credentials for hostport (none when it holds none for it).
// Its errors never hold the Secret's content.
func (p *PullSecret) Credential(ctx context.Context, hostport string) (auth.Credential, error) {
	var s corev1.Secret
	if err := p.Reader.Get(ctx, p.Key, &s); err != nil {
		return auth.EmptyCredential, fmt.Errorf("reading the registry pull secret %s: %w", p.Key, err)
	}
	data, ok := s.Data[corev1.DockerConfigJsonKey]
	if !ok {
		return auth.EmptyCredential, fmt.Errorf("the registry pull secret %s has no %s key: create it with kubectl create secret docker-registry", p.Key, corev1.DockerConfigJsonKey)
	}
	store, err := credentials.NewMemoryStoreFromDockerConfig(data)
	if err != nil {
		return auth.EmptyCredential, fmt.Errorf("the registry pull secret %s does not hold a Docker config (auths by registry)", p.Key)
	}
	return credentials.Credential(store)(ctx, hostport)
}

// refused explains a registry's refusal (401 or 403, or a challenge for credentials the
// fetcher does not have): which registry, and with which credentials.
func (f *Fetcher) refused(repoRef string, err error) error {
	code := 0
	var resp *errcode.ErrorResponse
	switch {
	case errors.As(err, &resp) && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden):
		code = resp.StatusCode
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		code = http.StatusUnauthorized
	default:
		return err
	}
	with := "anonymously: no registry pull secret is configured (--oci-pull-secret)"
	if f.PullSecret != nil {
		with = "with the credentials of Secret " + f.PullSecret.Key.String()
	}
	host, _, _ := strings.Cut(repoRef, "/")
	return fmt.Errorf("the registry %s refused the pull (%d %s) %s: %w", host, code, http.StatusText(code), with, err)
}
