package plandecision

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

var began = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const window = 20 * time.Second

// dep and svc are the plan's Deployment, with a health and kstatus's message, and Service.
func dep(health, message string) scorev1b1.AppliedObject {
	o := obj("", "Deployment", "web", health)
	o.Message = message
	return o
}

func svc(health string) scorev1b1.AppliedObject { return obj("", "Service", "web", health) }

// applied is a pass at now that applied objects completely, holding progress for window.
func applied(p *scorev1b1.WorkloadPlan, now time.Time, objects ...scorev1b1.AppliedObject) Observed {
	return Observed{Plan: p, Now: now, ProgressHold: window, Applied: objects, Live: []*unstructured.Unstructured{deployment(0)}}
}

// firstWritten is the plan as the first pass, at began, left it: waiting for objects.
func firstWritten(objects ...scorev1b1.AppliedObject) *scorev1b1.WorkloadPlan {
	p := plan()
	p.Status = From(applied(plan(), began, objects...)).Status
	return p
}

// A plan whose objects only progress is written once, then Projected: each step's status is
// written once, not once per step of the objects' progress.
func TestProgressOfTheObjectsHeldUntilHealthy(t *testing.T) {
	first := []scorev1b1.AppliedObject{dep(scorev1b1.HealthInProgress, "Updated: 0/1"), svc(scorev1b1.HealthInProgress)}
	newGeneration := firstWritten(first...)
	newGeneration.Generation++
	failed := firstWritten(dep(scorev1b1.HealthFailed, "Progress deadline exceeded"), svc(scorev1b1.HealthCurrent))
	noWindow := applied(firstWritten(first...), began.Add(time.Second), dep(scorev1b1.HealthInProgress, "Available: 0/1"), svc(scorev1b1.HealthCurrent))
	noWindow.ProgressHold = 0
	stopped := applied(firstWritten(first...), began.Add(time.Second), dep(scorev1b1.HealthInProgress, "Available: 0/1"), svc(scorev1b1.HealthCurrent))
	stopped.Stopped, stopped.Err = Apply, policy
	// rolling is a new generation rolling out behind the previous one's pods, which serve.
	serving := []*unstructured.Unstructured{deployment(1)}
	rolling := plan(projectedAt(1))
	rolling.Status = From(Observed{Plan: rolling, Now: began, ProgressHold: window, Applied: first, Live: serving}).Status
	if c := meta.FindStatusCondition(rolling.Status.Conditions, scorev1b1.PlanConditionHealthy); c == nil || c.Reason != scorev1b1.PlanReasonUpdating {
		t.Fatalf("a new generation behind serving pods: Healthy %+v, want Updating", c)
	}
	rolled := applied(rolling, began.Add(2*time.Second), dep(scorev1b1.HealthInProgress, "Available: 1/2"), svc(scorev1b1.HealthInProgress))
	rolled.Live = serving
	for _, tc := range []struct {
		name  string
		in    Observed
		held  bool
		after time.Duration
	}{
		{"rolling out behind the previous version, the Deployment's message alone changes: held", rolled, true, 58 * time.Second},
		{"the Deployment's message alone changes: held three windows", applied(firstWritten(first...), began.Add(2*time.Second), dep(scorev1b1.HealthInProgress, "Available: 0/1"), svc(scorev1b1.HealthInProgress)), true, 58 * time.Second},
		{"the Service becomes healthy", applied(firstWritten(first...), began.Add(4*time.Second), dep(scorev1b1.HealthInProgress, "Updated: 0/1"), svc(scorev1b1.HealthCurrent)), true, 16 * time.Second},

		{"the window is over", applied(firstWritten(first...), began.Add(window), dep(scorev1b1.HealthInProgress, "Available: 0/1"), svc(scorev1b1.HealthCurrent)), false, 0},
		{"three windows are over for a message alone", applied(firstWritten(first...), began.Add(3*window), dep(scorev1b1.HealthInProgress, "Available: 0/1"), svc(scorev1b1.HealthInProgress)), false, 0},
		{"no window", noWindow, false, 0},
		{"healthy", applied(firstWritten(first...), began.Add(time.Second), dep(scorev1b1.HealthCurrent, ""), svc(scorev1b1.HealthCurrent)), false, 0},
		{"the first status", applied(plan(), began, first...), false, 0},
		{"a new generation", applied(newGeneration, began.Add(time.Second), first...), false, 0},
		{"an object failed", applied(firstWritten(first...), began.Add(time.Second), dep(scorev1b1.HealthFailed, "Progress deadline exceeded"), svc(scorev1b1.HealthCurrent)), false, 0},
		{"an object recovered", applied(failed, began.Add(time.Second), dep(scorev1b1.HealthInProgress, "Available: 0/1"), svc(scorev1b1.HealthCurrent)), false, 0},
		{"an object more", applied(firstWritten(first...), began.Add(time.Second), append(first, obj("", "ConfigMap", "web", scorev1b1.HealthInProgress))...), false, 0},
		{"a pass stopped by an error", stopped, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := From(tc.in)
			same := equality.Semantic.DeepEqual(d.Status, tc.in.Plan.Status)
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
