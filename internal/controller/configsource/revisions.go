package configsource

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LabelRevision marks the ConfigMaps that keep admitted revisions.
const LabelRevision = "score.dev/config-revision"

// RevisionKey is the data key of a kept revision's document.
const RevisionKey = "config.yaml"

// Revisions keeps admitted revisions across restarts, each in a ConfigMap of the control
// plane's namespace named after its digest, so that a Workload can stay rendered from an
// earlier revision (a rollout's) after the process that admitted it is gone. The orchestrator
// writes them; it reads them back when its store no longer holds one.
type Revisions struct {
	Client    client.Client
	APIReader client.Reader
	Namespace string
	Store     *Store

	mu     sync.Mutex
	loaded map[string]*Loaded
	saved  map[string]bool
}

// RevisionConfigMap names the ConfigMap of a revision.
func RevisionConfigMap(revision string) string {
	return "score-config-" + short(revision)
}

func short(revision string) string {
	h := strings.TrimPrefix(revision, "sha256:")
	return h[:min(12, len(h))]
}

// Get returns an admitted revision: from the store, or read back from its ConfigMap.
func (r *Revisions) Get(ctx context.Context, revision string) (*Loaded, error) {
	if l, ok := r.Store.Revision(revision); ok {
		return l, nil
	}
	r.mu.Lock()
	l := r.loaded[revision]
	r.mu.Unlock()
	if l != nil {
		return l, nil
	}
	cm := &corev1.ConfigMap{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: RevisionConfigMap(revision)}, cm); err != nil {
		return nil, fmt.Errorf("revision %s is not kept: %w", revision, err)
	}
	l, err := Load("revision", []byte(cm.Data[RevisionKey]))
	if err != nil {
		return nil, fmt.Errorf("revision %s does not load: %w", revision, err)
	}
	if l.Revision != revision {
		return nil, fmt.Errorf("the ConfigMap %s holds revision %s, not %s", cm.Name, l.Revision, revision)
	}
	r.mu.Lock()
	if r.loaded == nil {
		r.loaded = map[string]*Loaded{}
	}
	r.loaded[revision] = l
	r.mu.Unlock()
	return l, nil
}

// Save keeps a revision in its ConfigMap (once: an existing one is left as it is).
func (r *Revisions) Save(ctx context.Context, l *Loaded) error {
	r.mu.Lock()
	done := r.saved[l.Revision]
	r.mu.Unlock()
	if done {
		return nil
	}
	// Read first: a restart finds its revisions kept, and writes nothing.
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: RevisionConfigMap(l.Revision)}, &corev1.ConfigMap{})
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: RevisionConfigMap(l.Revision),
		Labels:      map[string]string{LabelRevision: short(l.Revision)},
		Annotations: map[string]string{LabelRevision: l.Revision}},
		Data: map[string]string{RevisionKey: string(l.Document)}}
	if apierrors.IsNotFound(err) {
		if err := r.Client.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("keeping revision %s: %w", l.Revision, err)
		}
	}
	r.mu.Lock()
	if r.saved == nil {
		r.saved = map[string]bool{}
	}
	r.saved[l.Revision] = true
	r.mu.Unlock()
	return nil
}

// Prune deletes the kept revisions beyond the newest KeptRevisions that no one still uses:
// inUse are the revisions plans are rendered from and rollouts name.
func (r *Revisions) Prune(ctx context.Context, inUse map[string]bool) error {
	var list corev1.ConfigMapList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(r.Namespace), client.HasLabels{LabelRevision}); err != nil {
		return err
	}
	slices.SortFunc(list.Items, func(a, b corev1.ConfigMap) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	for i, cm := range list.Items {
		if i < KeptRevisions || inUse[cm.Annotations[LabelRevision]] {
			continue
		}
		if err := r.Client.Delete(ctx, &list.Items[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}
