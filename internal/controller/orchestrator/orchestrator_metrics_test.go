package orchestrator

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

func TestReadinessMetrics(t *testing.T) {
	var r readiness
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var before struct {
		count uint64
		sum   float64
	}
	before.count, before.sum = samples()
	r.observe("u1", 1, "False", "ClaimPending", t0)
	r.observe("u1", 1, "False", "RuntimeProvisioning", t0.Add(time.Second))
	if got := testutil.ToFloat64(workloadsByReason.WithLabelValues("False", "ClaimPending")); got != 0 {
		t.Fatalf("a Workload counts under its current reason only: %v", got)
	}
	r.observe("u1", 1, "True", "Succeeded", t0.Add(3*time.Second))
	if got := testutil.ToFloat64(workloadsByReason.WithLabelValues("True", "Succeeded")); got != 1 {
		t.Fatalf("ready workloads %v", got)
	}
	r.observe("u1", 1, "True", "Succeeded", t0.Add(9*time.Second)) // no new generation: not observed again
	if n, sum := samples(); n != before.count+1 || sum-before.sum != 3 {
		t.Fatalf("time to Ready: %d samples (want %d), %vs (want 3s)", n, before.count+1, sum-before.sum)
	}
	r.observe("u2", 4, "True", "Succeeded", t0) // found Ready after a restart
	if n, _ := samples(); n != before.count+1 {
		t.Fatalf("a Workload found Ready is no transition: %d samples", n)
	}
	r.forget("u2")
	r.forget("u1")
	if got := testutil.ToFloat64(workloadsByReason.WithLabelValues("True", "Succeeded")); got != 0 {
		t.Fatalf("a forgotten workload still counts: %v", got)
	}
}

func samples() (uint64, float64) {
	m := &dto.Metric{}
	_ = timeToReady.Write(m)
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

func TestTimeToPlan(t *testing.T) {
	var r readiness
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	count := func() (uint64, float64) {
		m := &dto.Metric{}
		_ = timeToPlan.Write(m)
		return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
	}
	n0, s0 := count()
	r.seen("u1", 1, t0)
	r.seen("u1", 1, t0.Add(time.Second)) // a later pass over the same generation keeps its clock
	r.planWritten("u1", 1, t0.Add(2*time.Second))
	r.planWritten("u1", 1, t0.Add(5*time.Second)) // a rewrite for the same generation
	if n, s := count(); n != n0+1 || s-s0 != 2 {
		t.Fatalf("%d samples (want %d), %vs (want 2s)", n, n0+1, s-s0)
	}
	r.seen("u1", 2, t0.Add(10*time.Second))
	r.planWritten("u1", 1, t0.Add(11*time.Second)) // a plan for an older generation
	r.planWritten("u1", 2, t0.Add(10500*time.Millisecond))
	if n, s := count(); n != n0+2 || s-s0 != 2.5 {
		t.Fatalf("%d samples (want %d), %vs (want 2.5s)", n, n0+2, s-s0)
	}
	r.forget("u1")
	r.planWritten("u1", 2, t0.Add(20*time.Second)) // forgotten: no sample
	if n, _ := count(); n != n0+2 {
		t.Fatalf("a forgotten Workload was observed: %d samples", n)
	}
}
