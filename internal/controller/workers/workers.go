// Package workers fits a controller's worker count to the cluster: controller-runtime starts
// as many workers as the flag's cap, and a gate in front of the queue lets only as many take
// a request at once as the adaptive limit allows. The limit is moved every Interval by
// workerlimit's law, from the controller's demand (the requests ready in its queue, and
// whether every admitted worker was busy) and the process's Pushback (429s, request
// latency).
//
// The gate is at the queue's hand-out, not inside Reconcile: a worker held back there has
// taken nothing, so the waiting requests stay in the queue in their order (urgent first,
// namespaces in turn, urgency.FairQueue) and are counted as its depth, and an urgent request
// that arrives while workers are held goes ahead of everything still waiting. Only a worker
// that was let through before the limit was lowered holds a request back, until one is done.
package workers

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/score-orchestrator/score-orchestrator/internal/controller/workerlimit"
)

// Adaptive says how a process's controllers move their worker counts. A nil *Adaptive pins
// each at its cap.
type Adaptive struct {
	// Start is each controller's limit before its first window (at most its cap).
	Start int
	// Interval is a window's length.
	Interval time.Duration
	// Pushback is the process's record of the API server's answers; its Wrap must be on the
	// rest.Config the controllers' clients are built from. Nil: none is seen, and the limit
	// follows demand alone.
	Pushback *Pushback
	// Params tunes the law; nil: workerlimit.Defaults for each controller's cap and Start.
	Params *workerlimit.Params
}

// The documented defaults: start at eight workers, half the default cap (four would hold the
// first passes of N=200 back: sixteen fixed create every claim in half the time), and judge
// every half second (tens of requests at eight workers, enough for a median; growth from eight
// to a cap of 16 in four seconds).
const (
	DefaultStart    = 8
	DefaultInterval = 500 * time.Millisecond
)

// NewQueueFunc is controller.Options.NewQueue.
type NewQueueFunc = func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request]

// Queue is controller's NewQueue for a controller that runs maxWorkers workers
// (MaxConcurrentReconciles): newQueue's queue, gated at the limit a adapts when a is not nil,
// and its limit exposed as score_workers_limit. newQueue must build a priority queue
// (urgency.FairQueue does); another is left ungated.
func Queue(controller string, maxWorkers int, a *Adaptive, newQueue NewQueueFunc) NewQueueFunc {
	return func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		q := newQueue(name, rl)
		pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
		if a == nil || !ok {
			limitGauge.WithLabelValues(controller).Set(float64(maxWorkers))
			return q
		}
		start := a.Start
		if start <= 0 {
			start = DefaultStart
		}
		start = min(start, maxWorkers)
		params := workerlimit.Defaults(maxWorkers, start)
		if a.Params != nil {
			params = *a.Params
			params.Max = maxWorkers
		}
		interval := a.Interval
		if interval <= 0 {
			interval = DefaultInterval
		}
		pushback := a.Pushback
		if pushback == nil {
			pushback = NewPushback()
		}
		g := newGated(controller, pq, params, start, pushback)
		go g.run(interval)
		return g
	}
}

// newGated gates pq at a limit that starts at start.
func newGated(controller string, pq priorityqueue.PriorityQueue[reconcile.Request], params workerlimit.Params, start int, pushback *Pushback) *gated {
	g := &gated{PriorityQueue: pq, controller: controller, params: params, pushback: pushback,
		state: workerlimit.Start(params, start), done: make(chan struct{}), wake: make(chan struct{})}
	g.limit = g.state.Limit
	limitGauge.WithLabelValues(controller).Set(float64(g.limit))
	return g
}

var log = ctrl.Log.WithName("workers")

// gated is a priority queue whose hand-out waits for a free slot under the limit.
type gated struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	controller string
	params     workerlimit.Params
	pushback   *Pushback

	mu sync.Mutex
	// limit is how many workers may hold a request at once. admitted counts the workers let
	// through to the queue (waiting there for a request, or holding one), holding those that
	// hold one, busiest the most that held one at once since the last window.
	limit, admitted, holding, busiest int
	// wake is closed, and replaced, whenever a worker may go on: a request done, the limit
	// moved.
	wake     chan struct{}
	done     chan struct{}
	shutdown sync.Once

	// state is the law's memory, read and written by run only.
	state workerlimit.State
}

