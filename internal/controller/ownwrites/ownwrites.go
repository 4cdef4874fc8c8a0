// Package ownwrites lets a reconciler recognise a cached object older than its own last
// write. After a write the informer's copy lags until the watch delivers it; a reconcile
// started in between (another object's event) would decide from the old copy, write the same
// status again and log the same transition twice.
//
// A record steers a decision (skip this pass), so it never outlives its use: it is dropped
// when the cache shows a version the writes did not replace, when the object is gone
// (Forget), and at the latest MaxAge after the last write, whatever the cache shows.
package ownwrites

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MaxAge bounds how long a record is trusted: a watch delivers a write's event within
// seconds, so a cache still behind after a minute is not behind our write.
const MaxAge = time.Minute

// Tracker remembers, per object, the resourceVersions its own writes replaced since the cache
// last caught up. Several, not only the last: a pass that read a stale copy may write over
// the stale version, and the cache may next show the version in between.
type Tracker struct {
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	mu   sync.Mutex
	objs map[types.UID]*versions
	// swept is when records older than MaxAge were last dropped: those of objects deleted
	// without a Forget are never looked up again.
	swept time.Time
}

type versions struct {
	produced   string
	superseded map[string]bool
	at         time.Time
}

func (t *Tracker) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
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
	now := t.now()
	v.produced, v.at = produced, now
	if now.Sub(t.swept) >= MaxAge {
		for uid, rec := range t.objs {
			if now.Sub(rec.at) >= MaxAge {
				delete(t.objs, uid)
			}
		}
		t.swept = now
	}
}

// Behind says whether version is one our writes replaced: the cache has not caught up with
// them yet. Any other version means it has, and the record is dropped; so is a record older
// than MaxAge.
func (t *Tracker) Behind(uid types.UID, version string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.objs[uid]
	if !ok {
		return false
	}
	if v.superseded[version] && t.now().Sub(v.at) < MaxAge {
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
