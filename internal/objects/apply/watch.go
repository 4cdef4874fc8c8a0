package apply

// The watches on applied kinds: the provisioner and the runtime apply objects of any kind
// their definitions and templates name, and watch each kind from its first apply, so health
// changes, drift and deletion reach them without polling.

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// SyncTimeout bounds the wait for a new kind's watch to deliver events. A kind the controller
// may read but not list or watch (a role that grants get only) would otherwise hold the pass
// forever; after the timeout the watch is dropped, the pass goes on reading from the API
// server, and the next pass that applies the kind tries again.
const SyncTimeout = 30 * time.Second

// Watcher adds one watch per kind to a running controller.
type Watcher struct {
	Controller controller.Controller
	Cache      cache.Cache
	// Handler maps an event on a watched object to requests of the controller.
	Handler handler.EventHandler
	// Synced, when set, makes Ensure return at once rather than wait for a new watch to
	// deliver events: a member cluster's watch, whose API server may not answer, and a worker
	// that serves every cluster must not wait on it. The wait goes on off the worker, bounded
	// by SyncTimeout, and Synced is called once the watch delivers events, so that the
	// controller brings back what it applied meanwhile (an event before then is lost). Until
	// then reads go to the API server, as for a kind not watched.
	Synced func(ctx context.Context)

	mu    sync.Mutex
	kinds map[schema.GroupVersionKind]*kindWatch
}

// kindWatch is one kind's watch: its own lock, so that waiting for one kind's watch holds up no
// other kind.
type kindWatch struct {
	mu     sync.Mutex
	synced atomic.Bool
	// syncing is set while a watch started in the background (Synced) has not delivered
	// events yet, so that no second watch of the kind is started meanwhile.
	syncing bool
}

// Ensure watches gvk, once, and returns when the watch delivers events (at once with Synced
// set). A failure is logged: the controller still works, it only learns of that kind's
// changes on its next pass.
func (w *Watcher) Ensure(ctx context.Context, gvk schema.GroupVersionKind) {
	if w == nil {
		return
	}
	k := w.kind(gvk, true)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.synced.Load() || k.syncing {
		return
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	src := source.Kind[client.Object](w.Cache, u, w.Handler)
	if err := w.Controller.Watch(src); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Watching applied objects", "kind", gvk.String())
		return
	}
	if w.Synced != nil {
		k.syncing = true
		go func() {
			// Not the pass's context, which ends with the pass; bounded all the same.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*SyncTimeout)
			defer cancel()
			synced := w.waitForSync(ctx, src, u)
			k.mu.Lock()
			k.syncing = false
			k.mu.Unlock()
			if synced {
				w.Synced(ctx)
			}
		}()
		return
	}
	// Return only once the handler receives events: an event before that is lost, so a
	// caller that watches before it applies sees every later change (a deletion right after
	// the first apply of a kind went unnoticed until something else woke the controller).
	w.waitForSync(ctx, src, u)
}

// waitForSync waits, at most SyncTimeout, for a new watch of u's kind to deliver events, and
// reports whether it does; when it does not, the watch is dropped.
func (w *Watcher) waitForSync(ctx context.Context, src source.SyncingSource, u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	wait, cancel := context.WithTimeout(ctx, SyncTimeout)
	defer cancel()
	if err := src.WaitForSync(wait); err != nil {
		// The source has stopped; removing the informer stops its retries, and the next
		// Ensure starts both again.
		ctrl.LoggerFrom(ctx).Error(err, "Waiting for the watch on applied objects", "kind", gvk.String())
		if err := w.Cache.RemoveInformer(ctx, u); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Removing the watch on applied objects", "kind", gvk.String())
		}
		return false
	}
	w.kind(gvk, true).synced.Store(true)
	return true
}

// Get reads an applied object into u (whose kind is set): from the watch's cache when its
// kind's watch delivers events and the cache holds it, otherwise from apiServer, whose answer
// (a refusal included) is the one to act on. A cached copy may be a moment old, which a
// level-triggered caller can live with: the watch brings any newer version back. An absence
// is never taken from the cache: an object another Workload or instance created a moment ago
// must not read as free to take.
func (w *Watcher) Get(ctx context.Context, apiServer client.Reader, key client.ObjectKey, u *unstructured.Unstructured) error {
	if w.watched(u.GroupVersionKind()) && w.Cache.Get(ctx, key, u) == nil {
		return nil
	}
	return apiServer.Get(ctx, key, u)
}

// Lookup reads an object from the watch's cache alone, its absence included: found says
// whether the cache holds it, and watched is false (nothing read) while the kind's watch does
// not deliver events. It is for objects that carry the cache's mark from their first write
// and whose writes carry their own precondition — a create that fails when the object
// exists, an update at the version read — so that a cache a moment behind makes the write
// fail instead of taking anything over. Applied objects are read with Get.
func (w *Watcher) Lookup(ctx context.Context, key client.ObjectKey, u *unstructured.Unstructured) (found, watched bool, err error) {
	if !w.watched(u.GroupVersionKind()) {
		return false, false, nil
	}
	switch err := w.Cache.Get(ctx, key, u); {
	case apierrors.IsNotFound(err):
		return false, true, nil
	case err != nil:
		return false, true, err
	}
	return true, true, nil
}

func (w *Watcher) watched(gvk schema.GroupVersionKind) bool {
	if w == nil {
		return false
	}
	k := w.kind(gvk, false)
	return k != nil && k.synced.Load()
}

// kind returns gvk's entry, made when add is set and it has none.
func (w *Watcher) kind(gvk schema.GroupVersionKind, add bool) *kindWatch {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.kinds[gvk] == nil && add {
		if w.kinds == nil {
			w.kinds = map[schema.GroupVersionKind]*kindWatch{}
		}
		w.kinds[gvk] = &kindWatch{}
	}
	return w.kinds[gvk]
}

// List lists objects of list's kind: from the watch's cache when the kind's watch delivers
// events, otherwise from apiServer.
func (w *Watcher) List(ctx context.Context, apiServer client.Reader, list *unstructured.UnstructuredList, opts ...client.ListOption) error {
	gvk := list.GroupVersionKind()
	item := schema.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: strings.TrimSuffix(gvk.Kind, "List")}
	if w.watched(item) {
		return w.Cache.List(ctx, list, opts...)
	}
	return apiServer.List(ctx, list, opts...)
}
