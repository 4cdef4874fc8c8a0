package provisioner

// A claim refused for an object it would create that no instance made (a tenant's, under the
// name of one of the instance's objects: apply.OwnedElsewhere) is Failed until that object is
// deleted. The provisioned objects' cache selects the instance label, which such an object does
// not carry, so its deletion reaches no watch of the controller: the refusals watch each such
// object by its name, metadata only, and bring its claims back when it goes.

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/apply"
)

// refusedObject names an object a claim was refused for.
type refusedObject struct {
	kind            schema.GroupKind
	namespace, name string
}

// refusals are the objects claims on the hub are refused for, each watched (its metadata only,
// selected by its name) until it is deleted, which brings its claims back. There is at most
// one watch per refused object, and one refused object per claim: a claim's next pass that is
// not refused for it (or its deletion) takes it off, and the watch ends with its last claim.
type refusals struct {
	md     metadata.Interface
	mapper meta.RESTMapper
	// wake brings a claim back.
	wake chan<- event.GenericEvent
	// base outlives the passes: the manager's, once started.
	base context.Context

	mu      sync.Mutex
	byClaim map[client.ObjectKey]refusedObject
	watches map[refusedObject]*refusedWatch
}

type refusedWatch struct {
	claims map[client.ObjectKey]bool
	stop   context.CancelFunc
}

// start gives the watches the manager's context: they end with it.
func (r *refusals) start(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.base = ctx
}

// refusedFor is the hub object a pass's run was refused for, nil when it was not.
func refusedFor(p *pass) *apply.OwnedElsewhere {
	var owned *apply.OwnedElsewhere
	if p == nil || p.Run == nil || p.Cluster != "" || !errors.As(p.Run.Err, &owned) {
		return nil
	}
	return owned
}

// set records what the claim's pass was refused for (nil: nothing), starting a watch on a new
// object and ending the one no claim waits on any more.
func (r *refusals) set(claim client.ObjectKey, owned *apply.OwnedElsewhere) {
	if r == nil || r.md == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old, had := r.byClaim[claim]
	var now refusedObject
	if owned != nil {
		now = refusedObject{kind: owned.GroupKind, namespace: owned.Namespace, name: owned.Name}
	}
	if had && owned != nil && old == now {
		return
	}
	if had {
		delete(r.byClaim, claim)
		if w := r.watches[old]; w != nil {
			delete(w.claims, claim)
			if len(w.claims) == 0 {
				w.stop()
				delete(r.watches, old)
			}
		}
	}
	if owned == nil {
		return
	}
	if r.byClaim == nil {
		r.byClaim, r.watches = map[client.ObjectKey]refusedObject{}, map[refusedObject]*refusedWatch{}
	}
	r.byClaim[claim] = now
	if w := r.watches[now]; w != nil {
		w.claims[claim] = true
		return
	}
	base := r.base
	if base == nil {
		base = context.Background() // a pass before the manager's runnables started
	}
	ctx, stop := context.WithCancel(base)
	r.watches[now] = &refusedWatch{claims: map[client.ObjectKey]bool{claim: true}, stop: stop}
	go r.watch(ctx, now)
}

// watch waits for o to be gone (listed absent, or a watch's deletion event), then brings its
// claims back. A failure to list or watch is retried, each wait longer, at most a minute.
func (r *refusals) watch(ctx context.Context, o refusedObject) {
	log := ctrl.LoggerFrom(ctx).WithValues("kind", o.kind.String(), "namespace", o.namespace, "name", o.name)
	selector := fields.OneTermEqualSelector("metadata.name", o.name).String()
	wait := time.Second
	pause := func(err error) bool {
		log.Error(err, "Watching an object a claim is refused for")
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Minute)
		return true
	}
	for ctx.Err() == nil {
		mapping, err := r.mapper.RESTMapping(o.kind)
		if err != nil {
			if meta.IsNoMatchError(err) {
				break // the kind is no longer served: its objects are gone
			}
			if !pause(err) {
				return
			}
			continue
		}
		res := r.md.Resource(mapping.Resource)
		var api metadata.ResourceInterface = res
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			api = res.Namespace(o.namespace)
		}
		list, err := api.List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			if !pause(err) {
				return
			}
			continue
		}
		if len(list.Items) == 0 {
			break
		}
		w, err := api.Watch(ctx, metav1.ListOptions{FieldSelector: selector, ResourceVersion: list.ResourceVersion})
		if err != nil {
			if !pause(err) {
				return
			}
			continue
		}
		if deleted(ctx, w) {
			break
		}
		// The watch ended (its timeout, an error): listed and watched again.
	}
	if ctx.Err() != nil {
		return
	}
	r.fire(ctx, o)
}

// deleted reports whether w delivered a deletion before it ended.
func deleted(ctx context.Context, w watch.Interface) bool {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case e, ok := <-w.ResultChan():
			switch {
			case !ok || e.Type == watch.Error:
				return false
			case e.Type == watch.Deleted:
				return true
			}
		}
	}
}

// fire brings back the claims refused for o, which is gone, and forgets them.
func (r *refusals) fire(ctx context.Context, o refusedObject) {
	r.mu.Lock()
	w := r.watches[o]
	delete(r.watches, o)
	var claims []client.ObjectKey
	if w != nil {
		for c := range w.claims {
			claims = append(claims, c)
			delete(r.byClaim, c)
		}
	}
	r.mu.Unlock()
	for _, c := range claims {
		select {
		case r.wake <- event.GenericEvent{Object: &scorev1b1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name}}}:
		case <-ctx.Done():
			return
		}
	}
}
