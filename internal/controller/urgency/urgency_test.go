package urgency

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func object(name string, generation int64) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: generation, ResourceVersion: fmt.Sprint(generation)}}
}

func request(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
}

// An urgent update goes ahead of a backlog of ordinary events, including one for the same
// request that was already waiting (it keeps one entry, raised), and the backlog keeps its
// order behind it.
func TestRaisedUpdateGoesAheadOfTheBacklog(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	ordinary := &handler.EnqueueRequestForObject{}
	ctx := context.Background()
	for i := range 50 {
		ordinary.Create(ctx, event.CreateEvent{Object: object(fmt.Sprintf("w%02d", i), 1)}, q)
	}
	old, changed := object("w30", 1), object("w30", 2)
	ordinary.Update(ctx, event.UpdateEvent{ObjectOld: old, ObjectNew: changed}, q)
	Raise(ordinary).Update(ctx, event.UpdateEvent{ObjectOld: old, ObjectNew: changed}, q)

	if n := q.Len(); n != 50 {
		t.Fatalf("%d entries, want 50 (one per request)", n)
	}
	item, priority, _ := q.GetWithPriority()
	if item != request("w30") || priority != Priority {
		t.Fatalf("first out %v at %d, want ns/w30 at %d", item, priority, Priority)
	}
	q.Done(item)
	for _, want := range []string{"w00", "w01", "w02"} {
		item, priority, _ := q.GetWithPriority()
		if item != request(want) || priority != 0 {
			t.Fatalf("next %v at %d, want ns/%s at 0", item, priority, want)
		}
		q.Done(item)
	}
}

// The initial listing enters below ordinary events; a raised handler still lifts its requests.
func TestRaiseOverridesTheHandlersPriority(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	Raise(&handler.EnqueueRequestForObject{}).Create(context.Background(), event.CreateEvent{Object: object("listed", 1), IsInInitialList: true}, q)
	if _, priority, _ := q.GetWithPriority(); priority != Priority {
		t.Fatalf("priority %d, want %d", priority, Priority)
	}
}

func TestUrgentUpdates(t *testing.T) {
	cases := []struct {
		name     string
		old, new client.Object
		want     bool
	}{
		{"a spec change", object("a", 1), object("a", 2), true},
		{"a status update", object("a", 1), object("a", 1), false},
		{"a later status update", object("a", 3), object("a", 3), false},
		{"no generation kept (a built-in kind)", object("a", 0), object("a", 0), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Updates(Changed)
			if got := p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
				t.Fatalf("urgent %v, want %v", got, tc.want)
			}
			if p.Create(event.CreateEvent{Object: tc.new}) || p.Delete(event.DeleteEvent{Object: tc.new}) || p.Generic(event.GenericEvent{Object: tc.new}) {
				t.Fatal("only updates are raised")
			}
		})
	}
}
