// Package ownwrites lets a reconciler recognise a cached object older than its own last
// write. After a status patch the informer's copy lags until the watch delivers the write; a
// reconcile started in between (another object's event) would decide from the old status,
// write the same status again and log the same transition twice. The event of the write is
// on its way and brings the object back, so such a pass can stop at once.
package ownwrites

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Tracker remembers, per object, the resourceVersion its last write replaced.
type Tracker struct {
	mu       sync.Mutex
	replaced map[types.UID]string
}

// Wrote records that a write replaced the object at resourceVersion replaced.
func (t *Tracker) Wrote(uid types.UID, replaced string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.replaced == nil {
		t.replaced = map[types.UID]string{}
	}
	t.replaced[uid] = replaced
}

// Stale says whether obj is the version a write of ours replaced: the cache has not caught
// up with that write yet. Any other version means it has, and the record is dropped.
func (t *Tracker) Stale(obj client.Object) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	rv, ok := t.replaced[obj.GetUID()]
	if !ok {
		return false
	}
	if rv == obj.GetResourceVersion() {
		return true
	}
	delete(t.replaced, obj.GetUID())
	return false
}

// Forget drops an object that is gone.
func (t *Tracker) Forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.replaced, uid)
}
