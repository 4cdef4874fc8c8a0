package urgency

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func in(namespace, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Generation: 1, ResourceVersion: "1"}}
}

// A namespace that queued a backlog is served in turn with the others: a request of another
// namespace goes behind the backlog's first request, not its last. Priorities keep their
// order, a request added again keeps its place, and the controller sees each request's own
// priority (which it requeues with).
func TestNamespacesTakeTurns(t *testing.T) {
	q := newFair(priorityqueue.New[reconcile.Request]("test"))
	defer q.ShutDown()
	ordinary := &handler.EnqueueRequestForObject{}
	ctx := context.Background()
	create := func(o *corev1.ConfigMap, initial bool) {
		ordinary.Create(ctx, event.CreateEvent{Object: o, IsInInitialList: initial}, q)
	}
	for i := range 5 {
		create(in("team-a", fmt.Sprintf("a%d", i)), false)
	}
	create(in("team-d", "listed"), true)
	create(in("team-b", "b0"), false)
	create(in("team-b", "b1"), false)
	create(in("team-a", "a0"), false) // already waiting: keeps its place
	create(in("team-c", "c0"), false)
	changed := in("team-a", "a4")
	changed.Generation = 2
	Raise(ordinary).Update(ctx, event.UpdateEvent{ObjectOld: in("team-a", "a4"), ObjectNew: changed}, q)

	if n := q.Len(); n != 9 {
		t.Fatalf("%d entries, want 9 (one per request)", n)
	}
	want := []struct {
		ns, name string
		priority int
	}{
		{"team-a", "a4", Priority},
		{"team-a", "a0", 0}, {"team-b", "b0", 0}, {"team-c", "c0", 0},
		{"team-a", "a1", 0}, {"team-b", "b1", 0},
		{"team-a", "a2", 0}, {"team-a", "a3", 0},
		{"team-d", "listed", handler.LowPriority},
	}
	for _, w := range want {
		item, priority, _ := q.GetWithPriority()
		if exp := (reconcile.Request{NamespacedName: types.NamespacedName{Namespace: w.ns, Name: w.name}}); item != exp || priority != w.priority {
			t.Fatalf("next %v at %d, want %v at %d", item, priority, exp, w.priority)
		}
		q.Done(item)
	}
	if len(q.waiting) != 0 {
		t.Fatalf("requests still counted as waiting after all were handed out: %v", q.waiting)
	}

	// The queue is empty: a namespace's next request is its first again.
	create(in("team-a", "a5"), false)
	if item, priority, _ := q.GetWithPriority(); item.Name != "a5" || priority != 0 {
		t.Fatalf("next %v at %d, want team-a/a5 at 0", item, priority)
	}
}
