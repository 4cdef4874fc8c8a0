package workloadstatus

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/termtest"
)

func TestReady(t *testing.T) {
	ok := cond(metav1.ConditionTrue, scorev1b1.ReasonSucceeded, "ok")
	cases := []struct {
		name       string
		c          Conditions
		wantStatus metav1.ConditionStatus
		wantReason scorev1b1.Reason
	}{
		{"all true", Conditions{ok, ok, ok}, metav1.ConditionTrue, scorev1b1.ReasonSucceeded},
		{"degraded is ready", Conditions{ok, ok, Runtime(metav1.ConditionTrue, scorev1b1.ReasonRuntimeDegraded)}, metav1.ConditionTrue, scorev1b1.ReasonRuntimeDegraded},
		{"inputs first", Conditions{SpecInvalid("x.", 0), WaitingForClaims(), ProjectionError()}, metav1.ConditionFalse, scorev1b1.ReasonSpecInvalid},
		{"then claims", Conditions{ok, cond(metav1.ConditionFalse, scorev1b1.ReasonClaimFailed, "m"), ProjectionError()}, metav1.ConditionFalse, scorev1b1.ReasonClaimFailed},
		{"then runtime", Conditions{ok, ok, ProjectionError()}, metav1.ConditionFalse, scorev1b1.ReasonProjectionError},
		{"unknown runtime is not ready", Conditions{ok, ok, Provisioning()}, metav1.ConditionFalse, scorev1b1.ReasonRuntimeProvisioning},
		{"an update rolling out behind what serves is ready", Conditions{ok, ok, RollingOut()}, metav1.ConditionTrue, scorev1b1.ReasonSucceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Ready(tc.c)
			if r.Status != tc.wantStatus || r.Reason != tc.wantReason || r.Message == "" {
				t.Fatalf("got %+v", r)
			}
		})
	}
}