// wait waits until below(g) holds, then calls take(g), both under the lock; false once the
// queue is shut down.
func (g *gated) wait(below func(*gated) bool, take func(*gated)) bool {
	for {
		g.mu.Lock()
		if below(g) {
			take(g)
			g.mu.Unlock()
			return true
		}
		wake := g.wake
		g.mu.Unlock()
		select {
		case <-wake:
		case <-g.done:
			return false
		}
	}
}

func (g *gated) wakeLocked() {
	close(g.wake)
	g.wake = make(chan struct{})
}

// GetWithPriority hands out the next request once fewer workers than the limit hold one.
//
// A worker is let through to the queue only while fewer than the limit are (admitted), so
// that requests wait in the queue, in its order, rather than in workers. A worker let through
// before the limit was lowered may still be handed a request above the new limit: it holds
// it until a request is done, so the lowered limit applies at once.
func (g *gated) GetWithPriority() (reconcile.Request, int, bool) {
	if !g.wait(func(g *gated) bool { return g.admitted < g.limit }, func(g *gated) { g.admitted++ }) {
		return reconcile.Request{}, 0, true
	}
	item, priority, shutdown := g.PriorityQueue.GetWithPriority()
	if shutdown {
		g.leave(false)
		return item, priority, shutdown
	}
	if !g.wait(func(g *gated) bool { return g.holding < g.limit }, func(g *gated) {
		g.holding++
		g.busiest = max(g.busiest, g.holding)
	}) {
		// Shut down while holding it back: the controller will not call Done.
		g.PriorityQueue.Done(item)
		g.leave(false)
		return reconcile.Request{}, 0, true
	}
	return item, priority, false
}

// leave is a worker's way out: a request done (held), or none handed out.
func (g *gated) leave(held bool) {
	g.mu.Lock()
	g.admitted--
	if held {
		g.holding--
	}
	g.wakeLocked()
	g.mu.Unlock()
}

// Get hands out the next request once fewer workers than the limit hold one.
func (g *gated) Get() (reconcile.Request, bool) {
	item, _, shutdown := g.GetWithPriority()
	return item, shutdown
}

// Done lets the next worker have a request.
func (g *gated) Done(item reconcile.Request) {
	g.PriorityQueue.Done(item)
	g.leave(true)
}

// ShutDown stops the queue, the workers waiting for a slot and the law's windows.
func (g *gated) ShutDown() {
	g.shutdown.Do(func() { close(g.done) })
	g.PriorityQueue.ShutDown()
}

// ShutDownWithDrain is ShutDown: controller-runtime's priority queue does not drain either.
func (g *gated) ShutDownWithDrain() { g.ShutDown() }

// run closes a window every interval, until the queue shuts down.
func (g *gated) run(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	last := g.pushback.read()
	for {
		select {
		case <-g.done:
			return
		case <-t.C:
		}
		now := g.pushback.read()
		g.step(&last, &now)
		last = now
	}
}

// step closes the window between two readings of the pushback: the law moves the limit.
func (g *gated) step(before, after *reading) {
	w := workerlimit.Window{Waiting: g.PriorityQueue.Len()}
	between(before, after, &w)
	g.mu.Lock()
	w.Busy, g.busiest = g.busiest, g.holding
	g.mu.Unlock()
	next, reason := workerlimit.Next(g.params, g.state, w)
	g.state = next
	if reason == "" {
		return
	}
	g.mu.Lock()
	g.limit = next.Limit
	g.wakeLocked()
	g.mu.Unlock()
	limitGauge.WithLabelValues(g.controller).Set(float64(next.Limit))
	log.V(1).Info("Worker limit moved", "controller", g.controller, "limit", next.Limit, "reason", reason,
		"waiting", w.Waiting, "busy", w.Busy, "throttled", w.Throttled, "latency", w.Latency, "reference", next.Reference)
	adjustments.WithLabelValues(g.controller, string(reason)).Inc()
}
