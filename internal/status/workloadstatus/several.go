package workloadstatus

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// Copy is what one copy of a Workload placed on several clusters reports: its dependencies'
// states and conditions, and its runtime's condition.
type Copy struct {
	States  []ClaimState
	Claims  Condition
	Runtime Condition
}

// ready: the copy's dependencies and its runtime are ready.
func (c Copy) ready() bool {
	return c.Claims.Status == metav1.ConditionTrue && c.Runtime.Status == metav1.ConditionTrue
}

const msgCopiesDegraded = "The workload is running with reduced capacity: %d of %d copies are ready."

// Several is the status of a Workload placed on several clusters, from its copies in placement
// order: its claims' summaries, ClaimsReady and RuntimeReady.
//
//   - Every copy ready: the dependencies of all of them, and the runtime Succeeded, or
//     RuntimeDegraded when a copy runs with reduced capacity (Ready True either way).
//   - Some copies ready: the workload serves, with reduced capacity. RuntimeReady is True with
//     RuntimeDegraded and says how many copies are ready (Ready True, RuntimeDegraded); the
//     dependencies are those of the ready copies. What the others wait for is in their plans
//     and claims.
//   - No copy ready: the dependencies of all of them (per dependency, the first copy's that is
//     not ready), and the runtime condition of the first copy whose runtime is not ready
//     (else of the first copy).
//
// A dependency's summary is, per key, that of the first copy in placement order where it is
// not ready, else the first copy's. No cluster is named: where a Workload runs is the
// platform's business.
func Several(copies []Copy) ([]scorev1b1.ClaimSummary, Condition, Condition) {
	var ready []Copy
	for _, c := range copies {
		if c.ready() {
			ready = append(ready, c)
		}
	}
	switch {
	case len(copies) == 0:
		summaries, claims := Claims(nil)
		return summaries, claims, Provisioning()
	case len(ready) == len(copies):
		summaries, claims := Claims(merge(copies))
		runtime := copies[0].Runtime
		for _, c := range copies {
			if c.Runtime.Reason == scorev1b1.ReasonRuntimeDegraded {
				runtime = c.Runtime
			}
		}
		return summaries, claims, runtime
	case len(ready) > 0:
		summaries, claims := Claims(merge(ready))
		return summaries, claims, cond(metav1.ConditionTrue, scorev1b1.ReasonRuntimeDegraded, fmt.Sprintf(msgCopiesDegraded, len(ready), len(copies)))
	}
	summaries, claims := Claims(merge(copies))
	runtime := copies[0].Runtime
	for _, c := range copies {
		if c.Runtime.Status != metav1.ConditionTrue {
			runtime = c.Runtime
			break
		}
	}
	return summaries, claims, runtime
}

// merge is one state per dependency: the first copy's that is not ready, else the first
// copy's.
func merge(copies []Copy) []ClaimState {
	var out []ClaimState
	at := map[string]int{}
	for _, c := range copies {
		for _, s := range c.States {
			i, seen := at[s.Key]
			switch {
			case !seen:
				at[s.Key] = len(out)
				out = append(out, s)
			case stateReady(out[i]) && !stateReady(s):
				out[i] = s
			}
		}
	}
	return out
}

// stateReady: the dependency is Bound with its outputs, or being updated with them.
func stateReady(s ClaimState) bool {
	if s.updating() {
		return true
	}
	sum := summarize(s)
	return sum.Phase == scorev1b1.ClaimPhaseBound && sum.OutputsAvailable
}
