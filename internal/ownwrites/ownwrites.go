// Package ownwrites lets a reconciler recognise a cached object older than its own last
// write. After a write the informer's copy lags until the watch delivers it; a reconcile
// started in between (another object's event) would decide from the old copy, write the same
// status again and log the same transition twice.
package ownwrites

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Tracker remembers, per object, the resourceVersions its own writes replaced since the cache
// last caught up. Several, not only the last: a pass that read a stale copy may write over
// the stale version, and the cache may next show the version in between.
type Tracker struct {
	mu   sync.Mutex
	objs map[types.UID]*versions
}

type versions struct {
	produced   string
	superseded map[string]bool
}

// Wrote records a write that replaced the version replaced and produced the version produced.
func (t *Tracker) Wrote(uid types.UID, replaced, produced string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.objs == nil {
		t.objs = map[types.UID]*versions{}
	}
	v, ok := t.objs[uid]
	if !ok {
		v = &versions{superseded: map[string]bool{}}
		t.objs[uid] = v
	}
	for _, old := range []string{replaced, v.produced} {
		if old != "" {
			v.superseded[old] = true
		}
	}
	v.produced = produced
}

// Behind says whether version is one our writes replaced: the cache has not caught up with
// them yet. Any other version means it has, and the record is dropped.
func (t *Tracker) Behind(uid types.UID, version string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.objs[uid]
	if !ok {
		return false
	}
	if v.superseded[version] {
		return true
	}
	delete(t.objs, uid)
	return false
}

// Stale is Behind for a cached object.
func (t *Tracker) Stale(obj client.Object) bool {
	return t.Behind(obj.GetUID(), obj.GetResourceVersion())
}

// Forget drops an object that is gone.
func (t *Tracker) Forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.objs, uid)
}
