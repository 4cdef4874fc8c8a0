package workloaddecision

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// hold is the window the tests hold progress for.
const hold = 20 * time.Second

// at is t0 + seconds.
func at(seconds int) metav1.Time {
	return metav1.NewTime(now.Add(time.Duration(seconds) * time.Second))
}

// journey is one Workload with a postgres dependency on its way to Ready, the sources changed
// step by step at injected times, each pass deciding with the window.
type journey struct {
	t *testing.T
	o Observed
	// statuses counts the statuses written; events the events recorded.
	statuses int
	events   []string
}

// begin is the Workload as created at t0, its claim created by the first pass.
func begin(t *testing.T) *journey {
	o := fresh(t, withResource("db", "postgres"), withVar("DB_HOST", "${resources.db.host}"), withFinalizer)
	o.ProgressHold = hold
	c := claimFor(t, o, "db")
	c.CreationTimestamp = at(0)
	o.Claims = []scorev1b1.ResourceClaim{c}
	return &journey{t: t, o: o}
}

// claim plays the provisioner: the claim's phase and outputs, its Ready condition changed at
// changed when the phase does.
func (j *journey) claim(phase scorev1b1.ClaimPhase, changed metav1.Time) {
	c := &j.o.Claims[0]
	c.Status.Phase, c.Status.ObservedGeneration = phase, c.Generation
	if phase != scorev1b1.ClaimPhasePending {
		c.Status.OutputsAvailable, c.Status.Outputs = true, bindingOutputs
	}
	status := metav1.ConditionFalse
	if phase == scorev1b1.ClaimPhaseBound {
		status = metav1.ConditionTrue
	}
	if phase == scorev1b1.ClaimPhaseFailed {
		c.Status.Reason, c.Status.OutputsAvailable, c.Status.Outputs = scorev1b1.ReasonClaimFailed, false, nil
	}
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: scorev1b1.ClaimConditionReady, Status: status, Reason: string(phase), LastTransitionTime: changed})
}

// plan plays the runtime on the plan: its phase for its generation, its conditions changed at
// changed.
func (j *journey) plan(phase scorev1b1.PlanPhase, changed metav1.Time) {
	p := j.o.Plan
	p.Status = scorev1b1.WorkloadPlanStatus{Phase: phase, ObservedGeneration: p.Generation,
		Conditions: []metav1.Condition{{Type: scorev1b1.PlanConditionApplied, Status: metav1.ConditionTrue, Reason: scorev1b1.PlanReasonApplied, LastTransitionTime: changed}}}
}

// expose plays the runtime on the exposure: it publishes the endpoint, its conditions
// changed at changed.
func (j *journey) expose(changed metav1.Time, healthy bool) {
	e := j.o.Exposure
	e.Status = scorev1b1.WorkloadExposureStatus{ObservedWorkloadGeneration: j.o.Workload.Generation, Exposures: []scorev1b1.Exposure{{URL: endpoint}},
		Conditions: []metav1.Condition{{Type: scorev1b1.ExposureConditionProvisioning, Status: metav1.ConditionTrue, Reason: "Health", LastTransitionTime: changed}}}
	if healthy {
		e.Status.Conditions[0] = metav1.Condition{Type: scorev1b1.ExposureConditionHealthy, Status: metav1.ConditionTrue, Reason: "Health", LastTransitionTime: changed}
	}
}

// pass runs a pass at when, as the controller does: the writes it names are made (the
// exposure and the plan it creates are observed from then on), then the status, when one is
// decided, is written.
func (j *journey) pass(when metav1.Time) Decision {
	j.t.Helper()
	o := &j.o
	o.Now = when
	o.ExposureWritten, o.PlanWritten, o.ClaimsWritten = nil, nil, nil
	for range 10 {
		d := From(*o)
		switch d.Next {
		case Done:
			if d.Status != nil && !equality.Semantic.DeepEqual(o.Workload.Status, *d.Status) {
				j.statuses++
				o.Workload.Status = *d.Status
				for _, e := range d.Events {
					j.events = append(j.events, e.Type+"/"+e.Reason)
				}
			}
			return d
		case WriteExposure:
			o.Exposure = exposureOf(o.Workload, d.Exposure.Spec, endpoint)
			o.Exposure.Status, o.Exposure.CreationTimestamp = scorev1b1.WorkloadExposureStatus{}, when
			o.ExposureWritten = &Written{}
		case WritePlan:
			o.Plan = planOf(o.Workload, d.Plan.Spec)
			o.Plan.Status, o.Plan.CreationTimestamp = scorev1b1.WorkloadPlanStatus{}, when
			o.PlanWritten = &Written{}
		case WriteClaims:
			o.ClaimsWritten = map[string]error{}
			for _, cw := range d.Claims {
				o.ClaimsWritten[cw.Name] = nil
			}
		default:
			j.t.Fatalf("unexpected write %s", d.Next)
		}
	}
	j.t.Fatal("no end")
	return Decision{}
}

