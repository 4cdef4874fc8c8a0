package plan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/ocifetch"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
)

// TemplateLayerMediaType is the media type of a manifests template published as an OCI
// artifact.
const TemplateLayerMediaType = "application/vnd.score.dev.template.v1+yaml"

// ErrDigestMismatch is template content that does not match the digest its ref pins.
var ErrDigestMismatch = errors.New("the template does not match its digest")

var templateFetches = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "score_runtime_template_fetches_total",
	Help: "Template lookups by source and result: hit (from the digest cache), fetched, or failure.",
}, []string{"source", "result"})

func init() { metrics.Registry.MustRegister(templateFetches) }

// Templates fetches backend templates by immutable ref and caches them by digest. Content
// is verified against the digest before it is used or cached; a digest once verified is
// served from the cache, so a source that becomes unreachable does not stop rendering.
type Templates struct {
	// Reader reads ConfigMaps without the informer cache (templates are read once per digest).
	Reader client.Reader
	OCI    *ocifetch.Fetcher
	// Max bounds the number of cached templates (default 128).
	Max int

	mu    sync.Mutex
	cache map[string]string
	order []string
}

// Get returns the template a plan references.
func (t *Templates) Get(ctx context.Context, ref scorev1b1.TemplateRef) (string, error) {
	if ref.Digest != "" {
		if text, ok := t.cached(ref.Digest); ok {
			templateFetches.WithLabelValues("cache", "hit").Inc()
			return text, nil
		}
	}
	parsed, err := orchconfig.ParseRef(ref.Ref)
	if err != nil {
		return "", err
	}
	var text string
	switch parsed.Scheme {
	case orchconfig.RefConfigMap:
		text, err = t.fromConfigMap(ctx, parsed)
	case orchconfig.RefOCI:
		text, err = t.fromOCI(ctx, ref)
	}
	source := string(parsed.Scheme)
	if err != nil {
		templateFetches.WithLabelValues(source, "failure").Inc()
		return "", err
	}
	if ref.Digest != "" && digestOf(text) != ref.Digest && parsed.Scheme == orchconfig.RefConfigMap {
		templateFetches.WithLabelValues(source, "failure").Inc()
		return "", fmt.Errorf("%w: %s has %s, the plan pins %s", ErrDigestMismatch, ref.Ref, digestOf(text), ref.Digest)
	}
	templateFetches.WithLabelValues(source, "fetched").Inc()
	if ref.Digest != "" {
		t.store(ref.Digest, text)
	}
	return text, nil
}

func (t *Templates) fromConfigMap(ctx context.Context, r orchconfig.Ref) (string, error) {
	cm := &corev1.ConfigMap{}
	if err := t.Reader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, cm); err != nil {
		return "", fmt.Errorf("reading template ConfigMap %s/%s: %w", r.Namespace, r.Name, err)
	}
	key := r.Key
	if key == "" {
		if len(cm.Data) != 1 {
			return "", fmt.Errorf("template ConfigMap %s/%s has %d keys; name one in the ref", r.Namespace, r.Name, len(cm.Data))
		}
		for k := range cm.Data {
			key = k
		}
	}
	text, ok := cm.Data[key]
	if !ok {
		return "", fmt.Errorf("template ConfigMap %s/%s has no key %s", r.Namespace, r.Name, key)
	}
	return text, nil
}

func (t *Templates) fromOCI(ctx context.Context, ref scorev1b1.TemplateRef) (string, error) {
	if t.OCI == nil {
		return "", errors.New("no OCI fetcher is configured")
	}
	res, err := t.OCI.Fetch(ctx, ref.Ref, TemplateLayerMediaType)
	if err != nil {
		return "", err
	}
	return string(res.Data), nil
}

func (t *Templates) cached(digest string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	text, ok := t.cache[digest]
	return text, ok
}

func (t *Templates) store(digest, text string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cache == nil {
		t.cache = map[string]string{}
	}
	if _, ok := t.cache[digest]; ok {
		return
	}
	max := t.Max
	if max <= 0 {
		max = 128
	}
	for len(t.order) >= max {
		delete(t.cache, t.order[0])
		t.order = t.order[1:]
	}
	t.cache[digest] = text
	t.order = append(t.order, digest)
}

// digestOf is the sha256 digest of a template's content, as configmap refs pin it.
func digestOf(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "sha256:" + hex.EncodeToString(sum[:])
}