func TestClaims(t *testing.T) {
	cases := []struct {
		name       string
		states     []ClaimState
		wantStatus metav1.ConditionStatus
		wantReason scorev1b1.Reason
		wantMsg    string
	}{
		{"no dependencies", nil, "True", scorev1b1.ReasonSucceeded, msgNoDependencies},
		{"all bound", []ClaimState{{Key: "db", Phase: "Bound", OutputsAvailable: true}}, "True", scorev1b1.ReasonSucceeded, msgAllDependencies},
		{"bound without outputs is pending", []ClaimState{{Key: "db", Phase: "Bound"}}, "False", scorev1b1.ReasonClaimPending, "Waiting for 1 of 1 dependencies: db."},
		{"pending and binding", []ClaimState{{Key: "db", Phase: "Binding"}, {Key: "cache", Phase: ""}, {Key: "q", Phase: "Bound", OutputsAvailable: true}}, "False", scorev1b1.ReasonClaimPending, "Waiting for 2 of 3 dependencies: cache, db."},
		{"failed gives ClaimFailed", []ClaimState{{Key: "db", Phase: "Failed", Reason: "Boom"}, {Key: "cache", Phase: "Binding"}}, "False", scorev1b1.ReasonClaimFailed, `Dependency "db" could not be provisioned.`},
		{"failed keeps an abstract reason", []ClaimState{{Key: "db", Phase: "Failed", Reason: scorev1b1.ReasonQuotaExceeded}}, "False", scorev1b1.ReasonQuotaExceeded, `Dependency "db" exceeds a quota.`},
		{"a denied write", []ClaimState{{Key: "db", Denied: scorev1b1.ReasonPolicyViolation}}, "False", scorev1b1.ReasonPolicyViolation, `A platform policy denied dependency "db".`},
		{"waiting for another's outputs", []ClaimState{{Key: "route", WaitingFor: []string{"dns"}}}, "False", scorev1b1.ReasonClaimPending, "Waiting for 1 of 1 dependencies: route."},
		// A dependency provisioned again (its definition changed) while it serves.
		{"ready and being updated with its outputs published", []ClaimState{{Key: "db", Phase: "Binding", OutputsAvailable: true, WasReady: true}, {Key: "q", Phase: "Bound", OutputsAvailable: true}},
			"True", scorev1b1.ReasonSucceeded, "All dependencies are ready; being updated: db."},
		{"being updated without its outputs is pending", []ClaimState{{Key: "db", Phase: "Binding", WasReady: true}}, "False", scorev1b1.ReasonClaimPending, "Waiting for 1 of 1 dependencies: db."},
		{"binding for the first time is pending", []ClaimState{{Key: "db", Phase: "Binding", OutputsAvailable: true}}, "False", scorev1b1.ReasonClaimPending, "Waiting for 1 of 1 dependencies: db."},
		{"one updated, another pending: pending", []ClaimState{{Key: "db", Phase: "Binding", OutputsAvailable: true, WasReady: true}, {Key: "cache", Phase: "Binding"}},
			"False", scorev1b1.ReasonClaimPending, "Waiting for 1 of 2 dependencies: cache."},
		{"ready before, failed now", []ClaimState{{Key: "db", Phase: "Failed", WasReady: true}}, "False", scorev1b1.ReasonClaimFailed, `Dependency "db" could not be provisioned.`},
		// A rollout moves a ready claim to its new revision (a new spec the
		// provisioner has not taken yet); the outputs it last published still stand.
		{"ready, a new spec not taken yet, Bound under the previous one: being updated", []ClaimState{{Key: "db", Phase: "Bound", OutputsAvailable: true, WasReady: true, Respecified: true}},
			"True", scorev1b1.ReasonSucceeded, "All dependencies are ready; being updated: db."},
		{"ready, a new spec not taken yet, Binding under the previous one: being updated", []ClaimState{{Key: "db", Phase: "Binding", OutputsAvailable: true, WasReady: true, Respecified: true}},
			"True", scorev1b1.ReasonSucceeded, "All dependencies are ready; being updated: db."},
		{"a new spec not taken yet, never ready: pending", []ClaimState{{Key: "db", Phase: "Bound", OutputsAvailable: true, Respecified: true}},
			"False", scorev1b1.ReasonClaimPending, "Waiting for 1 of 1 dependencies: db."},
		{"a new spec not taken yet, its outputs not published: pending", []ClaimState{{Key: "db", Phase: "Pending", WasReady: true, Respecified: true}},
			"False", scorev1b1.ReasonClaimPending, "Waiting for 1 of 1 dependencies: db."},
		{"a Bound claim ready before, its spec unchanged: simply ready", []ClaimState{{Key: "db", Phase: "Bound", OutputsAvailable: true, WasReady: true}},
			"True", scorev1b1.ReasonSucceeded, msgAllDependencies},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, c := Claims(tc.states)
			if c.Status != tc.wantStatus || c.Reason != tc.wantReason || c.Message != tc.wantMsg {
				t.Fatalf("got %+v", c)
			}
		})
	}
	sums, _ := Claims([]ClaimState{{Key: "route", WaitingFor: []string{"dns"}}})
	if sums[0].Message != `Waiting for the outputs of "dns".` || sums[0].Phase != scorev1b1.ClaimPhasePending {
		t.Fatalf("summary %+v", sums[0])
	}
	// A claim being updated under a new spec says so, as one Binding again does: the next
	// pass reads from its reason that it was ready.
	sums, _ = Claims([]ClaimState{{Key: "db", Phase: scorev1b1.ClaimPhaseBound, OutputsAvailable: true, WasReady: true, Respecified: true}})
	if s := sums[0]; s.Phase != scorev1b1.ClaimPhaseBinding || s.Reason != scorev1b1.ReasonSucceeded || s.Message != msgClaimUpdating || !s.OutputsAvailable {
		t.Fatalf("summary of a claim being updated under a new spec %+v", s)
	}
}

func TestDeployable(t *testing.T) {
	published := ClaimState{Key: "db", Phase: scorev1b1.ClaimPhaseBinding, OutputsAvailable: true}
	bound := ClaimState{Key: "cache", Phase: scorev1b1.ClaimPhaseBound, OutputsAvailable: true}
	for _, tc := range []struct {
		name         string
		states       []ClaimState
		waitForReady bool
		want         bool
	}{
		{"no dependencies", nil, false, true},
		{"every dependency bound", []ClaimState{bound}, true, true},
		{"outputs published while becoming healthy", []ClaimState{published, bound}, false, true},
		{"the same, waiting for healthy dependencies", []ClaimState{published, bound}, true, false},
		{"one without its outputs", []ClaimState{published, {Key: "q", Phase: scorev1b1.ClaimPhaseBinding}}, false, false},
		{"one not created", []ClaimState{published, {Key: "q", Phase: scorev1b1.ClaimPhasePending}}, false, false},
		{"one failed", []ClaimState{published, {Key: "q", Phase: scorev1b1.ClaimPhaseFailed}}, false, false},
		{"one denied", []ClaimState{published, {Key: "q", Denied: scorev1b1.ReasonPolicyViolation, OutputsAvailable: true}}, false, false},
		{"one waiting for another's outputs", []ClaimState{published, {Key: "route", WaitingFor: []string{"dns"}}}, false, false},
		// Being updated counts as ready, but its outputs are the previous spec's.
		{"one with a new spec not taken yet, being updated", []ClaimState{bound, {Key: "db", Phase: scorev1b1.ClaimPhaseBound, OutputsAvailable: true, WasReady: true, Respecified: true}}, true, false},
		{"the same, not waiting for healthy dependencies", []ClaimState{bound, {Key: "db", Phase: scorev1b1.ClaimPhaseBound, OutputsAvailable: true, WasReady: true, Respecified: true}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, claims := Claims(tc.states)
			if got := Deployable(tc.states, claims, tc.waitForReady); got != tc.want {
				t.Fatalf("got %v", got)
			}
		})
	}
}

