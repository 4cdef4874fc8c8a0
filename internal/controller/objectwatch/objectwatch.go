// Package objectwatch starts watches on kinds a controller learns about as it runs: the
// provisioner and the runtime apply objects of any kind their definitions and templates
// name, and watch each kind from its first apply, so health changes, drift and deletion reach
// them without polling.
package objectwatch

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Watcher adds one watch per kind to a running controller.
type Watcher struct {
	Controller controller.Controller
	Cache      cache.Cache
	// Handler maps an event on a watched object to requests of the controller.
	Handler handler.EventHandler

	mu       sync.Mutex
	watching map[schema.GroupVersionKind]bool
}

// Ensure watches gvk, once, and returns when the watch delivers events. A failure is logged:
// the controller still works, it only learns of that kind's changes on its next pass.
func (w *Watcher) Ensure(ctx context.Context, gvk schema.GroupVersionKind) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watching[gvk] {
		return
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	src := source.Kind[client.Object](w.Cache, u, w.Handler)
	if err := w.Controller.Watch(src); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Watching applied objects", "kind", gvk.String())
		return
	}
	if w.watching == nil {
		w.watching = map[schema.GroupVersionKind]bool{}
	}
	w.watching[gvk] = true
	// Return only once the handler receives events: an event before that is lost, so a
	// caller that watches before it applies sees every later change (a deletion right after
	// the first apply of a kind went unnoticed until something else woke the controller).
	if err := src.WaitForSync(ctx); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Waiting for the watch on applied objects", "kind", gvk.String())
	}
}

// Get reads an applied object into u (whose kind is set): from the watch's cache when its kind
// is watched and the cache holds it, otherwise from apiServer. A cached copy may be a moment
// old, which a level-triggered caller can live with: the watch brings any newer version back.
// An absence is never taken from the cache: an object another Workload or instance created a
// moment ago must not read as free to take.
func (w *Watcher) Get(ctx context.Context, apiServer client.Reader, key client.ObjectKey, u *unstructured.Unstructured) error {
	if w.watched(u.GroupVersionKind()) && w.Cache.Get(ctx, key, u) == nil {
		return nil
	}
	return apiServer.Get(ctx, key, u)
}

func (w *Watcher) watched(gvk schema.GroupVersionKind) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.watching[gvk]
}
