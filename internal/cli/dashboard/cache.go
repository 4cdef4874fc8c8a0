package dashboard

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// sharedCache holds, for every page and stream of the server, the project's kinds the user may
// list and watch across the whole scope: one watch per kind, however many pages are open and
// however often they render. A kind the user may not list everywhere in the scope is read from
// the API server and watched per page instead. It never holds a Secret.
type sharedCache struct {
	cache cache.Cache
	// scope is where the fleet looks: nil is every namespace.
	scope []string
	// resources are the plural resource names it holds.
	resources map[string]bool
	hub       hub
}

// cacheable are the kinds the shared cache may hold, by resource.
var cacheable = []struct {
	resource string
	obj      client.Object
}{
	{"workloads", &scorev1b1.Workload{}},
	{"workloadplans", &scorev1b1.WorkloadPlan{}},
	{"resourceclaims", &scorev1b1.ResourceClaim{}},
	{"workloadexposures", &scorev1b1.WorkloadExposure{}},
}

// syncTimeout bounds the wait for the shared cache's first lists.
const syncTimeout = time.Minute

// startCache decides the scope and the cached kinds with the user's rights and starts the cache.
func (s *Server) startCache(ctx context.Context, sch *runtime.Scheme) error {
	g := scorev1b1.GroupVersion.Group
	sc := &s.shared
	switch {
	case len(s.opts.Namespaces) > 0:
		sc.scope = s.opts.Namespaces
	case s.can(ctx, "list", g, "workloads", "", "") && s.can(ctx, "watch", g, "workloads", "", ""):
		sc.scope = nil
	default:
		sc.scope = []string{s.defaultNamespace()}
	}
	sc.resources = map[string]bool{}
	opts := cache.Options{Scheme: sch, ByObject: map[client.Object]cache.ByObject{}}
	if sc.scope != nil {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range sc.scope {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	var cached []client.Object
	for _, k := range cacheable {
		if s.mayWatchEverywhere(ctx, k.resource, sc.scope) {
			sc.resources[k.resource] = true
			cached = append(cached, k.obj)
		}
	}
	c, err := cache.New(s.opts.Config, opts)
	if err != nil {
		return fmt.Errorf("starting the dashboard's cache: %w", err)
	}
	sc.cache = c
	for _, obj := range cached {
		inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { sc.hub.notify(o) },
			UpdateFunc: func(_, o any) { sc.hub.notify(o) },
			DeleteFunc: func(o any) { sc.hub.notify(o) },
		}); err != nil {
			return err
		}
	}
	go func() { _ = c.Start(ctx) }()
	sctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !c.WaitForCacheSync(sctx) {
		return fmt.Errorf("the dashboard's cache did not fill within %s", syncTimeout)
	}
	return nil
}

func (s *Server) mayWatchEverywhere(ctx context.Context, resource string, scope []string) bool {
	g := scorev1b1.GroupVersion.Group
	if scope == nil {
		return s.can(ctx, "list", g, resource, "", "") && s.can(ctx, "watch", g, resource, "", "")
	}
	for _, ns := range scope {
		if !s.can(ctx, "list", g, resource, ns, "") || !s.can(ctx, "watch", g, resource, ns, "") {
			return false
		}
	}
	return true
}

// cached reports whether the shared cache holds resource in namespace ns.
func (sc *sharedCache) cached(resource, ns string) bool {
	return sc.resources[resource] && (sc.scope == nil || slices.Contains(sc.scope, ns))
}

// hub passes every change the shared cache sees to the streams that care.
type hub struct {
	mu   sync.Mutex
	subs map[*subscription]struct{}
}

// subscription is one stream's interest: changed is signalled (without blocking) for every
// object match accepts.
type subscription struct {
	match   func(client.Object) bool
	changed chan<- struct{}
}

func (h *hub) subscribe(s *subscription) (cancel func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[*subscription]struct{}{}
	}
	h.subs[s] = struct{}{}
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs, s)
	}
}

func (h *hub) notify(o any) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	obj, ok := o.(client.Object)
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if s.match(obj) {
			signal(s.changed)
		}
	}
}

// signal wakes a stream without blocking: one pending signal is enough.
func signal(changed chan<- struct{}) {
	select {
	case changed <- struct{}{}:
	default:
	}
}
