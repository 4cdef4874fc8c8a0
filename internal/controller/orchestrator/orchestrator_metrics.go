package orchestrator

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The orchestrator's metrics. Labels are bounded (reasons, profiles, backend ids, results);
// no Workload name and no secret is ever a label.
var (
	workloadsByReason = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "score_orchestrator_workloads",
		Help: "Workloads by the status and reason of their Ready condition.",
	}, []string{"ready", "reason"})
	selections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "score_orchestrator_selection_decisions_total",
		Help: "Plans written, by selected profile and backend.",
	}, []string{"profile", "backend"})
	timeToReady = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "score_orchestrator_generation_to_ready_seconds",
		Help:    "Time from a Workload generation being first seen to its Ready condition turning True.",
		Buckets: prometheus.ExponentialBuckets(0.25, 2, 12),
	})
	timeToPlan = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "score_orchestrator_generation_to_plan_seconds",
		Help:    "Time from a Workload generation being first seen to the plan for it being written (created or changed).",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
	})
	mirrorResults = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "score_orchestrator_exposures_total",
		Help: "Endpoint mirror results: mirrored (a new endpoint) or rejected (an invalid URL kept out).",
	}, []string{"result"})
)

func init() {
	metrics.Registry.MustRegister(workloadsByReason, selections, timeToReady, timeToPlan, mirrorResults)
}

// readiness tracks each Workload's Ready status and reason for the gauge, and when each
// generation was first seen, for the time-to-Ready histogram.
type readiness struct {
	mu    sync.Mutex
	state map[types.UID]readyState
	// generations: when each Workload's current generation was first seen, for the
	// time-to-plan histogram, and whether its plan was written.
	generations map[types.UID]generationSeen
}

type generationSeen struct {
	generation int64
	since      time.Time
	planned    bool
}

// seen records a pass over a Workload's generation; the first pass for a generation starts
// its clock.
func (r *readiness) seen(uid types.UID, generation int64, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.generations == nil {
		r.generations = map[types.UID]generationSeen{}
	}
	if g, ok := r.generations[uid]; !ok || g.generation != generation {
		r.generations[uid] = generationSeen{generation: generation, since: now}
	}
}

// planWritten observes the time from the generation being first seen to its plan being
// written, once per generation (a later rewrite for the same generation, e.g. a config
// change, is no sample).
func (r *readiness) planWritten(uid types.UID, generation int64, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g, ok := r.generations[uid]
	if !ok || g.generation != generation || g.planned {
		return
	}
	timeToPlan.Observe(now.Sub(g.since).Seconds())
	g.planned = true
	r.generations[uid] = g
}

type readyState struct {
	ready, reason string
	generation    int64
	since         time.Time
}

// observe records a Workload's Ready condition; it is called on every pass that decided a
// status. Time to Ready is observed only for a transition this process saw happen: a
// restart finding Workloads Ready adds no samples.
func (r *readiness) observe(uid types.UID, generation int64, ready, reason string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == nil {
		r.state = map[types.UID]readyState{}
	}
	prev, known := r.state[uid]
	if known {
		workloadsByReason.WithLabelValues(prev.ready, prev.reason).Dec()
	}
	next := readyState{ready: ready, reason: reason, generation: generation, since: prev.since}
	if !known || prev.generation != generation {
		next.since = now
	}
	if ready == "True" && known && (prev.ready != "True" || prev.generation != generation) {
		timeToReady.Observe(now.Sub(next.since).Seconds())
	}
	workloadsByReason.WithLabelValues(ready, reason).Inc()
	r.state[uid] = next
}

// forget drops a Workload that is gone.
func (r *readiness) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.state[uid]; ok {
		workloadsByReason.WithLabelValues(prev.ready, prev.reason).Dec()
		delete(r.state, uid)
	}
	delete(r.generations, uid)
}