// ready is Ready's "status/reason" as last written.
func (j *journey) ready() string {
	r := meta.FindStatusCondition(j.o.Workload.Status.Conditions, scorev1b1.ConditionReady)
	return fmt.Sprintf("%s/%s", r.Status, r.Reason)
}

var bindingOutputs = func() *scorev1b1.ResourceClaim {
	c := &scorev1b1.ResourceClaim{}
	bound(`{"host":"db.team"}`)(c)
	return c
}().Status.Outputs

// held fails unless the pass held its status back and comes back after want.
func held(t *testing.T, d Decision, want time.Duration) {
	t.Helper()
	if d.Status != nil || d.Events != nil {
		t.Fatalf("the status was written: %+v", d.Status.Conditions)
	}
	if d.RequeueAfter != want {
		t.Fatalf("back after %s, want %s", d.RequeueAfter, want)
	}
}

// written fails unless the pass wrote a status.
func written(t *testing.T, d Decision) {
	t.Helper()
	if d.Status == nil {
		t.Fatalf("held for %s, want the status written", d.RequeueAfter)
	}
	if d.RequeueAfter != 0 {
		t.Fatalf("back after %s with the status written", d.RequeueAfter)
	}
}

// Every step comes within the window of the one before, so the Workload goes from created to
// Ready in two status writes (the first, Ready), one event (Ready).
func TestProgressHeldUntilTheNextStep(t *testing.T) {
	j := begin(t)
	written(t, j.pass(at(0))) // the first status is never held: the claim Pending
	if j.ready() != "False/ClaimPending" {
		t.Fatalf("first status %s", j.ready())
	}
	j.claim(scorev1b1.ClaimPhaseBinding, at(2))
	held(t, j.pass(at(3)), 19*time.Second) // from the claim's own transition, not the pass
	j.claim(scorev1b1.ClaimPhaseBound, at(8))
	held(t, j.pass(at(9)), 19*time.Second) // claims ready and the plan written: from the claim's Bound
	if j.o.Plan == nil {
		t.Fatal("the plan waits for the status")
	}
	j.plan(scorev1b1.PlanPhasePlanning, at(10))
	held(t, j.pass(at(10)), 18*time.Second)
	j.expose(at(11), false) // the endpoint before the workload is healthy
	held(t, j.pass(at(12)), 16*time.Second)
	j.plan(scorev1b1.PlanPhaseProjected, at(14))
	j.expose(at(14), true)
	written(t, j.pass(at(15))) // Ready is never held
	if j.ready() != "True/Succeeded" || j.o.Workload.Status.Endpoint == nil || j.o.Workload.Status.Claims[0].Phase != scorev1b1.ClaimPhaseBound {
		t.Fatalf("Ready %s, endpoint %v, claims %+v", j.ready(), j.o.Workload.Status.Endpoint, j.o.Workload.Status.Claims)
	}
	if j.statuses != 2 || fmt.Sprint(j.events) != "[Normal/Succeeded]" {
		t.Fatalf("%d statuses and events %v, want 2 and one Ready", j.statuses, j.events)
	}
	// At rest: nothing is held or written.
	if d := j.pass(at(100)); d.RequeueAfter != 0 || j.statuses != 2 {
		t.Fatalf("at rest: back after %s, %d statuses", d.RequeueAfter, j.statuses)
	}
}

// A step that does not come within the window: the progress is written when it ends, measured
// from the source's transition, so nothing is shown later than the window after it happened.
func TestProgressReleasedOnTime(t *testing.T) {
	j := begin(t)
	j.pass(at(0))
	j.claim(scorev1b1.ClaimPhaseBinding, at(2))
	held(t, j.pass(at(21)), time.Second)
	written(t, j.pass(at(22)))
	if s := j.o.Workload.Status.Claims[0]; s.Phase != scorev1b1.ClaimPhaseBinding || j.ready() != "False/ClaimPending" {
		t.Fatalf("claims %+v, Ready %s", s, j.ready())
	}
	// A claim that says nothing of when it changed is measured from its creation.
	j = begin(t)
	j.pass(at(0))
	j.claim(scorev1b1.ClaimPhaseBinding, at(2))
	j.o.Claims[0].Status.Conditions = nil
	held(t, j.pass(at(5)), 15*time.Second)
	// A source stamped later than the pass (another clock) is held no longer than the window.
	j.claim(scorev1b1.ClaimPhaseBinding, at(60))
	held(t, j.pass(at(5)), hold)
	// Without a window every step is written.
	j.o.ProgressHold = 0
	written(t, j.pass(at(5)))
}

