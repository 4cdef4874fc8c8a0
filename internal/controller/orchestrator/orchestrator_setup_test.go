package orchestrator

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

func TestAnswersGoFirst(t *testing.T) {
	claim := func(observed int64, phase scorev1b1.ClaimPhase) *scorev1b1.ResourceClaim {
		return &scorev1b1.ResourceClaim{Status: scorev1b1.ResourceClaimStatus{ObservedGeneration: observed, Phase: phase}}
	}
	plan := func(observed int64, phase scorev1b1.PlanPhase) *scorev1b1.WorkloadPlan {
		return &scorev1b1.WorkloadPlan{Status: scorev1b1.WorkloadPlanStatus{ObservedGeneration: observed, Phase: phase}}
	}
	exposure := func(observed int64) *scorev1b1.WorkloadExposure {
		return &scorev1b1.WorkloadExposure{Status: scorev1b1.WorkloadExposureStatus{ObservedWorkloadGeneration: observed}}
	}
	cases := []struct {
		name     string
		old, new client.Object
		want     bool
	}{
		{"a claim's first answer is the backlog", claim(0, ""), claim(1, scorev1b1.ClaimPhaseBinding), false},
		{"a claim's progress on its first generation", claim(1, scorev1b1.ClaimPhaseBinding), claim(1, scorev1b1.ClaimPhaseBound), false},
		{"a claim answering a changed spec", claim(1, scorev1b1.ClaimPhaseBound), claim(2, scorev1b1.ClaimPhaseBinding), true},
		{"a claim failing", claim(0, ""), claim(1, scorev1b1.ClaimPhaseFailed), true},
		{"a failed claim's message changing", claim(1, scorev1b1.ClaimPhaseFailed), claim(1, scorev1b1.ClaimPhaseFailed), false},
		{"a plan's first rollout", plan(0, scorev1b1.PlanPhasePending), plan(1, scorev1b1.PlanPhasePlanning), false},
		{"a plan answering a changed spec", plan(1, scorev1b1.PlanPhaseProjected), plan(2, scorev1b1.PlanPhasePlanning), true},
		{"a plan failing", plan(1, scorev1b1.PlanPhasePlanning), plan(1, scorev1b1.PlanPhaseFailed), true},
		{"a plan's health on the same generation", plan(2, scorev1b1.PlanPhasePlanning), plan(2, scorev1b1.PlanPhaseProjected), false},
		{"an exposure's first publication", exposure(0), exposure(1), false},
		{"an exposure for a changed Workload", exposure(1), exposure(2), true},
		{"a Workload (not an answer)", &scorev1b1.Workload{}, &scorev1b1.Workload{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := answers(tc.old, tc.new); got != tc.want {
				t.Fatalf("answers %v, want %v", got, tc.want)
			}
		})
	}
}
