package provisioner

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

func TestPhaseMetrics(t *testing.T) {
	var p phaseClock
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	claim := func(uid types.UID, name string, phase scorev1b1.ClaimPhase) *scorev1b1.ResourceClaim {
		return &scorev1b1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid}, Status: scorev1b1.ResourceClaimStatus{Phase: phase}}
	}
	binding0, bindingSum0 := phaseSamples(t, "Binding")
	bound0 := testutil.ToFloat64(claimsByPhase.WithLabelValues("Bound"))

	steps := []struct {
		what  string
		claim *scorev1b1.ResourceClaim
		from  scorev1b1.ClaimPhase
		at    time.Duration
	}{
		{"a new claim enters Binding", claim("u1", "db", scorev1b1.ClaimPhaseBinding), "", 0},
		{"a pass that changes nothing", claim("u1", "db", scorev1b1.ClaimPhaseBinding), scorev1b1.ClaimPhaseBinding, time.Second},
		{"Bound after 3s", claim("u1", "db", scorev1b1.ClaimPhaseBound), scorev1b1.ClaimPhaseBinding, 3 * time.Second},
		{"found Bound after a restart", claim("u2", "cache", scorev1b1.ClaimPhaseBound), scorev1b1.ClaimPhaseBound, 4 * time.Second},
		{"found Binding after a restart", claim("u3", "queue", scorev1b1.ClaimPhaseBinding), scorev1b1.ClaimPhaseBinding, 0},
		{"its Binding started before this process: no sample", claim("u3", "queue", scorev1b1.ClaimPhaseBound), scorev1b1.ClaimPhaseBinding, 9 * time.Second},
		{"a reset claim of the same name starts over", claim("u4", "db", scorev1b1.ClaimPhaseBinding), "", 10 * time.Second},
	}
	for _, s := range steps {
		p.observe(s.claim, s.from, t0.Add(s.at))
	}
	if n, sum := phaseSamples(t, "Binding"); n-binding0 != 1 || sum-bindingSum0 != 3 {
		t.Fatalf("Binding durations: %d samples, %vs; want 1 sample of 3s", n-binding0, sum-bindingSum0)
	}
	if got := testutil.ToFloat64(claimsByPhase.WithLabelValues("Bound")) - bound0; got != 2 {
		t.Fatalf("Bound claims %v, want 2 (cache, queue; db was reset)", got)
	}
	for _, name := range []string{"db", "cache", "queue"} {
		p.forget(types.NamespacedName{Namespace: "ns", Name: name})
	}
	if got := testutil.ToFloat64(claimsByPhase.WithLabelValues("Bound")) - bound0; got != 0 {
		t.Fatalf("forgotten claims still count: %v", got)
	}
}

func phaseSamples(t *testing.T, phase string) (uint64, float64) {
	t.Helper()
	m := &dto.Metric{}
	obs, err := phaseDurations.GetMetricWithLabelValues(phase)
	if err != nil {
		t.Fatal(err)
	}
	if err := obs.(interface{ Write(*dto.Metric) error }).Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}
