package claimstatus

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/inventory"
)

// hold keeps the status as read when the one decided only reports more progress of the
// provisioned objects becoming healthy: a claim Binding while its StatefulSet goes from
// "Replicas: 0/1" to "Ready: 0/1" is not written again until it is Bound, or until
// Observed.ProgressHold has passed since it began Binding, whichever comes first (issue 39:
// each step written once). The pass writes nothing and comes back when the window ends
// (RequeueAfter); the objects' watch brings it back sooner when they change again.
//
// The rule, in full: held only when the status read and the one decided both wait for the
// provisioned objects — Binding, no reason, the claim's generation observed, the message
// naming the objects not healthy yet and none of them Failed — and nothing else differs than
// the objects' health and messages and the Ready condition's message: the same outputs,
// secret, instance, inventory entries (so the inventory a release acts on is always the one
// written), and the same Ready condition. Measured from the Ready condition's last transition
// (when the claim began Binding), so no progress is shown later than the window after it
// happened; a change of an object's own kstatus message alone, which nothing but the
// inventory shows, inventory.DetailsHold windows after. Never held: the first status, a new generation,
// Bound, a failure (the phase, or an object Failed) and a recovery from one, outputs published
// or changed, a pass that retries or has more to do. A function of what was read and the time:
// a restart decides the same.
func (d *decision) hold() {
	window, read, next := d.o.ProgressHold, &d.o.Claim.Status, &d.Status
	if window <= 0 || d.Next != Done || d.Retry != nil || !d.o.Claim.DeletionTimestamp.IsZero() {
		return
	}
	generation := d.o.Claim.Generation
	if !waitsForObjects(read, generation) || !waitsForObjects(next, generation) || !onlyProgress(read, next) {
		return
	}
	ready := meta.FindStatusCondition(read.Conditions, scorev1b1.ClaimConditionReady)
	remaining := inventory.HoldLeft(ready.LastTransitionTime.Time, d.o.Now.Time, window, onlyObjectMessages(read, next))
	if remaining <= 0 {
		return
	}
	d.Status = *read.DeepCopy()
	if d.RequeueAfter <= 0 || remaining < d.RequeueAfter {
		d.RequeueAfter = remaining
	}
}

// onlyObjectMessages reports whether two statuses differ in nothing but their objects' own
// messages.
func onlyObjectMessages(a, b *scorev1b1.ResourceClaimStatus) bool {
	strip := func(s *scorev1b1.ResourceClaimStatus) *scorev1b1.ResourceClaimStatus {
		s = s.DeepCopy()
		inventory.WithoutProgress(s.Resources, nil, false)
		return s
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
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

// onlyProgress reports whether two statuses differ in nothing but the objects' health and
// messages and the messages that name them.
func onlyProgress(a, b *scorev1b1.ResourceClaimStatus) bool {
	strip := func(s *scorev1b1.ResourceClaimStatus) *scorev1b1.ResourceClaimStatus {
		s = s.DeepCopy()
		s.Message = ""
		inventory.WithoutProgress(s.Resources, s.Conditions, true)
		return s
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}
