package workloaddecision

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// rolled is a Ready Workload with a postgres claim, whose wave of a rollout to a revision that
// provisions postgres by another definition is reached: the pass moves the claim to it.
func rolled(t *testing.T) Observed {
	t.Helper()
	o := settled(t, loaded(t, revOne, withRollout))
	o.Config, o.Reached = loaded(t, revTwo, withRollout, func(c *orchconfig.Config) { c.Provisioners[0].URI = "template://test/postgres-v2" }), true
	o.Kept = map[string]Kept{revOne: {Config: loaded(t, revOne, withRollout).Config}}
	return o
}

// moved is rolled after the pass that moved the claim: its new spec written (a new
// generation the provisioner has not taken yet), the Workload's status as that pass left it.
func moved(t *testing.T) Observed {
	t.Helper()
	o := rolled(t)
	d, _ := drive(t, o, answers{})
	first := From(o)
	if first.Next != WriteClaims || len(first.Claims) != 1 || first.Claims[0].Op != UpdateClaim {
		t.Fatalf("moving: %s, want the claim updated", first.Next)
	}
	o.Claims[0].Spec, o.Claims[0].Generation = first.Claims[0].Spec, 2
	o.Workload.Status = *d.Status
	return o
}

// taken is moved once the provisioner has taken the new spec, with opt its report.
func taken(t *testing.T, opt copt) Observed {
	t.Helper()
	o := moved(t)
	opt(&o.Claims[0])
	d, _ := drive(t, o, answers{})
	o.Workload.Status = *d.Status
	return o
}

// reprojected is taken Bound again, after the pass that recorded the new revision on the plan
// (what it deploys the same): the plan's new generation, which the runtime has not reported on.
func reprojected(t *testing.T) Observed {
	t.Helper()
	o := taken(t, bound(`{"host":"db.team"}`))
	d, _ := drive(t, o, answers{})
	first := From(o)
	if first.Next != WritePlan {
		t.Fatalf("recording the revision: %s, want the plan written", first.Next)
	}
	o.Plan.Spec, o.Plan.Generation = *first.Plan.Spec, 2
	o.Workload.Status = *d.Status
	return o
}

