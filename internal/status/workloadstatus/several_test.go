package workloadstatus

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

func TestSeveralClustersStatusRule(t *testing.T) {
	bound := []ClaimState{{Key: "db", Phase: scorev1b1.ClaimPhaseBound, OutputsAvailable: true}}
	binding := []ClaimState{{Key: "db", Phase: scorev1b1.ClaimPhaseBinding}}
	_, claimsOK := Claims(bound)
	_, claimsWaiting := Claims(binding)
	running := Runtime(metav1.ConditionTrue, scorev1b1.ReasonSucceeded)
	degraded := Runtime(metav1.ConditionTrue, scorev1b1.ReasonRuntimeDegraded)
	ready := Copy{States: bound, Claims: claimsOK, Runtime: running}
	deploying := Copy{States: bound, Claims: claimsOK, Runtime: Provisioning()}
	waiting := Copy{States: binding, Claims: claimsWaiting, Runtime: WaitingForClaims()}
	unreachable := Copy{States: bound, Claims: claimsOK, Runtime: RuntimeUnreachable()}
	for _, tc := range []struct {
		name       string
		copies     []Copy
		ready      metav1.ConditionStatus
		reason     scorev1b1.Reason
		message    string
		claimPhase scorev1b1.ClaimPhase
	}{
		{"every copy ready: Ready", []Copy{ready, ready}, metav1.ConditionTrue, scorev1b1.ReasonSucceeded, msgReady, scorev1b1.ClaimPhaseBound},
		{"a copy with reduced capacity: ready, degraded", []Copy{ready, {States: bound, Claims: claimsOK, Runtime: degraded}}, metav1.ConditionTrue, scorev1b1.ReasonRuntimeDegraded, msgReadyDegraded, scorev1b1.ClaimPhaseBound},
		{"one of two deploying: ready with reduced capacity", []Copy{ready, deploying}, metav1.ConditionTrue, scorev1b1.ReasonRuntimeDegraded, msgReadyDegraded, scorev1b1.ClaimPhaseBound},
		{"the first deploying, the second ready: the same", []Copy{deploying, ready}, metav1.ConditionTrue, scorev1b1.ReasonRuntimeDegraded, msgReadyDegraded, scorev1b1.ClaimPhaseBound},
		{"a copy whose cluster does not answer: ready with reduced capacity", []Copy{unreachable, ready}, metav1.ConditionTrue, scorev1b1.ReasonRuntimeDegraded, msgReadyDegraded, scorev1b1.ClaimPhaseBound},
		{"a copy waiting for its dependencies: the ready copy's are shown", []Copy{ready, waiting}, metav1.ConditionTrue, scorev1b1.ReasonRuntimeDegraded, msgReadyDegraded, scorev1b1.ClaimPhaseBound},
		{"none ready: the first not ready copy's runtime", []Copy{deploying, unreachable}, metav1.ConditionFalse, scorev1b1.ReasonRuntimeProvisioning, msgProvisioning, scorev1b1.ClaimPhaseBound},
		{"none ready, dependencies waiting on one: ClaimPending", []Copy{deploying, waiting}, metav1.ConditionFalse, scorev1b1.ReasonClaimPending, "Waiting for 1 of 1 dependencies: db.", scorev1b1.ClaimPhaseBinding},
		{"none ready, a cluster that does not answer first", []Copy{unreachable, deploying}, metav1.ConditionFalse, scorev1b1.ReasonNetworkUnavailable, msgRuntimeUnreachable, scorev1b1.ClaimPhaseBound},
		{"no copy yet: being deployed", nil, metav1.ConditionFalse, scorev1b1.ReasonRuntimeProvisioning, msgProvisioning, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			summaries, claims, runtime := Several(tc.copies)
			r := Ready(Conditions{InputsValid(), claims, runtime})
			if r.Status != tc.ready || r.Reason != tc.reason || r.Message != tc.message {
				t.Fatalf("Ready %s %s %q; want %s %s %q", r.Status, r.Reason, r.Message, tc.ready, tc.reason, tc.message)
			}
			if tc.claimPhase == "" {
				if len(summaries) != 0 {
					t.Fatalf("summaries %+v, want none", summaries)
				}
				return
			}
			if len(summaries) != 1 || summaries[0].Phase != tc.claimPhase {
				t.Fatalf("summaries %+v, want one %s", summaries, tc.claimPhase)
			}
		})
	}
	// Some ready: the runtime condition says how many, naming no cluster.
	if _, _, runtime := Several([]Copy{ready, deploying, ready}); runtime.Message != "The workload is running with reduced capacity: 2 of 3 copies are ready." {
		t.Fatalf("runtime %q", runtime.Message)
	}
	if RuntimeNoun(msgCopiesDegraded) != "" {
		t.Fatalf("the message names %s", RuntimeNoun(msgCopiesDegraded))
	}
}
