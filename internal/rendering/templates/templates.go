// Package templates is where backend templates and provisioners' charts come from: a
// ConfigMap (pinned by the sha256 of its content) or an OCI artifact (pinned by manifest
// digest). Content is verified against its digest before use and cached by it. The runtime
// reads backend templates through it, the provisioner helm:// charts, and scorectl the OCI
// layers of both.
package templates

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/archive"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/ocifetch"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/render"
)

// The media types of the layer that holds a template in an OCI artifact, by template kind.
const (
	// TemplateLayerMediaType is a manifests template's text.
	TemplateLayerMediaType = "application/vnd.score.dev.template.v1+yaml"
	// HelmChartLayerMediaType is a Helm chart archive, as helm push publishes it.
	HelmChartLayerMediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	// KustomizationLayerMediaType is a kustomization directory as a tar+gzip archive.
	KustomizationLayerMediaType = "application/vnd.score.dev.kustomization.v1.tar+gzip"
)

// LayerMediaType is the media type of the layer a template of kind is read from.
func LayerMediaType(kind scorev1b1.TemplateKind) string {
	switch kind {
	case scorev1b1.TemplateHelm:
		return HelmChartLayerMediaType
	case scorev1b1.TemplateKustomize:
		return KustomizationLayerMediaType
	default:
		return TemplateLayerMediaType
	}
}

// FromLayer is the template of kind held in an OCI layer's bytes (already verified).
func FromLayer(kind scorev1b1.TemplateKind, data []byte) (render.Template, error) {
	if kind != scorev1b1.TemplateKustomize {
		return render.Template{Data: data}, nil
	}
	files, err := archive.Unpack(data)
	if err != nil {
		return render.Template{}, fmt.Errorf("the kustomization archive: %w", err)
	}
	return render.Template{Files: files}, nil
}

// FromConfigMap is the template of kind held in a ConfigMap: the key's content (text or
// binary) for manifests and helm, every key as a file for kustomize (whose ref names no key).
func FromConfigMap(kind scorev1b1.TemplateKind, cm *corev1.ConfigMap, key string) (render.Template, error) {
	if kind == scorev1b1.TemplateKustomize {
		if key != "" {
			return render.Template{}, fmt.Errorf("a kustomize template is a whole ConfigMap: name no key in the ref")
		}
		files := map[string][]byte{}
		for k, v := range cm.Data {
			files[k] = []byte(v)
		}
		for k, v := range cm.BinaryData {
			files[k] = v
		}
		return render.Template{Files: files}, nil
	}
	if key == "" {
		keys := make([]string, 0, len(cm.Data)+len(cm.BinaryData))
		for k := range cm.Data {
			keys = append(keys, k)
		}
		for k := range cm.BinaryData {
			keys = append(keys, k)
		}
		if len(keys) != 1 {
			sort.Strings(keys)
			return render.Template{}, fmt.Errorf("the ConfigMap has %d keys; name one in the ref", len(keys))
		}
		key = keys[0]
	}
	if text, ok := cm.Data[key]; ok {
		return render.Template{Data: []byte(text)}, nil
	}
	if data, ok := cm.BinaryData[key]; ok {
		return render.Template{Data: data}, nil
	}
	return render.Template{}, fmt.Errorf("the ConfigMap has no key %s", key)
}

// ErrDigestMismatch is template content that does not match the digest its ref pins.
var ErrDigestMismatch = errors.New("the template does not match its digest")

var templateFetches = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "score_runtime_template_fetches_total",
	Help: "Template lookups by source and result: hit (from the digest cache), fetched, or failure.",
}, []string{"source", "result"})

func init() { metrics.Registry.MustRegister(templateFetches) }

// Source fetches backend templates by immutable ref and caches them by digest. Content
// is verified against the digest before it is used or cached; a digest once verified is
// served from the cache, so a source that becomes unreachable does not stop rendering.
type Source struct {
	// Reader reads ConfigMaps without the informer cache (templates are read once per digest).
	Reader client.Reader
	OCI    *ocifetch.Fetcher
	// Max bounds the number of cached templates (default 128), MaxBytes their total size
	// (default 64 MiB); the oldest go first.
	Max      int
	MaxBytes int

	mu    sync.Mutex
	cache map[string]render.Template
	order []string
	bytes int
}