// TestReadyThroughARolloutsRebinding: a rollout that
// provisions a Ready Workload's dependency by a changed definition moves its claim to the new
// revision (a new spec, a new generation) and, once it is provisioned again, writes the plan
// with the revision. While what runs still serves (the instance's outputs published, the
// runtime's previous version healthy), the Workload stays Ready and says the dependency is
// being updated, where ClaimPending then RuntimeProvisioning would say it was not serving.
// What the provisioner or the runtime report against it still shows.
func TestReadyThroughARolloutsRebinding(t *testing.T) {
	updating := "The workload is ready; a dependency is being updated."
	for _, tc := range []struct {
		name     string
		observed func(t *testing.T) Observed
		want     want
	}{
		{name: "the claim moved to the new revision, not taken yet: Ready, being updated, nothing planned with its outputs",
			observed: moved,
			want: want{claims: scorev1b1.ReasonSucceeded, runtime: scorev1b1.ReasonSucceeded, ready: "True/Succeeded", message: updating,
				summaries: []string{"db: Binding/Succeeded"}, noEvents: true}},
		{name: "the new revision being provisioned, its outputs still published: Ready, being updated",
			observed: func(t *testing.T) Observed { return taken(t, bindingWithOutputs(`{"host":"db.team"}`)) },
			want: want{claims: scorev1b1.ReasonSucceeded, runtime: scorev1b1.ReasonSucceeded, ready: "True/Succeeded", message: updating,
				summaries: []string{"db: Binding/Succeeded"}, noEvents: true}},
		{name: "Bound under the new revision: the plan records it, what runs is unchanged, Ready",
			observed: func(t *testing.T) Observed {
				o := moved(t)
				bound(`{"host":"db.team"}`)(&o.Claims[0])
				return o
			},
			want: want{writes: []string{"updating plan"}, claims: scorev1b1.ReasonSucceeded, runtime: scorev1b1.ReasonSucceeded, ready: "True/Succeeded",
				message: "The workload is ready.", summaries: []string{"db: Bound/Succeeded"}, noEvents: true}},
		{name: "the plan's new revision not reported on by the runtime yet: Ready",
			observed: reprojected,
			want:     want{claims: scorev1b1.ReasonSucceeded, runtime: scorev1b1.ReasonSucceeded, ready: "True/Succeeded", noEvents: true}},

		// What still shows.
		{name: "the runtime reports the plan's new generation not healthy: being deployed",
			observed: func(t *testing.T) Observed {
				o := reprojected(t)
				o.Plan.Status.ObservedGeneration, o.Plan.Status.Phase = 2, scorev1b1.PlanPhasePlanning
				return o
			},
			want: want{runtime: scorev1b1.ReasonRuntimeProvisioning, ready: "False/RuntimeProvisioning", events: []string{"Normal/RuntimeProvisioning"}}},
		{name: "Bound under the new revision with other outputs: the plan changes, Ready on what serves",
			observed: func(t *testing.T) Observed {
				o := moved(t)
				bound(`{"host":"db2.team"}`)(&o.Claims[0])
				return o
			},
			want: want{writes: []string{"updating plan"}, claims: scorev1b1.ReasonSucceeded, runtime: scorev1b1.ReasonSucceeded, ready: "True/Succeeded", noEvents: true}},
		{name: "the new revision fails: not Ready",
			observed: func(t *testing.T) Observed {
				o := moved(t)
				failedWith(scorev1b1.ReasonClaimFailed)(&o.Claims[0])
				return o
			},
			want: want{claims: scorev1b1.ReasonClaimFailed, ready: "False/ClaimFailed", summaries: []string{"db: Failed/ClaimFailed"},
				events: []string{"Warning/ClaimFailed"}}},
		{name: "the outputs withdrawn under the new revision: pending",
			observed: func(t *testing.T) Observed {
				return taken(t, func(c *scorev1b1.ResourceClaim) {
					bindingWithOutputs(`{"host":"db.team"}`)(c)
					c.Status.OutputsAvailable = false
				})
			},
			want: want{claims: scorev1b1.ReasonClaimPending, ready: "False/ClaimPending", summaries: []string{"db: Binding/ClaimPending"}}},
		{name: "the plan that runs fails while the claim is moved: not Ready",
			observed: func(t *testing.T) Observed {
				o := moved(t)
				failPlan(o.Plan, scorev1b1.ReasonPermissionDenied, scorev1b1.PlanReasonObjectConflict)
				return o
			},
			want: want{claims: scorev1b1.ReasonSucceeded, runtime: scorev1b1.ReasonPermissionDenied, ready: "False/PermissionDenied"}},
		{name: "the claim moved while the Workload's own spec changed: pending, as for any change",
			observed: func(t *testing.T) Observed {
				o := rolled(t)
				withVar("MODE", "fast")(o.Workload)
				o.Workload.Generation = 3
				return o
			},
			want: want{writes: []string{"updating claim db", "updating exposure"}, claims: scorev1b1.ReasonClaimPending, ready: "False/ClaimPending",
				summaries: []string{"db: Pending/ClaimPending"}}},
		{name: "a moved claim whose provisioner never had it ready: pending",
			observed: func(t *testing.T) Observed {
				o := moved(t)
				o.Claims[0].Status = scorev1b1.ResourceClaimStatus{Phase: scorev1b1.ClaimPhaseBinding, ObservedGeneration: 1,
					Outputs: &apiextensionsv1.JSON{Raw: []byte(`{"host":"db.team"}`)}}
				return o
			},
			want: want{claims: scorev1b1.ReasonClaimPending, ready: "False/ClaimPending", summaries: []string{"db: Pending/ClaimPending"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, writes := drive(t, tc.observed(t), answers{})
			check(t, d, writes, tc.want)
		})
	}
}
