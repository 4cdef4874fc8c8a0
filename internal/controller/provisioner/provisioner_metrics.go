package provisioner

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// The provisioner's metrics. The only label is the phase (four values); no claim name, type
// parameter or output is ever a label.
var (
	claimsByPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "score_provisioner_claims",
		Help: "ResourceClaims by phase, as this provisioner last wrote them.",
	}, []string{"phase"})
	phaseDurations = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "score_provisioner_claim_phase_seconds",
		Help:    "Time a ResourceClaim spent in a phase, observed when it leaves the phase.",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 16),
	}, []string{"phase"})
)

func init() {
	metrics.Registry.MustRegister(claimsByPhase, phaseDurations)
}

// phaseClock remembers the phase each claim is in and since when, for the gauge and the
// histogram.
type phaseClock struct {
	mu     sync.Mutex
	claims map[types.NamespacedName]phaseEntry
}

type phaseEntry struct {
	uid   types.UID
	phase scorev1b1.ClaimPhase
	since time.Time
	// timed is false for a phase this process found rather than saw begin (after a
	// restart): leaving it is no sample.
	timed bool
}

// observe records the phase a pass left claim c in; from is the phase the pass found. A
// duration is observed only for a phase whose start this process saw.
func (p *phaseClock) observe(c *scorev1b1.ResourceClaim, from scorev1b1.ClaimPhase, now time.Time) {
	if c.Status.Phase == "" {
		return
	}
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.claims == nil {
		p.claims = map[types.NamespacedName]phaseEntry{}
	}
	prev, known := p.claims[key]
	if known && prev.uid == c.UID && prev.phase == c.Status.Phase {
		return
	}
	if known {
		claimsByPhase.WithLabelValues(string(prev.phase)).Dec()
		if prev.uid == c.UID && prev.timed {
			phaseDurations.WithLabelValues(string(prev.phase)).Observe(now.Sub(prev.since).Seconds())
		}
	}
	claimsByPhase.WithLabelValues(string(c.Status.Phase)).Inc()
	// A phase this pass entered, or one this process saw the claim enter, is timed.
	timed := from != c.Status.Phase || (known && prev.uid == c.UID)
	p.claims[key] = phaseEntry{uid: c.UID, phase: c.Status.Phase, since: now, timed: timed}
}

// forget drops a claim that is gone.
func (p *phaseClock) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if prev, ok := p.claims[key]; ok {
		claimsByPhase.WithLabelValues(string(prev.phase)).Dec()
		delete(p.claims, key)
	}
}
