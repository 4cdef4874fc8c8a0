package members

import (
	"context"
	"errors"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/apply"
)

// Target is where a controller's objects go: the hub, or a member cluster.
type Target struct {
	Cluster string // "" is the hub
	Applier *apply.Applier
	Member  *Member
	// Routes watches the routes dependencies provisioned in the namespace on the member (nil
	// on the hub, or when the pool watches none).
	Routes *apply.Watcher
}

// Where says where objects were applied, for a message: "" on the hub.
func (t Target) Where() string {
	if t.Cluster == "" {
		return ""
	}
	return " on cluster " + t.Cluster
}

// Target returns where objects of namespace on cluster go (hub applies on the hub), or why
// they cannot go there now. On a member, objects go through their namespace's applier: the
// identity's rights and the caches are per namespace there.
func (p *Pool) Target(cluster, namespace string, hub *apply.Applier) (Target, error) {
	if cluster == "" {
		return Target{Applier: hub}, nil
	}
	mem, err := p.Get(cluster)
	if err != nil {
		return Target{}, err
	}
	a, err := mem.applierIn(namespace)
	if err != nil {
		return Target{}, err
	}
	routes, err := mem.routesIn(namespace)
	if err != nil {
		return Target{}, err
	}
	return Target{Cluster: cluster, Applier: a, Member: mem, Routes: routes}, nil
}

// Released is what Release did on each cluster.
type Released struct {
	// Remaining names the objects still being deleted (finalizers, the garbage collector).
	Remaining []string
	// Waiting are the entries on clusters that do not answer: kept, nothing was deleted.
	Waiting []scorev1b1.AppliedObject
	// Abandoned counts, by cluster, the entries on clusters no longer registered: let go of,
	// since removing the registration is the explicit way to give up a cluster that will not
	// return.
	Abandoned map[string]int
	// Deleted counts, by cluster, the entries deleted (or being deleted).
	Deleted map[string]int
	// Kept counts, by cluster, the entries inUse kept (another consumer's still): nothing that
	// goes with them (an instance's state there) may be deleted.
	Kept map[string]int
}

// Release deletes objs, each on its cluster (hub on the hub), sparing those inUse says another
// still uses; see Released for what happens on clusters that do not answer or are gone.
func (p *Pool) Release(ctx context.Context, hub *apply.Applier, objs []scorev1b1.AppliedObject, inUse func(scorev1b1.AppliedObject) (bool, error)) (Released, error) {
	out := Released{Abandoned: map[string]int{}, Deleted: map[string]int{}, Kept: map[string]int{}}
	// By cluster, and on a member by namespace (each its own applier there).
	type where struct{ cluster, namespace string }
	var order []where
	byPlace := map[where][]scorev1b1.AppliedObject{}
	for _, o := range objs {
		w := where{cluster: o.Cluster}
		if o.Cluster != "" {
			w.namespace = o.Namespace
		}
		if _, ok := byPlace[w]; !ok {
			order = append(order, w)
		}
		byPlace[w] = append(byPlace[w], o)
	}
	for _, w := range order {
		cluster, list := w.cluster, byPlace[w]
		t, err := p.Target(cluster, w.namespace, hub)
		switch {
		case errors.Is(err, ErrNotRegistered):
			out.Abandoned[cluster] += len(list)
			continue
		case err != nil:
			out.Waiting = append(out.Waiting, list...)
			continue
		}
		released, err := t.Applier.Release(ctx, list, inUse)
		if err != nil {
			if cluster != "" && p.Failed(t.Member, w.namespace, err) {
				out.Waiting = append(out.Waiting, list...)
				continue
			}
			return out, err
		}
		out.Remaining = append(out.Remaining, released.Remaining...)
		// Count what was done: an entry kept for another consumer was not deleted, and what
		// goes with the instance must not be deleted as though it were.
		if kept := len(released.Kept); kept > 0 {
			out.Kept[cluster] += kept
		}
		if deleted := len(list) - len(released.Kept); deleted > 0 {
			out.Deleted[cluster] += deleted
		}
	}
	return out, nil
}
