package planstatus

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/inventory"
)

// hold keeps the plan's status as read when the one decided only reports more progress of the
// applied objects becoming healthy: a plan Planning while its Deployment goes from "Updated:
// 0/1" to "Available: 0/1" is not written again until it is Projected, or until
// Observed.ProgressHold has passed since it began waiting, whichever comes first (issue 39:
// each step written once). The pass writes nothing for the plan and comes back when the window
// ends (RequeueAfter); the objects' watch brings it back sooner when they change again. The
// exposure carries the endpoints, not the objects' progress; its first publication has a
// hold of its own, in the same window (holdExposure).
//
// The rule, in full: held only when the status read and the one decided both wait for the
// applied objects — Planning, no reason, the plan's generation observed, everything applied,
// Healthy False with InProgress or Updating, no object Failed — and nothing else differs than the
// objects' health and messages and the conditions' messages: the same inventory entries (so
// a prune or a release acts on the inventory written) and the same conditions. Measured from
// the Healthy condition's last transition (when the plan began waiting), so no progress is
// shown later than the window after it happened; a change of an object's own kstatus message
// alone, which nothing but the inventory shows, inventory.DetailsHold windows after. Never held: the first status, a new
// generation, Projected (healthy or degraded), a failure (the phase, or an object Failed) and
// a recovery from one, a pass that stopped at an error, retries or records an event. A
// function of what was read and the time: a restart decides the same.
func (d *decision) hold(o Observed) {
	window, read, next := o.ProgressHold, &o.Plan.Status, &d.Status
	if window <= 0 || o.Stopped != Done || d.Retry != nil || len(d.Events) > 0 || o.Left != nil || !o.Plan.DeletionTimestamp.IsZero() {
		return
	}
	generation := o.Plan.Generation
	if !waitsForObjects(read, generation) || !waitsForObjects(next, generation) || !onlyProgress(read, next) {
		return
	}
	healthy := meta.FindStatusCondition(read.Conditions, scorev1b1.PlanConditionHealthy)
	remaining := inventory.HoldLeft(healthy.LastTransitionTime.Time, o.Now, window, onlyObjectMessages(read, next))
	if remaining <= 0 {
		return
	}
	d.Status = *read.DeepCopy()
	d.RequeueAfter = remaining
}

// onlyObjectMessages reports whether two statuses differ in nothing but their objects' own
// messages.
func onlyObjectMessages(a, b *scorev1b1.WorkloadPlanStatus) bool {
	strip := func(s *scorev1b1.WorkloadPlanStatus) *scorev1b1.WorkloadPlanStatus {
		s = s.DeepCopy()
		inventory.WithoutProgress(s.Objects, nil, false)
		return s
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
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

// onlyProgress reports whether two statuses differ in nothing but the objects' health and
// messages and the conditions' messages.
func onlyProgress(a, b *scorev1b1.WorkloadPlanStatus) bool {
	strip := func(s *scorev1b1.WorkloadPlanStatus) *scorev1b1.WorkloadPlanStatus {
		s = s.DeepCopy()
		inventory.WithoutProgress(s.Objects, s.Conditions, true)
		return s
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}
