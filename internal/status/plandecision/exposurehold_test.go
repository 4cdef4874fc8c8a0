package plandecision

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/exposure"
)

// endpoint is the Service's cluster DNS name, not reachable yet.
func endpoint(url string) exposure.Result {
	return exposure.Result{Exposures: []scorev1b1.Exposure{{URL: url, Reachable: ptr.To(false)}}}
}

const webURL = "http://web.team.svc.cluster.local:80"

// exposed is applied with the Workload's exposure as read (its status) and the endpoints the
// pass derived.
func exposed(in Observed, read scorev1b1.WorkloadExposureStatus, endpoints exposure.Result) Observed {
	in.Exposure = &Exposure{Status: read, Endpoints: endpoints}
	return in
}

// An exposure whose first status would only report an endpoint whose objects are becoming
// healthy is written once, with their health; when the window passes, with Provisioning.
func TestExposureHeldUntilHealthy(t *testing.T) {
	waiting := []scorev1b1.AppliedObject{dep(scorev1b1.HealthInProgress, "Updated: 0/1"), svc(scorev1b1.HealthCurrent)}
	healthy := []scorev1b1.AppliedObject{dep(scorev1b1.HealthCurrent, ""), svc(scorev1b1.HealthCurrent)}
	// published is what the first pass published without a window: Provisioning, the endpoint.
	first := applied(plan(), began, waiting...)
	first.ProgressHold = 0
	published := *From(exposed(first, scorev1b1.WorkloadExposureStatus{}, endpoint(webURL))).Exposure
	none := scorev1b1.WorkloadExposureStatus{}

	noWindow := exposed(applied(firstWritten(waiting...), began.Add(time.Second), waiting...), none, endpoint(webURL))
	noWindow.ProgressHold = 0
	newGeneration := firstWritten(waiting...)
	newGeneration.Generation++
	failed := firstWritten(dep(scorev1b1.HealthFailed, "Progress deadline exceeded"), svc(scorev1b1.HealthCurrent))
	stopped := exposed(applied(firstWritten(waiting...), began.Add(time.Second), waiting...), none, endpoint(webURL))
	stopped.Stopped, stopped.Err = Apply, policy
	failedPhase := firstWritten(waiting...)
	failedPhase.Status.Phase = scorev1b1.PlanPhaseFailed
	deleted := firstWritten(waiting...)
	deleted.DeletionTimestamp = &metav1.Time{Time: began}
	addressPending := endpoint(webURL)
	addressPending.Pending = map[string]string{scorev1b1.ExposureConditionLBPending: "Service web waits for an address."}
	foreign := scorev1b1.WorkloadExposureStatus{Conditions: []metav1.Condition{{Type: "DNSNotReady", Status: metav1.ConditionFalse, Reason: "Other"}}}
	reachable := exposure.Result{Exposures: []scorev1b1.Exposure{{URL: webURL, Reachable: ptr.To(true)}}}
	degraded := Observed{Plan: plan(projectedAt(2)), Now: began, ProgressHold: window, Applied: waiting, Live: []*unstructured.Unstructured{deployment(1)}}
	later := func(after time.Duration, objects ...scorev1b1.AppliedObject) Observed {
		return applied(firstWritten(waiting...), began.Add(after), objects...)
	}

	for _, tc := range []struct {
		name string
		in   Observed
		// held: no exposure write, the pass back after it. Else want is the health condition
		// True in the exposure written, "" none written or the one read unchanged.
		held  bool
		after time.Duration
		want  string
	}{
		{"the first pass: an endpoint while the objects become healthy", exposed(applied(plan(), began, waiting...), none, endpoint(webURL)), true, window, ""},
		{"a later pass within the window", exposed(later(5*time.Second, waiting...), none, endpoint(webURL)), true, 15 * time.Second, ""},
		{"the endpoint turned reachable within the window", exposed(later(5*time.Second, waiting...), none, reachable), true, 15 * time.Second, ""},
		{"no endpoint yet", exposed(applied(plan(), began, waiting...), none, exposure.Result{}), true, window, ""},

		{"healthy within the window: written with its health", exposed(later(8*time.Second, healthy...), none, endpoint(webURL)), false, 0, scorev1b1.ExposureConditionHealthy},
		{"the window is over: written as before", exposed(later(window, waiting...), none, endpoint(webURL)), false, 0, scorev1b1.ExposureConditionProvisioning},
		{"no window", noWindow, false, 0, scorev1b1.ExposureConditionProvisioning},
		{"published: the reachable bit waits for health as before", exposed(later(time.Second, waiting...), published, reachable), false, 0, ""},
		{"published: another URL", exposed(later(time.Second, waiting...), published, endpoint("http://other.team.svc.cluster.local:80")), false, 0, scorev1b1.ExposureConditionProvisioning},
		{"published: a new generation", exposed(applied(newGeneration, began.Add(time.Second), waiting...), published, endpoint(webURL)), false, 0, scorev1b1.ExposureConditionProvisioning},
		{"a condition of another writer", exposed(later(time.Second, waiting...), foreign, endpoint(webURL)), false, 0, scorev1b1.ExposureConditionProvisioning},
		{"an address pending (NetworkUnavailable)", exposed(later(time.Second, waiting...), none, addressPending), false, 0, scorev1b1.ExposureConditionProvisioning},
		{"an object failed", exposed(later(time.Second, dep(scorev1b1.HealthFailed, "Progress deadline exceeded"), svc(scorev1b1.HealthCurrent)), none, endpoint(webURL)), false, 0, scorev1b1.ExposureConditionProvisioning},
		{"recovered from a failed object", exposed(applied(failed, began.Add(time.Second), waiting...), none, endpoint(webURL)), false, 0, scorev1b1.ExposureConditionProvisioning},
		{"recovered from a failed plan", exposed(applied(failedPhase, began.Add(time.Second), waiting...), none, endpoint(webURL)), false, 0, scorev1b1.ExposureConditionProvisioning},
		{"degraded", exposed(degraded, none, endpoint(webURL)), false, 0, scorev1b1.ExposureConditionDegraded},
		{"a pass stopped by an error", stopped, false, 0, ""},
		{"the plan being deleted", exposed(applied(deleted, began.Add(time.Second), waiting...), none, endpoint(webURL)), false, 0, scorev1b1.ExposureConditionProvisioning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := From(tc.in)
			switch {
			case tc.held && (d.Exposure != nil || d.RequeueAfter != tc.after):
				t.Fatalf("not held for %v: requeue %v, exposure %+v", tc.after, d.RequeueAfter, d.Exposure)
			case tc.held:
			case tc.want == "" && d.Exposure != nil && !equality.Semantic.DeepEqual(*d.Exposure, tc.in.Exposure.Status):
				t.Fatalf("an exposure write: %+v", d.Exposure)
			case tc.want == "":
			case d.Exposure == nil:
				t.Fatalf("held: requeue %v", d.RequeueAfter)
			case !meta.IsStatusConditionTrue(d.Exposure.Conditions, tc.want) || len(d.Exposure.Exposures) != 1:
				t.Fatalf("exposure %+v, want %s True and the endpoint", d.Exposure, tc.want)
			}
		})
	}
}

