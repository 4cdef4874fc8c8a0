package plandecision

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/inventory"
)

// hold keeps the plan's status as read while the one decided only reports more progress of the
// applied objects becoming healthy (the progress hold, inventory.Hold): a plan Planning is not
// written again until it is Projected, or until Observed.ProgressHold has passed since it began
// waiting (its Healthy condition's last transition). The exposure carries the endpoints, not
// the objects' progress; its first publication has a hold of its own, in the same window
// (holdExposure). Never held: a deleted plan, a pass that stopped at an error, retries, has
// objects left to delete or records an event.
func (d *decision) hold(o Observed) {
	if o.Stopped != Done || d.Retry != nil || len(d.Events) > 0 || o.Left != nil || !o.Plan.DeletionTimestamp.IsZero() {
		return
	}
	read, generation := &o.Plan.Status, o.Plan.Generation
	var since metav1.Time
	if healthy := meta.FindStatusCondition(read.Conditions, scorev1b1.PlanConditionHealthy); healthy != nil {
		since = healthy.LastTransitionTime
	}
	remaining := inventory.Hold(inventory.HoldInput[*scorev1b1.WorkloadPlanStatus]{
		Read: read, Next: &d.Status, Since: since.Time, Now: o.Now, Window: o.ProgressHold,
		Waits: func(s *scorev1b1.WorkloadPlanStatus) bool { return waitsForObjects(s, generation) },
		Copy: func(s *scorev1b1.WorkloadPlanStatus) (*scorev1b1.WorkloadPlanStatus, []scorev1b1.AppliedObject, []metav1.Condition, *string) {
			s = s.DeepCopy()
			return s, s.Objects, s.Conditions, &s.Message
		},
	})
	if remaining <= 0 {
		return
	}
	d.Status = *read.DeepCopy()
	d.RequeueAfter = remaining
}

// waitsForObjects reports whether a plan's status says it applied everything for generation
// and waits for the applied objects to become healthy, none of them Failed.
func waitsForObjects(s *scorev1b1.WorkloadPlanStatus, generation int64) bool {
	applied := meta.FindStatusCondition(s.Conditions, scorev1b1.PlanConditionApplied)
	healthy := meta.FindStatusCondition(s.Conditions, scorev1b1.PlanConditionHealthy)
	return s.Phase == scorev1b1.PlanPhasePlanning && s.Reason == "" && s.Message == "" && s.ObservedGeneration == generation &&
		applied != nil && applied.Status == metav1.ConditionTrue && applied.Reason == scorev1b1.PlanReasonApplied && applied.ObservedGeneration == generation &&
		healthy != nil && healthy.Status == metav1.ConditionFalse && (healthy.Reason == scorev1b1.PlanReasonInProgress || healthy.Reason == scorev1b1.PlanReasonUpdating) && healthy.ObservedGeneration == generation &&
		!slices.ContainsFunc(s.Objects, func(o scorev1b1.AppliedObject) bool { return o.Health == scorev1b1.HealthFailed })
}