// What is never held, each from a status the window could otherwise hold.
func TestProgressNeverHeld(t *testing.T) {
	// deploying is a journey whose last status says the workload is being deployed.
	deploying := func(t *testing.T) *journey {
		j := begin(t)
		j.o.ProgressHold = 0
		j.pass(at(0))
		j.claim(scorev1b1.ClaimPhaseBound, at(1))
		j.pass(at(1))
		j.plan(scorev1b1.PlanPhasePlanning, at(2))
		j.pass(at(2))
		j.o.ProgressHold = hold
		if j.ready() != "False/RuntimeProvisioning" {
			t.Fatalf("deploying: %s", j.ready())
		}
		return j
	}
	for _, c := range []struct {
		name   string
		change func(j *journey)
		ready  string
	}{
		{"the first status", func(j *journey) {
			*j = *begin(j.t)
			j.claim(scorev1b1.ClaimPhaseBinding, at(2))
		}, "False/ClaimPending"},
		{"Ready", func(j *journey) {
			j.plan(scorev1b1.PlanPhaseProjected, at(3))
		}, "True/Succeeded"},
		{"a failure of a dependency", func(j *journey) {
			j.claim(scorev1b1.ClaimPhaseFailed, at(3))
		}, "False/ClaimFailed"},
		{"a failure of the runtime", func(j *journey) {
			j.plan(scorev1b1.PlanPhaseFailed, at(3))
			j.o.Plan.Status.Reason = scorev1b1.ReasonQuotaExceeded
		}, "False/QuotaExceeded"},
		{"a recovery from a failure", func(j *journey) {
			j.claim(scorev1b1.ClaimPhaseFailed, at(3))
			j.pass(at(3))
			j.claim(scorev1b1.ClaimPhaseBound, at(4))
			j.plan(scorev1b1.PlanPhasePlanning, at(4))
		}, "False/RuntimeProvisioning"},
		{"a new generation", func(j *journey) {
			j.o.Workload.Generation++
		}, "False/RuntimeProvisioning"},
		{"a reconcile request", func(j *journey) {
			withAnnotation(scorev1b1.AnnotationReconcileRequestedAt, "now")(j.o.Workload)
			j.o.Claims[0].Annotations = map[string]string{scorev1b1.AnnotationReconcileRequestedAt: "now"}
			j.o.Plan.Annotations = map[string]string{scorev1b1.AnnotationReconcileRequestedAt: "now"}
		}, "False/RuntimeProvisioning"},
		{"a loss of Ready", func(j *journey) {
			j.plan(scorev1b1.PlanPhaseProjected, at(3))
			j.pass(at(3))
			j.claim(scorev1b1.ClaimPhasePending, at(4))
		}, "False/ClaimPending"},
		{"the Workload being deleted", func(j *journey) {
			beingDeleted(j.o.Workload)
		}, "False/ClaimPending"},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := deploying(t)
			c.change(j)
			d := j.pass(at(5))
			written(t, d)
			if j.ready() != c.ready {
				t.Fatalf("Ready %s, want %s", j.ready(), c.ready)
			}
		})
	}
}

// A dependency whose definition changed is provisioned again while the Workload's
// running version keeps serving: the Workload stays Ready, says what is being updated, and
// records no event; the window does not apply to a Ready Workload.
func TestDependencyUpdateKeepsReady(t *testing.T) {
	j := begin(t)
	j.o.ProgressHold = 0
	j.pass(at(0))
	j.claim(scorev1b1.ClaimPhaseBound, at(1))
	j.pass(at(1))
	j.plan(scorev1b1.PlanPhaseProjected, at(2))
	j.expose(at(2), true)
	j.pass(at(2))
	j.o.ProgressHold, j.events = hold, nil
	if j.ready() != "True/Succeeded" {
		t.Fatalf("not Ready: %s", j.ready())
	}
	plan := j.o.Plan
	j.claim(scorev1b1.ClaimPhaseBinding, at(10)) // the provisioner applies the new definition
	written(t, j.pass(at(10)))
	r := meta.FindStatusCondition(j.o.Workload.Status.Conditions, scorev1b1.ConditionReady)
	c := meta.FindStatusCondition(j.o.Workload.Status.Conditions, scorev1b1.ConditionClaimsReady)
	if j.ready() != "True/Succeeded" || r.Message != "The workload is ready; a dependency is being updated." || c.Message != "All dependencies are ready; being updated: db." {
		t.Fatalf("Ready %s %q, ClaimsReady %q", j.ready(), r.Message, c.Message)
	}
	if j.o.Plan != plan {
		t.Fatal("the plan was written again")
	}
	j.claim(scorev1b1.ClaimPhaseBound, at(20))
	written(t, j.pass(at(20)))
	if r := meta.FindStatusCondition(j.o.Workload.Status.Conditions, scorev1b1.ConditionReady); r.Status != metav1.ConditionTrue || r.Message != "The workload is ready." {
		t.Fatalf("Ready %+v", r)
	}
	if len(j.events) != 0 {
		t.Fatalf("events %v through a dependency's update", j.events)
	}
}
