package apply

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// silentCache is the cache of a member that does not answer until release is closed.
type silentCache struct {
	cache.Cache
	release chan struct{}
}

func (c *silentCache) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return informer{}, nil
}

func (c *silentCache) WaitForCacheSync(ctx context.Context) bool {
	select {
	case <-c.release:
		return true
	case <-ctx.Done():
		return false
	}
}

type informer struct{ cache.Informer }

func (informer) AddEventHandlerWithOptions(toolscache.ResourceEventHandler, toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return registration{}, nil
}

type registration struct {
	toolscache.ResourceEventHandlerRegistration
}

func (registration) HasSynced() bool { return true }

// startingController starts every source it is given to watch, and counts them.
type startingController struct {
	controller.Controller
	watches int
}

func (c *startingController) Watch(src source.Source) error {
	c.watches++
	return src.Start(context.Background(), nil)
}

// With Synced set (a member's watcher), Ensure returns while the new watch has not synced,
// without holding the worker; reads go to the API server meanwhile, no second watch of the
// kind is started, and Synced is called once it delivers events.
func TestEnsureWithSyncedDoesNotWaitForTheWatch(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	silent := &silentCache{release: make(chan struct{})}
	ctl := &startingController{}
	synced := make(chan struct{}, 1)
	w := &Watcher{Controller: ctl, Cache: silent, Handler: &handler.EnqueueRequestForObject{}, Synced: func(context.Context) { synced <- struct{}{} }}

	w.Ensure(context.Background(), gvk) // returns: the member has not answered
	w.Ensure(context.Background(), gvk)
	if w.watched(gvk) || ctl.watches != 1 {
		t.Fatalf("before the watch synced: watched %v, %d watches started", w.watched(gvk), ctl.watches)
	}
	select {
	case <-synced:
		t.Fatal("Synced called before the watch synced")
	default:
	}

	close(silent.release)
	select {
	case <-synced:
	case <-time.After(SyncTimeout):
		t.Fatal("Synced not called once the watch synced")
	}
	if !w.watched(gvk) {
		t.Fatal("the kind is not read from the cache once its watch synced")
	}
	w.Ensure(context.Background(), gvk)
	if ctl.watches != 1 {
		t.Fatalf("%d watches of one kind", ctl.watches)
	}
}