// Get returns the template a plan references.
func (t *Source) Get(ctx context.Context, ref scorev1b1.TemplateRef) (render.Template, error) {
	// The kind is part of the key: the same bytes are another template as another kind.
	key := string(ref.Kind) + "@" + ref.Digest
	if ref.Digest != "" {
		if tpl, ok := t.cached(key); ok {
			templateFetches.WithLabelValues("cache", "hit").Inc()
			return tpl, nil
		}
	}
	parsed, err := orchconfig.ParseRef(ref.Ref)
	if err != nil {
		return render.Template{}, err
	}
	var tpl render.Template
	switch parsed.Scheme {
	case orchconfig.RefConfigMap:
		tpl, err = t.fromConfigMap(ctx, ref.Kind, parsed)
	case orchconfig.RefOCI:
		tpl, err = t.fromOCI(ctx, ref)
	}
	source := string(parsed.Scheme)
	if err != nil {
		templateFetches.WithLabelValues(source, "failure").Inc()
		return render.Template{}, err
	}
	// OCI content was verified by the fetcher, layer by digest up to the pinned manifest.
	if got := tpl.Digest(); ref.Digest != "" && parsed.Scheme == orchconfig.RefConfigMap && got != ref.Digest {
		templateFetches.WithLabelValues(source, "failure").Inc()
		return render.Template{}, fmt.Errorf("%w: %s has %s, the plan pins %s", ErrDigestMismatch, ref.Ref, got, ref.Digest)
	}
	templateFetches.WithLabelValues(source, "fetched").Inc()
	if ref.Digest != "" {
		t.store(key, tpl)
	}
	return tpl, nil
}

func (t *Source) fromConfigMap(ctx context.Context, kind scorev1b1.TemplateKind, r orchconfig.Ref) (render.Template, error) {
	cm := &corev1.ConfigMap{}
	if err := t.Reader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, cm); err != nil {
		return render.Template{}, fmt.Errorf("reading template ConfigMap %s/%s: %w", r.Namespace, r.Name, err)
	}
	tpl, err := FromConfigMap(kind, cm, r.Key)
	if err != nil {
		return render.Template{}, fmt.Errorf("template ConfigMap %s/%s: %w", r.Namespace, r.Name, err)
	}
	return tpl, nil
}

func (t *Source) fromOCI(ctx context.Context, ref scorev1b1.TemplateRef) (render.Template, error) {
	if t.OCI == nil {
		return render.Template{}, errors.New("no OCI fetcher is configured")
	}
	res, err := t.OCI.Fetch(ctx, ref.Ref, LayerMediaType(ref.Kind))
	if err != nil {
		return render.Template{}, err
	}
	return FromLayer(ref.Kind, res.Data)
}

func (t *Source) cached(key string) (render.Template, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tpl, ok := t.cache[key]
	return tpl, ok
}

func (t *Source) store(key string, tpl render.Template) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cache == nil {
		t.cache = map[string]render.Template{}
	}
	if _, ok := t.cache[key]; ok {
		return
	}
	maxEntries, maxBytes := t.Max, t.MaxBytes
	if maxEntries <= 0 {
		maxEntries = 128
	}
	if maxBytes <= 0 {
		maxBytes = 64 << 20
	}
	size := tpl.Size()
	if size > maxBytes {
		return // served, not kept: it would push out everything else
	}
	for len(t.order) > 0 && (len(t.order) >= maxEntries || t.bytes+size > maxBytes) {
		t.bytes -= t.cache[t.order[0]].Size()
		delete(t.cache, t.order[0])
		t.order = t.order[1:]
	}
	t.cache[key] = tpl
	t.order = append(t.order, key)
	t.bytes += size
}

// FromDir reads a template as kubectl create configmap --from-file would have put it in the
// ConfigMap its ref names: a configmap:// manifests template or chart from dir/<key>, a
// kustomization from the regular files of dir/<name>/. oci:// refs are fetched with oci.
// Content is verified against the ref's digest. scorectl render reads templates this way.
func FromDir(ctx context.Context, ref scorev1b1.TemplateRef, dir string, oci *ocifetch.Fetcher) (render.Template, error) {
	parsed, err := orchconfig.ParseRef(ref.Ref)
	if err != nil {
		return render.Template{}, err
	}
	if parsed.Scheme == orchconfig.RefOCI {
		r, err := oci.Fetch(ctx, ref.Ref, LayerMediaType(ref.Kind))
		if err != nil {
			return render.Template{}, err
		}
		return FromLayer(ref.Kind, r.Data)
	}
	local := parsed.Key
	if ref.Kind == scorev1b1.TemplateKustomize {
		local = parsed.Name
	}
	if dir == "" {
		return render.Template{}, fmt.Errorf("%s is a ConfigMap template: pass --templates DIR holding %s", ref.Ref, local)
	}
	path := filepath.Join(dir, local)
	var tpl render.Template
	if ref.Kind == scorev1b1.TemplateKustomize {
		tpl.Files, err = readFlatDir(path)
	} else {
		tpl.Data, err = os.ReadFile(path)
	}
	if err != nil {
		return render.Template{}, err
	}
	if got := tpl.Digest(); ref.Digest != "" && got != ref.Digest {
		return render.Template{}, fmt.Errorf("%w: %s is %s, the config pins %s", ErrDigestMismatch, path, got, ref.Digest)
	}
	return tpl, nil
}

// readFlatDir reads a directory's regular files, not its subdirectories: what
// kubectl create configmap --from-file=DIR puts in a ConfigMap.
func readFlatDir(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if files[e.Name()], err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
			return nil, err
		}
	}
	return files, nil
}
