package workers

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/score-orchestrator/score-orchestrator/internal/controller/workerlimit"
)

func request(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
}

// The gate hands out no more requests than the limit; a request Done frees a slot; a limit the
// law raises lets the next one through at once; shutting down frees a worker held at the gate.
func TestGateHoldsWorkersAtTheLimit(t *testing.T) {
	pq := priorityqueue.New[reconcile.Request]("test")
	g := newGated("test", pq, workerlimit.Defaults(4, 2), 2, NewPushback())
	for _, n := range []string{"a", "b", "c", "d"} {
		g.Add(request(n))
	}
	first, _ := g.Get()
	g.Get()
	third := make(chan reconcile.Request)
	go func() { item, _ := g.Get(); third <- item }()
	select {
	case item := <-third:
		t.Fatalf("%v handed out above the limit of 2", item)
	case <-time.After(50 * time.Millisecond): // a negative check; the positive follows
	}
	g.Done(first)
	<-third

	// Two busy, one more waiting in the queue: a window of demand at the limit grows it.
	before, after := g.pushback.read(), g.pushback.read()
	g.step(&before, &after)
	if g.state.Limit != 3 {
		t.Fatalf("limit %d after a window of demand, want 3", g.state.Limit)
	}
	g.Get() // the fourth, let through by the new limit

	held := make(chan bool)
	go func() { _, shutdown := g.Get(); held <- shutdown }()
	g.ShutDown()
	if !<-held {
		t.Fatal("a worker held at the gate got a request after shutdown")
	}
}

// Pushback counts 429s without timing them, times other answers, and leaves watches out; a
// window of it halves the limit.
func TestPushbackHalvesTheLimit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("throttle") != "" {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("X-Kubernetes-PF-FlowSchema-UID", "x")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	p := NewPushback()
	client := &http.Client{Transport: p.Wrap(http.DefaultTransport)}
	get := func(query string) {
		resp, err := client.Get(srv.URL + "/api/v1/configmaps?" + query)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	g := newGated("test", priorityqueue.New[reconcile.Request]("test"), workerlimit.Defaults(16, 8), 8, p)
	defer g.ShutDown()

	before := p.read()
	get("")
	get("watch=true")
	get("throttle=1")
	after := p.read()
	var w workerlimit.Window
	between(&before, &after, &w)
	if w.Throttled != 1 || w.Samples != 1 {
		t.Fatalf("window %+v, want one 429 and one timed answer (the watch left out)", w)
	}
	g.step(&before, &after)
	if g.limit != 4 {
		t.Fatalf("limit %d after a 429, want 4", g.limit)
	}
}

// Workers let through to an empty queue before the limit was lowered do not exceed the new
// limit when requests arrive: those above it hold theirs back until a request is done.
func TestALoweredLimitAppliesToWorkersAlreadyWaiting(t *testing.T) {
	pq := priorityqueue.New[reconcile.Request]("test")
	g := newGated("test", pq, workerlimit.Defaults(4, 4), 4, NewPushback())
	defer g.ShutDown()
	got := make(chan reconcile.Request, 4)
	for range 4 {
		go func() {
			if item, shutdown := g.Get(); !shutdown {
				got <- item
			}
		}()
	}
	state := func() (admitted, holding int) {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.admitted, g.holding
	}
	eventually(t, "four workers waiting at the queue", func() error {
		if a, _ := state(); a != 4 {
			return fmt.Errorf("%d admitted", a)
		}
		return nil
	})
	g.mu.Lock()
	g.limit = 2
	g.wakeLocked()
	g.mu.Unlock()
	for _, n := range []string{"a", "b", "c", "d"} {
		g.Add(request(n))
	}
	eventually(t, "every request taken, two held", func() error {
		if _, h := state(); h != 2 || g.Len() != 0 {
			return fmt.Errorf("%d holding, %d queued", h, g.Len())
		}
		return nil
	})
	first := <-got
	<-got
	if len(got) != 0 {
		t.Fatal("a third request handed out above the lowered limit")
	}
	g.Done(first)
	<-got // the third goes once one is done
	if _, h := state(); h != 2 {
		t.Fatalf("%d holding, want 2", h)
	}
}

// eventually waits, on apimachinery's poller, until check passes, and fails with what and its
// last error after ten seconds.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		last = check()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, last)
	}
}
