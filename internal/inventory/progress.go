package inventory

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// The progress hold's shared parts: the claim's (claimstatus) and the plan's (planstatus)
// statuses are held while they only report their objects' progress; each package decides when
// its status waits for its objects, these say what progress is and how long it is held.

// DetailsHold is how many windows a status whose only change is an object's own kstatus
// message (its health unchanged: a StatefulSet from "Replicas: 0/1" to "Ready: 0/1") is held:
// no condition or phase says it, nor the Workload, so it waits longer than a change they show
// — at the default window a minute, longer than a dependency takes to come up under load (at
// N=200, 15–30 s from its first pass), so that its last write is the final one.
const DetailsHold = 3

// WithoutProgress blanks, in place, what only progress changes: the objects' messages, their
// health too when health is set, and the conditions' messages.
func WithoutProgress(objs []scorev1b1.AppliedObject, conditions []metav1.Condition, health bool) {
	for i := range objs {
		objs[i].Message = ""
		if health {
			objs[i].Health = ""
		}
	}
	for i := range conditions {
		conditions[i].Message = ""
	}
}

// HoldLeft is what is left at now of a progress hold that began at since: window, or
// DetailsHold windows when the status changed only in its objects' own messages; zero or less
// when it is over.
func HoldLeft(since, now time.Time, window time.Duration, detailsOnly bool) time.Duration {
	if detailsOnly {
		window *= DetailsHold
	}
	return since.Add(window).Sub(now)
}
