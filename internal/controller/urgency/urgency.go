// Package urgency puts the work someone waits for ahead of a controller's backlog.
//
// controller-runtime's priority queue (on by default) hands out higher priorities first and
// keeps one entry per request, at the highest priority it was added with; ordinary events
// enter at 0 and the initial listing at -100. With thousands of Workloads being created at
// once, a developer's change to one Workload, or a failure to report, would otherwise wait
// behind all of them: make bench measured 47 s from a spec change to the status with 5,000
// Workloads being created, against a promise of 30 s. A controller adds, next to its ordinary
// watch of a kind, a second one that raises the requests of the updates that answer a change.
//
// Within a priority, namespaces take turns (FairQueue): one team creating 5,000 Workloads at
// once does not put another team's new Workload behind all of them.
package urgency

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Priority is the queue priority of urgent requests: above everything an ordinary event adds.
const Priority = 10

// Raise returns h with every request it adds raised to Priority. With a queue that has no
// priorities, it is h.
func Raise(h handler.EventHandler) handler.EventHandler { return raiser{h} }

// Updates passes only the updates urgent holds for; creations, deletions and generic events
// already reach the controller through its ordinary watch.
func Updates(urgent func(old, new client.Object) bool) predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc:  func(e event.UpdateEvent) bool { return urgent(e.ObjectOld, e.ObjectNew) },
	}
}

// Changed holds for an object someone changed after its creation: its generation moved
// (which deletion does too), as opposed to its first rollout or a status update.
func Changed(old, new client.Object) bool {
	return old.GetGeneration() > 0 && new.GetGeneration() != old.GetGeneration()
}

type raiser struct{ handler.EventHandler }

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func raised(q queue) queue {
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		return raisedQueue{pq}
	}
	return q
}

func (r raiser) Create(ctx context.Context, e event.CreateEvent, q queue) {
	r.EventHandler.Create(ctx, e, raised(q))
}

func (r raiser) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	r.EventHandler.Update(ctx, e, raised(q))
}

func (r raiser) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	r.EventHandler.Delete(ctx, e, raised(q))
}

func (r raiser) Generic(ctx context.Context, e event.GenericEvent, q queue) {
	r.EventHandler.Generic(ctx, e, raised(q))
}

// raisedQueue adds every request at Priority, whatever priority the handler asks for.
type raisedQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
}

func urgent() *int { p := Priority; return &p }

func (q raisedQueue) Add(item reconcile.Request) {
	q.PriorityQueue.AddWithOpts(priorityqueue.AddOpts{Priority: urgent()}, item)
}

func (q raisedQueue) AddAfter(item reconcile.Request, after time.Duration) {
	q.PriorityQueue.AddWithOpts(priorityqueue.AddOpts{Priority: urgent(), After: after}, item)
}

func (q raisedQueue) AddRateLimited(item reconcile.Request) {
	q.PriorityQueue.AddWithOpts(priorityqueue.AddOpts{Priority: urgent(), RateLimited: true}, item)
}

func (q raisedQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	o.Priority = urgent()
	q.PriorityQueue.AddWithOpts(o, items...)
}