func TestApplyKeepsTransitionTimes(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Hour))
	c := Conditions{InputsValid(), WaitingForClaims(), WaitingForClaims()}
	first := Apply(nil, c, 1, t0)
	second := Apply(first, c, 2, t1)
	for _, cond := range second {
		if !cond.LastTransitionTime.Equal(&t0) || cond.ObservedGeneration != 2 {
			t.Fatalf("%s: %+v", cond.Type, cond)
		}
	}
	c.ClaimsReady = cond(metav1.ConditionTrue, scorev1b1.ReasonSucceeded, msgAllDependencies)
	third := Apply(second, c, 2, t1)
	if got := meta.FindStatusCondition(third, scorev1b1.ConditionClaimsReady); !got.LastTransitionTime.Equal(&t1) {
		t.Fatalf("a changed status moves the time: %+v", got)
	}
	if tr := Transitions(second, third); len(tr) != 1 || tr[0].Type != scorev1b1.ConditionClaimsReady {
		t.Fatalf("transitions %+v", tr)
	}
	if tr := Transitions(third, third); len(tr) != 0 {
		t.Fatalf("no change, no transition: %+v", tr)
	}
	if third[0].Type != scorev1b1.ConditionInputsValid || third[3].Type != scorev1b1.ConditionReady {
		t.Fatalf("order %v", third)
	}
}

// Every message the package can produce is neutral.
func TestMessagesAreNeutral(t *testing.T) {
	var all []string
	add := func(c Condition) { all = append(all, c.Message) }
	add(InputsValid())
	add(SpecInvalid("spec.containers.main.variables.DB: The placeholder ${resources.db.host} names resource \"db\", which is not declared.", 2))
	add(BlockedByInputs())
	add(AwaitingConfig())
	add(WaitingForClaims())
	add(ProjectionError())
	add(Provisioning())
	add(Deleting([]string{"db", "cache"}))
	add(ObjectConflict())
	add(NamespaceDeleting())
	for _, r := range scorev1b1.Reasons {
		add(Runtime(metav1.ConditionFalse, r))
		add(Denied(r))
		_, c := Claims([]ClaimState{{Key: "db", Phase: "Failed", Reason: r}})
		add(c)
		_, c = Claims([]ClaimState{{Key: "db", Denied: r}})
		add(c)
	}
	for _, p := range []scorev1b1.ClaimPhase{"", "Pending", "Binding", "Bound"} {
		sums, c := Claims([]ClaimState{{Key: "db", Phase: p}, {Key: "r", WaitingFor: []string{"db"}}})
		add(c)
		for _, s := range sums {
			all = append(all, s.Message)
		}
	}
	_, c := Claims([]ClaimState{{Key: "db", Phase: "Bound", OutputsAvailable: true}})
	add(c)
	_, c = Claims(nil)
	add(c)
	sums, c := Claims([]ClaimState{{Key: "db", Phase: "Binding", OutputsAvailable: true, WasReady: true}})
	add(c)
	all = append(all, sums[0].Message)
	add(Ready(Conditions{InputsValid(), c, Runtime(metav1.ConditionTrue, scorev1b1.ReasonSucceeded)}))
	add(Ready(Conditions{InputsValid(), InputsValid(), Runtime(metav1.ConditionTrue, scorev1b1.ReasonSucceeded)}))
	add(Ready(Conditions{InputsValid(), InputsValid(), Runtime(metav1.ConditionTrue, scorev1b1.ReasonRuntimeDegraded)}))
	for _, m := range all {
		if m == "" {
			t.Errorf("an empty message")
		}
		if n := RuntimeNoun(m); n != "" {
			t.Errorf("message %q names the runtime noun %q", m, n)
		}
	}
	if ProjectionError().Message != "One or more required outputs are not resolved." {
		t.Errorf("the projection message is fixed by the lifecycle document")
	}
}

func TestRuntimeNounCatchesNouns(t *testing.T) {
	for _, bad := range []string{"The Deployment is not ready.", "Pod crashloop", "waiting for Service"} {
		if RuntimeNoun(bad) == "" {
			t.Errorf("%q slipped through", bad)
		}
	}
}

