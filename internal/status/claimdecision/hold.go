package claimdecision

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/inventory"
)

// hold keeps the status as read while the one decided only reports more progress of the
// provisioned objects becoming healthy (the progress hold, inventory.Hold): a claim Binding is
// not written again until it is Bound, or until Observed.ProgressHold has passed since it began
// Binding (its Ready condition's last transition). Outputs published or changed, a secret or
// an instance changed, and a deleted claim are never held, nor a pass that retries or has more
// to do.
func (d *decision) hold() {
	if d.Next != Done || d.Retry != nil || !d.o.Claim.DeletionTimestamp.IsZero() {
		return
	}
	read, generation := &d.o.Claim.Status, d.o.Claim.Generation
	var since metav1.Time
	if ready := meta.FindStatusCondition(read.Conditions, scorev1b1.ClaimConditionReady); ready != nil {
		since = ready.LastTransitionTime
	}
	remaining := inventory.Hold(inventory.HoldInput[*scorev1b1.ResourceClaimStatus]{
		Read: read, Next: &d.Status, Since: since.Time, Now: d.o.Now.Time, Window: d.o.ProgressHold,
		Waits: func(s *scorev1b1.ResourceClaimStatus) bool { return waitsForObjects(s, generation) },
		Copy: func(s *scorev1b1.ResourceClaimStatus) (*scorev1b1.ResourceClaimStatus, []scorev1b1.AppliedObject, []metav1.Condition, *string) {
			s = s.DeepCopy()
			return s, s.Resources, s.Conditions, &s.Message
		},
	})
	if remaining <= 0 {
		return
	}
	d.Status = *read.DeepCopy()
	if d.RequeueAfter <= 0 || remaining < d.RequeueAfter {
		d.RequeueAfter = remaining
	}
}

// waitsForObjects reports whether a status says the claim, at generation, waits for its
// provisioned objects to become healthy, and nothing else: what outputs() decides for a run
// whose objects are not all Current, none of them Failed.
func waitsForObjects(s *scorev1b1.ResourceClaimStatus, generation int64) bool {
	unhealthy := unhealthyObjects(s.Resources)
	ready := meta.FindStatusCondition(s.Conditions, scorev1b1.ClaimConditionReady)
	return s.Phase == scorev1b1.ClaimPhaseBinding && s.Reason == "" && s.ObservedGeneration == generation &&
		len(unhealthy) > 0 && s.Message == waitingFor(unhealthy) &&
		!slices.ContainsFunc(s.Resources, func(o scorev1b1.AppliedObject) bool { return o.Health == scorev1b1.HealthFailed }) &&
		ready != nil && ready.Status == metav1.ConditionFalse && ready.ObservedGeneration == generation && ready.Message == s.Message
}

// waitingFor is the message of a claim waiting for the objects named.
func waitingFor(unhealthy []string) string {
	return "Waiting for " + strings.Join(unhealthy, ", ") + "."
}
