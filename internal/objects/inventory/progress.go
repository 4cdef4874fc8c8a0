package inventory

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// The progress hold: a claim's status (claimdecision) and a plan's (plandecision) are not written
// again while they only report more progress of their objects becoming healthy — a claim
// Binding while its StatefulSet goes from "Replicas: 0/1" to "Ready: 0/1", a plan Planning
// while its Deployment goes from "Updated: 0/1" to "Available: 0/1" — until the next step
// (Bound, Projected) or until the window has passed since the status began waiting, whichever
// comes first: each step written once. The pass writes nothing and comes back when the window
// ends; the objects' watch brings it back sooner when they change again.
//
// The rule, in full (Hold): held only when the status read and the one decided both wait for
// their objects — the owner's rule: everything applied for the generation observed, the
// objects not all healthy and none Failed, no reason — and nothing else differs than the
// objects' health and messages, the conditions' messages and the status's message: the same
// inventory entries (so a prune or a release acts on the inventory written), the same
// outputs, the same conditions. Measured from when the status read began waiting (the owner's
// waiting condition's last transition), so no progress is shown later than the window after
// it happened; a change of an object's own kstatus message alone, which nothing but the
// inventory shows, DetailsHold windows after. Never held: the first status, a new generation,
// the next step, a failure and a recovery from one, and whatever the owner's pass adds (a
// retry, more to do, an event). A function of what was read and the time: a restart decides
// the same.

// HoldInput is what the progress hold of a status of type S decides from.
type HoldInput[S any] struct {
	// Read is the status as read, Next the one the pass decided.
	Read, Next S
	// Waits reports whether a status says its owner waits for its objects to become healthy,
	// and nothing else (the owner's rule).
	Waits func(S) bool
	// Since is when Read began waiting; Now the pass's time; Window the hold (0: none).
	Since, Now time.Time
	Window     time.Duration
	// Copy is a deep copy of a status and, in that copy, what progress alone changes: its
	// objects, its conditions and its message.
	Copy func(S) (S, []scorev1b1.AppliedObject, []metav1.Condition, *string)
}

// Hold is how long Next is held back, Read kept in its place: zero or less when Next is to be
// written (the rule above).
func Hold[S any](in HoldInput[S]) time.Duration {
	if in.Window <= 0 || !in.Waits(in.Read) || !in.Waits(in.Next) || !onlyProgress(in, true) {
		return 0
	}
	return HoldLeft(in.Since, in.Now, in.Window, onlyProgress(in, false))
}

// onlyProgress reports whether Read and Next differ in nothing but their objects' messages, and,
// with health, the objects' health, the conditions' messages and the status's message.
func onlyProgress[S any](in HoldInput[S], health bool) bool {
	strip := func(s S) S {
		c, objs, conditions, message := in.Copy(s)
		if health {
			*message = ""
		} else {
			conditions = nil
		}
		WithoutProgress(objs, conditions, health)
		return c
	}
	return equality.Semantic.DeepEqual(strip(in.Read), strip(in.Next))
}

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
