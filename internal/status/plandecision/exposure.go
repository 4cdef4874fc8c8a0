package plandecision

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

// healthConditions are the exposure's conditions for the applied objects' health, each with
// the state that sets it True and what it says.
var healthConditions = []struct {
	typ     string
	on      Health
	message string
}{
	{scorev1b1.ExposureConditionHealthy, Healthy, "Every applied object is healthy."},
	{scorev1b1.ExposureConditionProvisioning, Provisioning, "Applied objects are becoming healthy."},
	{scorev1b1.ExposureConditionDegraded, Degraded, "The workload serves, but not every applied object is healthy."},
}

// exposureStatus is the exposure's next status: the endpoints derived from what was applied
// (route and Ingress hosts, load balancer addresses, cluster DNS names), and the runtime's
// conditions for the orchestrator's mirror to normalise: Healthy, Provisioning or Degraded,
// and LBPending and IngressPending while the platform has not given an address.
//
// While the objects are still becoming healthy, an endpoint that only turned reachable keeps
// what was published for it: the pod that answers it is the one the objects wait for, seen
// through another watch (its Service's EndpointSlice before its Deployment), and its health is
// written with it — one write for one transition, not one per watch.
func exposureStatus(e Exposure, state Health, workloadGeneration int64) *scorev1b1.WorkloadExposureStatus {
	next := e.Status.DeepCopy()
	next.ObservedWorkloadGeneration = workloadGeneration
	next.Exposures = e.Endpoints.Exposures
	if state == Provisioning && e.Status.ObservedWorkloadGeneration == workloadGeneration &&
		meta.IsStatusConditionTrue(e.Status.Conditions, scorev1b1.ExposureConditionProvisioning) && onlyReachable(e.Status.Exposures, next.Exposures) {
		next.Exposures = e.Status.Exposures
	}
	for _, c := range healthConditions {
		status := metav1.ConditionFalse
		if state == c.on {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&next.Conditions, metav1.Condition{Type: c.typ, Status: status, Reason: "Health", Message: c.message})
	}
	for _, typ := range []string{scorev1b1.ExposureConditionLBPending, scorev1b1.ExposureConditionIngressPending} {
		cond := metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: "Addressed", Message: "Nothing waits for an address."}
		if msg, ok := e.Endpoints.Pending[typ]; ok {
			cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, "Waiting", termtext.Escape(msg)
		}
		meta.SetStatusCondition(&next.Conditions, cond)
	}
	return next
}

// onlyReachable reports whether two lists of endpoints differ in reachable alone.
func onlyReachable(published, derived []scorev1b1.Exposure) bool {
	if len(published) != len(derived) {
		return false
	}
	for i := range published {
		a, b := published[i], derived[i]
		a.Reachable, b.Reachable = nil, nil
		if !equality.Semantic.DeepEqual(a, b) {
			return false
		}
	}
	return true
}
