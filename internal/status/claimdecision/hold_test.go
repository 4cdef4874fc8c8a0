package claimdecision

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

const window = 20 * time.Second

// sts is the instance's StatefulSet with the health kstatus gives it and its message.
func sts(health, message string) scorev1b1.AppliedObject {
	return scorev1b1.AppliedObject{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "team", Name: "pg", Health: health, Message: message}
}

// svc is the instance's Service, with a health.
func svc(health string) scorev1b1.AppliedObject {
	return scorev1b1.AppliedObject{APIVersion: "v1", Kind: "Service", Namespace: "team", Name: "pg", Health: health}
}

// written is the status a first pass at now wrote for a run that applied objects: Binding
// while any is not healthy.
func written(objects ...scorev1b1.AppliedObject) func(*Observed) {
	return func(o *Observed) {
		first := From(observed(ran(outputsPlain, nil, objects...), published(nil, nil)))
		o.Claim.Status = first.Status
	}
}

// later is a pass after, holding progress for window.
func later(after time.Duration) func(*Observed) {
	return func(o *Observed) { o.Now, o.ProgressHold = metav1.NewTime(now.Add(after)), window }
}

// A claim Binding whose objects only progress is written once, then Bound: each step's status
// is written once, not once per step of the objects' progress.
func TestProgressOfTheObjectsHeldUntilBound(t *testing.T) {
	first := []scorev1b1.AppliedObject{live, svc(scorev1b1.HealthInProgress), sts(scorev1b1.HealthInProgress, "Replicas: 0/1")}
	for _, tc := range []struct {
		name  string
		in    Observed
		held  bool
		after time.Duration // the requeue when held
	}{
		{"a StatefulSet's message alone changes: held three windows", observed(written(first...), later(3*time.Second), ran(outputsPlain, nil, live, svc(scorev1b1.HealthInProgress), sts(scorev1b1.HealthInProgress, "Ready: 0/1")), published(nil, nil)),
			true, 57 * time.Second},
		{"a message alone, two windows on", observed(written(first...), later(2*window), ran(outputsPlain, nil, live, svc(scorev1b1.HealthInProgress), sts(scorev1b1.HealthInProgress, "Ready: 0/1")), published(nil, nil)),
			true, window},
		{"one object of two becomes healthy", observed(written(first...), later(5*time.Second), ran(outputsPlain, nil, live, svc(scorev1b1.HealthCurrent), sts(scorev1b1.HealthInProgress, "Ready: 0/1")), published(nil, nil)),
			true, 15 * time.Second},

		{"the window is over", observed(written(first...), later(window), ran(outputsPlain, nil, live, svc(scorev1b1.HealthCurrent), sts(scorev1b1.HealthInProgress, "Ready: 0/1")), published(nil, nil)), false, 0},
		{"three windows are over for a message alone", observed(written(first...), later(3*window), ran(outputsPlain, nil, live, svc(scorev1b1.HealthInProgress), sts(scorev1b1.HealthInProgress, "Ready: 0/1")), published(nil, nil)), false, 0},
		{"no window", observed(written(first...), later(time.Second), func(o *Observed) { o.ProgressHold = 0 }, ran(outputsPlain, nil, live, sts(scorev1b1.HealthInProgress, "Ready: 0/1"), svc(scorev1b1.HealthInProgress)), published(nil, nil)), false, 0},
		{"Bound", observed(written(first...), later(time.Second), ran(outputsPlain, nil, live, svc(scorev1b1.HealthCurrent), sts(scorev1b1.HealthCurrent, "")), published(nil, nil)), false, 0},
		{"the first status", observed(later(time.Second), ran(outputsPlain, nil, first...), published(nil, nil)), false, 0},
		{"a new generation", observed(written(first...), later(time.Second), func(o *Observed) { o.Claim.Generation++ }, ran(outputsPlain, nil, live, svc(scorev1b1.HealthInProgress), sts(scorev1b1.HealthInProgress, "Ready: 0/1")), published(nil, nil)), false, 0},
		{"an object failed", observed(written(first...), later(time.Second), ran(outputsPlain, nil, live, svc(scorev1b1.HealthInProgress), sts(scorev1b1.HealthFailed, "crash")), published(nil, nil)), false, 0},
		{"an object recovered", observed(written(live, svc(scorev1b1.HealthInProgress), sts(scorev1b1.HealthFailed, "crash")), later(time.Second), ran(outputsPlain, nil, first...), published(nil, nil)), false, 0},
		{"the outputs changed", observed(written(first...), later(time.Second), ran(map[string]any{"host": "other.team"}, nil, live, svc(scorev1b1.HealthInProgress), sts(scorev1b1.HealthInProgress, "Ready: 0/1")), published(nil, nil)), false, 0},
		{"an object more in the inventory", observed(written(first...), later(time.Second), ran(outputsPlain, nil, append(first, object("extra", "", scorev1b1.HealthInProgress))...), published(nil, nil)), false, 0},
		{"a pass that retries", observed(written(first...), later(time.Second), ran(outputsPlain, nil, live, svc(scorev1b1.HealthCurrent), sts(scorev1b1.HealthInProgress, "Ready: 0/1")), published(conflict, nil)), false, 0},
		{"an unreachable cluster said while Binding", observed(written(first...), later(time.Second), on("eu"), func(o *Observed) { o.Unreachable = noAnswer }), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := From(tc.in)
			same := equality.Semantic.DeepEqual(d.Status, tc.in.Claim.Status)
			switch {
			case tc.held && (!same || d.RequeueAfter != tc.after):
				t.Fatalf("not held for %v: requeue %v, status %+v", tc.after, d.RequeueAfter, d.Status)
			case !tc.held && same:
				t.Fatalf("held: %+v", d.Status)
			case !tc.held && d.RequeueAfter != 0:
				t.Fatalf("requeue %v", d.RequeueAfter)
			}
		})
	}
}
