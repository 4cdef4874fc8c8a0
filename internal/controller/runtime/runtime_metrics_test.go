package runtime

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// Both copies of a moved Workload exist from its new side healthy (the plan's Healthy
// condition as read, for its current generation) to the old side deleted.
func TestMoveCoexistence(t *testing.T) {
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	plan := func(status metav1.ConditionStatus, since time.Duration, observed int64) *scorev1b1.WorkloadPlan {
		p := &scorev1b1.WorkloadPlan{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
		p.Status.ObservedGeneration = observed
		p.Status.Conditions = []metav1.Condition{{Type: scorev1b1.PlanConditionHealthy, Status: status, LastTransitionTime: metav1.NewTime(now.Add(-since))}}
		return p
	}
	for _, tc := range []struct {
		name string
		p    *scorev1b1.WorkloadPlan
		want time.Duration
	}{
		{"healthy on the new cluster for a while (a failover): that long", plan(metav1.ConditionTrue, 90*time.Second, 3), 90 * time.Second},
		{"healthy in this very pass (a relabel move): none", plan(metav1.ConditionFalse, time.Minute, 3), 0},
		{"healthy for an earlier generation: none", plan(metav1.ConditionTrue, time.Hour, 2), 0},
		{"no condition yet: none", &scorev1b1.WorkloadPlan{}, 0},
	} {
		if got := coexisted(tc.p, now); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