// Stalled follows Ready: True with Ready's reason and message while the Workload waits for a
// person, absent while it converges by itself or is Ready (kstatus reads it: Failed, not
// InProgress).
func TestStalledFollowsReady(t *testing.T) {
	now := metav1.Now()
	for _, reason := range scorev1b1.Reasons {
		if reason == scorev1b1.ReasonSucceeded {
			continue
		}
		t.Run(string(reason), func(t *testing.T) {
			c := Conditions{InputsValid: InputsValid(), ClaimsReady: cond(metav1.ConditionTrue, scorev1b1.ReasonSucceeded, msgAllDependencies),
				RuntimeReady: cond(metav1.ConditionFalse, reason, "Some neutral sentence.")}
			got := meta.FindStatusCondition(Apply(nil, c, 2, now), scorev1b1.ConditionStalled)
			if reason.Waits() != (got == nil) {
				t.Fatalf("waits %v, Stalled %+v", reason.Waits(), got)
			}
			if got != nil && (got.Status != metav1.ConditionTrue || got.Reason != string(reason) || got.Message != "Some neutral sentence." || got.ObservedGeneration != 2) {
				t.Fatalf("Stalled %+v", got)
			}
		})
	}
	stalled := Apply(nil, Conditions{InputsValid: SpecInvalid("Bad.", 0), ClaimsReady: BlockedByInputs(), RuntimeReady: BlockedByInputs()}, 1, now)
	ready := Conditions{InputsValid: InputsValid(), ClaimsReady: cond(metav1.ConditionTrue, scorev1b1.ReasonSucceeded, msgAllDependencies), RuntimeReady: Runtime(metav1.ConditionTrue, scorev1b1.ReasonSucceeded)}
	if meta.FindStatusCondition(stalled, scorev1b1.ConditionStalled) == nil {
		t.Fatal("SpecInvalid is not Stalled")
	}
	if after := Apply(stalled, ready, 2, now); meta.FindStatusCondition(after, scorev1b1.ConditionStalled) != nil || len(after) != 4 {
		t.Fatalf("a Workload Ready again keeps Stalled: %+v", after)
	}
}

// "Was ready" comes from the Workload's own status.claims, which only the orchestrator may
// write (test/integration/permission, TestEditorCannotWriteWhatTheDependencyRuleReads). Even
// forged, it could not make a dependency count as ready that is not serving: pending, failed
// for any reason, refused, waiting for another's outputs, or without its outputs, it is not.
// What it does decide is a claim provisioned again with its outputs still published: that is
// why the summary must be the orchestrator's alone.
func TestAForgedSummaryIsTrustedOnlyForAnUpdate(t *testing.T) {
	for _, s := range []ClaimState{
		{Phase: ""},
		{Phase: scorev1b1.ClaimPhasePending, OutputsAvailable: true},
		{Phase: scorev1b1.ClaimPhaseBinding},
		{Phase: scorev1b1.ClaimPhaseBound},
		{Phase: scorev1b1.ClaimPhaseFailed, Reason: scorev1b1.ReasonClaimFailed, OutputsAvailable: true},
		{Phase: scorev1b1.ClaimPhaseFailed, Reason: scorev1b1.ReasonPermissionDenied, OutputsAvailable: true},
		{Phase: scorev1b1.ClaimPhaseBinding, OutputsAvailable: true, Denied: scorev1b1.ReasonPolicyViolation},
		{Phase: scorev1b1.ClaimPhaseBinding, OutputsAvailable: true, WaitingFor: []string{"dns"}},
	} {
		s.Key, s.WasReady = "db", true
		if _, c := Claims([]ClaimState{s}); c.Status != metav1.ConditionFalse {
			t.Errorf("%+v: ClaimsReady %s (%s), want False", s, c.Status, c.Message)
		}
	}
	if _, c := Claims([]ClaimState{{Key: "db", Phase: scorev1b1.ClaimPhaseBinding, OutputsAvailable: true, WasReady: true}}); c.Status != metav1.ConditionTrue || !c.Updating {
		t.Errorf("an update with its outputs published: %+v", c)
	}
}

// TestApplyEscapesMessages: a condition that carries a claim's words full of terminal escapes
// is written escaped, on the condition, on Ready and on Stalled, and writing it again changes
// nothing.
func TestApplyEscapesMessages(t *testing.T) {
	now := metav1.Now()
	c := Conditions{InputsValid(), cond(metav1.ConditionFalse, scorev1b1.ReasonClaimFailed, termtest.Hostile), WaitingForClaims()}
	out := Apply(nil, c, 1, now)
	for _, typ := range []string{scorev1b1.ConditionClaimsReady, scorev1b1.ConditionReady, scorev1b1.ConditionStalled} {
		got := meta.FindStatusCondition(out, typ)
		if got == nil || !strings.Contains(got.Message, termtest.Marker) {
			t.Fatalf("%s: %+v", typ, got)
		}
		termtest.Safe(t, typ, got.Message)
	}
	if again := Apply(out, c, 1, now); len(Transitions(out, again)) != 0 || !equality.Semantic.DeepEqual(out, again) {
		t.Errorf("written again, the conditions changed:\n%+v\n%+v", out, again)
	}
}
