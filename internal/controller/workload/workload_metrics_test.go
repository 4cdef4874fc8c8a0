package workload

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
