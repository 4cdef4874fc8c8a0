package orchconfig

import (
	"fmt"
	"regexp"
	"strings"
)

// RefScheme is how a template ref is fetched.
type RefScheme string

// The template ref schemes.
const (
	RefOCI       RefScheme = "oci"
	RefConfigMap RefScheme = "configmap"
)

// Ref is a parsed template reference.
type Ref struct {
	Scheme RefScheme
	// Repository is the OCI repository (registry host and path) for oci refs.
	Repository string
	// Tag is the OCI tag, if any.
	Tag string
	// Namespace, Name and Key locate a ConfigMap for configmap refs.
	Namespace, Name, Key string
	// Digest is "sha256:<hex>" when the ref pins one.
	Digest string
}

var (
	digestPattern   = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
	ociRepoPattern  = regexp.MustCompile(`^[a-zA-Z0-9.-]+(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+$`)
	ociTagPattern   = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)
	dnsLabel        = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dnsSubdomain    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	configMapKeyPat = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
)

// ParseRef parses oci://<registry>/<repository>[:tag][@sha256:<hex>] and
// configmap://<namespace>/<name>[/<key>].
func ParseRef(s string) (Ref, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return Ref{}, fmt.Errorf("must start with oci:// or configmap://")
	}
	switch RefScheme(scheme) {
	case RefOCI:
		return parseOCIRef(rest)
	case RefConfigMap:
		return parseConfigMapRef(rest)
	default:
		return Ref{}, fmt.Errorf("unknown scheme %q: must be oci or configmap", scheme)
	}
}

func parseOCIRef(rest string) (Ref, error) {
	r := Ref{Scheme: RefOCI}
	if repo, digest, ok := strings.Cut(rest, "@"); ok {
		if !digestPattern.MatchString(digest) {
			return Ref{}, fmt.Errorf("digest %q must be sha256: followed by 64 lower-case hex digits", digest)
		}
		r.Digest, rest = digest, repo
	}
	// A tag follows the last ':' after the last '/'; a ':' before it is a registry port.
	if i := strings.LastIndex(rest, ":"); i > strings.LastIndex(rest, "/") {
		r.Tag, rest = rest[i+1:], rest[:i]
		if !ociTagPattern.MatchString(r.Tag) {
			return Ref{}, fmt.Errorf("tag %q is not a valid OCI tag", r.Tag)
		}
	}
	if !ociRepoPattern.MatchString(rest) {
		return Ref{}, fmt.Errorf("repository %q must be <registry>/<path> in lower case", rest)
	}
	r.Repository = rest
	return r, nil
}

func parseConfigMapRef(rest string) (Ref, error) {
	parts := strings.Split(rest, "/")
	if len(parts) < 2 || len(parts) > 3 {
		return Ref{}, fmt.Errorf("must be configmap://<namespace>/<name> or configmap://<namespace>/<name>/<key>")
	}
	r := Ref{Scheme: RefConfigMap, Namespace: parts[0], Name: parts[1]}
	if !dnsLabel.MatchString(r.Namespace) || len(r.Namespace) > 63 {
		return Ref{}, fmt.Errorf("namespace %q is not a valid namespace name", r.Namespace)
	}
	if !dnsSubdomain.MatchString(r.Name) || len(r.Name) > 253 {
		return Ref{}, fmt.Errorf("name %q is not a valid ConfigMap name", r.Name)
	}
	if len(parts) == 3 {
		r.Key = parts[2]
		if !configMapKeyPat.MatchString(r.Key) {
			return Ref{}, fmt.Errorf("key %q is not a valid ConfigMap key", r.Key)
		}
	}
	return r, nil
}
