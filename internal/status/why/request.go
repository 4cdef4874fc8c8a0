package why

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// What becomes of a WorkloadTrace, the request a tenant makes for a trace: the orchestrator
// answers it once, and removes it KeepAnswered after; a namespace holds at most
// scorev1b1.MaxWorkloadTraces answered or waiting, and those beyond are removed unanswered.

// KeepAnswered is how long an answered WorkloadTrace is kept for its asker to read it, unless
// the orchestrator is told otherwise (orchestrator.Options.TraceKeep, for tests).
const KeepAnswered = time.Minute

// Step is what the orchestrator does next with a WorkloadTrace.
type Step struct {
	// Remove deletes it: beyond its namespace's bound, or answered long enough ago.
	Remove bool
	// Answer computes and writes its answer.
	Answer bool
	// After is when to look at it again, once answered: its removal.
	After time.Duration
}

// StepFor decides what becomes of t, given its namespace's WorkloadTraces (t among them or
// not, as cached) at now. An answered request is removed keep after its answer. One not
// answered yet is answered unless MaxWorkloadTraces others are ahead of it, answered or created
// before it (by creation time, then name), and not being deleted: then it is removed. So a
// namespace that asks for many at once gets the first ones answered and the rest removed,
// whatever their names.
func StepFor(t *scorev1b1.WorkloadTrace, namespace []scorev1b1.WorkloadTrace, now time.Time, keep time.Duration) Step {
	if answered := meta.FindStatusCondition(t.Status.Conditions, scorev1b1.TraceConditionAnswered); answered != nil {
		left := answered.LastTransitionTime.Add(keep).Sub(now)
		if left <= 0 {
			return Step{Remove: true}
		}
		return Step{After: left}
	}
	ahead := 0
	for i := range namespace {
		o := &namespace[i]
		if o.UID == t.UID || !o.DeletionTimestamp.IsZero() {
			continue
		}
		if meta.FindStatusCondition(o.Status.Conditions, scorev1b1.TraceConditionAnswered) != nil || earlier(o, t) {
			ahead++
		}
	}
	if ahead >= scorev1b1.MaxWorkloadTraces {
		return Step{Remove: true}
	}
	return Step{Answer: true}
}

// earlier reports whether a was created before b: by creation time, then by name.
func earlier(a, b *scorev1b1.WorkloadTrace) bool {
	ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return a.Name < b.Name
}
