package planstatus

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
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
func exposureStatus(e Exposure, state Health, workloadGeneration int64) *scorev1b1.WorkloadExposureStatus {
	next := e.Status.DeepCopy()
	next.ObservedWorkloadGeneration = workloadGeneration
	next.Exposures = e.Endpoints.Exposures
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
			cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, "Waiting", msg
		}
		meta.SetStatusCondition(&next.Conditions, cond)
	}
	return next
}