// An exposure's first status is dated from the plan's Healthy condition (when its objects
// began becoming healthy), so that one the hold delayed is not new to the orchestrator's own
// hold of an endpoint; a later change is dated when it is written.
func TestFirstPublicationDatedFromThePlan(t *testing.T) {
	waiting := []scorev1b1.AppliedObject{dep(scorev1b1.HealthInProgress, "Updated: 0/1"), svc(scorev1b1.HealthCurrent)}
	released := From(exposed(applied(firstWritten(waiting...), began.Add(window), waiting...), scorev1b1.WorkloadExposureStatus{}, endpoint(webURL))).Exposure
	if released == nil || len(released.Conditions) == 0 {
		t.Fatalf("not written when the window is over: %+v", released)
	}
	for _, c := range released.Conditions {
		if !c.LastTransitionTime.Time.Equal(began) {
			t.Fatalf("%s dated %v, want %v (the plan began waiting)", c.Type, c.LastTransitionTime, began)
		}
	}
	healthy := From(exposed(applied(firstWritten(waiting...), began.Add(2*window), dep(scorev1b1.HealthCurrent, ""), svc(scorev1b1.HealthCurrent)), *released, endpoint(webURL))).Exposure
	if c := meta.FindStatusCondition(healthy.Conditions, scorev1b1.ExposureConditionHealthy); c == nil || c.Status != metav1.ConditionTrue || c.LastTransitionTime.Time.Equal(began) {
		t.Fatalf("healthy later: %+v", c)
	}
	if c := meta.FindStatusCondition(healthy.Conditions, scorev1b1.ExposureConditionLBPending); c == nil || !c.LastTransitionTime.Time.Equal(began) {
		t.Fatalf("a condition that did not change: %+v", c)
	}
}
