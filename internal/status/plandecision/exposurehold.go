package plandecision

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/inventory"
)

// holdExposure keeps the exposure unpublished while its first status would only report the
// applied objects becoming healthy: the endpoint and Provisioning are written together with
// Healthy when the objects become healthy within Observed.ProgressHold of the plan beginning
// to wait for them (its Healthy condition's last transition), and with Provisioning when the
// window has passed: each step is written once. The pass writes nothing for
// the exposure and comes back when the window ends (RequeueAfter); the objects' watch brings
// it back sooner when they become healthy.
//
// Nothing reads the early publication: the orchestrator's Workload says RuntimeProvisioning
// from the plan's Planning phase, not from the exposure, mirrors the exposure's conditions
// only once the plan is Projected, and holds an endpoint published before health for its own
// window; the runtime writes the exposure before the plan in each pass, so the plan is never
// Projected before the exposure is published. The endpoint reaches the Workload with Ready
// when the objects become healthy within the window, and within the window of the objects'
// apply otherwise (firstPublished dates the conditions), inside the lifecycle's 60 s.
//
// The rule, in full: held only when the exposure has no status yet (nothing published that
// this would change), the plan as read did not fail (no recovery), the plan decided waits for
// its objects for its generation (Planning, everything applied, Healthy False InProgress, no
// object Failed) and the exposure decided says that alone: Provisioning True and every other
// condition False (no address pending: LBPending and IngressPending are NetworkUnavailable
// on the Workload, shown at once). Never
// held: a publication that changes one already made (a new generation, another URL, a
// recovery), healthy, degraded, a failure, a pass that stopped at an error, retries or
// records an event, a plan being deleted. A function of what was read and the time: a restart
// decides the same.
func (d *decision) holdExposure(o Observed) {
	window, next := o.ProgressHold, d.Exposure
	if window <= 0 || next == nil || o.Exposure == nil || o.Stopped != Done || d.Retry != nil || len(d.Events) > 0 || o.Left != nil || !o.Plan.DeletionTimestamp.IsZero() {
		return
	}
	if !unpublished(o.Exposure.Status) || failed(&o.Plan.Status) || !waitsForObjects(&d.Status, o.Plan.Generation) || !onlyProvisioning(next.Conditions) {
		return
	}
	healthy := meta.FindStatusCondition(d.Status.Conditions, scorev1b1.PlanConditionHealthy)
	remaining := inventory.HoldLeft(healthy.LastTransitionTime.Time, o.Now, window, false)
	if remaining <= 0 {
		return
	}
	d.Exposure = nil
	if d.RequeueAfter <= 0 || remaining < d.RequeueAfter {
		d.RequeueAfter = remaining
	}
}

// firstPublished dates the conditions of an exposure's first status from the plan's Healthy
// condition's last transition: the health they report began then, and the endpoints and
// addresses were derived from the objects applied then. Written in the pass that began it,
// that is the pass's own time; written when the hold ends, it is not news to the
// orchestrator, whose own hold of an endpoint published before health is measured from these
// conditions, so the endpoint reaches the Workload within one window of the apply, not two.
// Later changes are stamped when they are written.
func firstPublished(next *scorev1b1.WorkloadExposureStatus, read scorev1b1.WorkloadExposureStatus, plan *scorev1b1.WorkloadPlanStatus) {
	healthy := meta.FindStatusCondition(plan.Conditions, scorev1b1.PlanConditionHealthy)
	if next == nil || !unpublished(read) || healthy == nil || healthy.LastTransitionTime.IsZero() {
		return
	}
	for i := range next.Conditions {
		next.Conditions[i].LastTransitionTime = healthy.LastTransitionTime
	}
}

// failed reports whether a plan's status says it failed: its phase, or an object Failed.
func failed(s *scorev1b1.WorkloadPlanStatus) bool {
	return s.Phase == scorev1b1.PlanPhaseFailed || slices.ContainsFunc(s.Objects, func(o scorev1b1.AppliedObject) bool { return o.Health == scorev1b1.HealthFailed })
}

// unpublished reports whether an exposure's status is still empty: nothing was published.
func unpublished(s scorev1b1.WorkloadExposureStatus) bool {
	return equality.Semantic.DeepEqual(s, scorev1b1.WorkloadExposureStatus{})
}

// onlyProvisioning reports whether an exposure's conditions say only that the applied objects
// are becoming healthy: Provisioning True, every other condition False.
func onlyProvisioning(conditions []metav1.Condition) bool {
	provisioning := false
	for _, c := range conditions {
		switch {
		case c.Type == scorev1b1.ExposureConditionProvisioning:
			provisioning = c.Status == metav1.ConditionTrue
		case c.Status != metav1.ConditionFalse:
			return false
		}
	}
	return provisioning
}
