package statuspatch_test

import (
	"context"
	"os"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/ownwrites"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/statuspatch"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// The status write on a real API server (its status subresource, its merge patches, its
// resource versions), with a WorkloadPlan as the object.

var (
	env *testenv.Env
	ctx = context.Background()
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, func(_ context.Context, e *testenv.Env) error {
		env = e
		return nil
	}))
}

// newPlan creates a plan in a namespace of the test's and returns it as the API server has it.
func newPlan(t *testing.T) *scorev1b1.WorkloadPlan {
	t.Helper()
	p := &scorev1b1.WorkloadPlan{
		ObjectMeta: metav1.ObjectMeta{Namespace: testenv.Namespace(t, env.Client), Name: "web"},
		Spec: scorev1b1.WorkloadPlanSpec{WorkloadRef: scorev1b1.LocalWorkloadRef{Name: "web", UID: "u1"}, ObservedWorkloadGeneration: 1,
			RuntimeClass: scorev1b1.RuntimeClassKubernetes, BackendID: "k8s-web",
			Template:   scorev1b1.TemplateRef{Kind: scorev1b1.TemplateManifests, Ref: "configmap://platform/templates/web.yaml"},
			Projection: scorev1b1.Projection{Containers: []scorev1b1.ContainerProjection{{Name: "main"}}}},
	}
	testenv.Create(t, env.Client, p)
	return p
}

// read returns the plan as the API server has it now.
func read(t *testing.T, p *scorev1b1.WorkloadPlan) *scorev1b1.WorkloadPlan {
	t.Helper()
	got := &scorev1b1.WorkloadPlan{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
		t.Fatal(err)
	}
	return got
}

// otherWriter changes the plan's spec, as the orchestrator does, and returns the version it
// produced.
func otherWriter(t *testing.T, p *scorev1b1.WorkloadPlan) string {
	t.Helper()
	current := read(t, p)
	before := current.DeepCopy()
	current.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"replicas":3}`)}
	if err := env.Client.Patch(ctx, current, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	return current.ResourceVersion
}

// A pass whose status did not change writes nothing, and tells the recorder of nothing; one
// whose status changed writes once, and the recorder learns the version it replaced.
func TestWritesOnlyWhenTheStatusChanged(t *testing.T) {
	p := newPlan(t)
	var written ownwrites.Tracker
	read1 := p.ResourceVersion

	patch := statuspatch.Begin(p)
	p.Labels = map[string]string{"not": "status"} // not the status: not compared, not written
	if wrote, err := patch.Finish(ctx, env.Client, &written); wrote || err != nil {
		t.Fatalf("unchanged status: wrote %v, %v", wrote, err)
	}
	if got := read(t, p); got.ResourceVersion != read1 || len(got.Labels) != 0 {
		t.Fatalf("something was written: version %s (read %s), labels %v", got.ResourceVersion, read1, got.Labels)
	}
	if written.Behind(p.UID, read1) {
		t.Fatal("a write that did not happen was recorded")
	}

	p = read(t, p)
	patch = statuspatch.Begin(p)
	p.Status.Phase = scorev1b1.PlanPhasePlanning
	if !patch.Changed() {
		t.Fatal("a changed phase is not a change")
	}
	wrote, err := patch.Finish(ctx, env.Client, &written)
	if !wrote || err != nil {
		t.Fatalf("changed status: wrote %v, %v", wrote, err)
	}
	got := read(t, p)
	if got.Status.Phase != scorev1b1.PlanPhasePlanning || got.ResourceVersion != p.ResourceVersion || got.ResourceVersion == read1 {
		t.Fatalf("stored %s at %s; the pass has %s, read %s", got.Status.Phase, got.ResourceVersion, p.ResourceVersion, read1)
	}
	if !written.Behind(p.UID, read1) {
		t.Fatal("a copy at the version the write replaced is not behind it")
	}
}

// The patch is a merge patch of what the pass changed, with no resource version: a writer
// that changed the object since it was read (the orchestrator its spec) is no conflict, and
// its change stays. After a write of its own (a finalizer), Rebase keeps that write's
// version out of the status patch; without it the same sequence meets a conflict.
func TestSurvivesAConcurrentWriter(t *testing.T) {
	t.Run("a spec written since the read", func(t *testing.T) {
		p := newPlan(t)
		patch := statuspatch.Begin(p)
		p.Status.Phase = scorev1b1.PlanPhaseProjected
		otherVersion := otherWriter(t, p)
		if wrote, err := patch.Finish(ctx, env.Client, nil); !wrote || err != nil {
			t.Fatalf("wrote %v, %v", wrote, err)
		}
		got := read(t, p)
		if got.Status.Phase != scorev1b1.PlanPhaseProjected || got.Spec.Values == nil || got.ResourceVersion == otherVersion {
			t.Fatalf("status %s, values %v at %s", got.Status.Phase, got.Spec.Values, got.ResourceVersion)
		}
	})

	// finalize adds the plan's finalizer with an optimistic lock, as the runtime's hold does,
	// then another writer changes the spec: the pass's copy is now behind.
	finalize := func(t *testing.T, p *scorev1b1.WorkloadPlan) {
		t.Helper()
		before := p.DeepCopy()
		controllerutil.AddFinalizer(p, scorev1b1.PlanFinalizer)
		if err := env.Client.Patch(ctx, p, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			t.Fatal(err)
		}
		otherWriter(t, p)
	}
	t.Run("without Rebase after a write of its own: a conflict", func(t *testing.T) {
		p := newPlan(t)
		patch := statuspatch.Begin(p)
		finalize(t, p)
		p.Status.Phase = scorev1b1.PlanPhaseProjected
		if _, err := patch.Finish(ctx, env.Client, nil); !apierrors.IsConflict(err) {
			t.Fatalf("the finalizer's version in the status patch: %v, want a conflict", err)
		}
	})
	t.Run("with Rebase after a write of its own", func(t *testing.T) {
		p := newPlan(t)
		patch := statuspatch.Begin(p)
		finalize(t, p)
		patch.Rebase()
		if patch.Changed() {
			t.Fatal("Rebase keeps the status as read")
		}
		p.Status.Phase = scorev1b1.PlanPhaseProjected
		if wrote, err := patch.Finish(ctx, env.Client, nil); !wrote || err != nil {
			t.Fatalf("wrote %v, %v", wrote, err)
		}
		if got := read(t, p); got.Status.Phase != scorev1b1.PlanPhaseProjected || !controllerutil.ContainsFinalizer(got, scorev1b1.PlanFinalizer) || got.Spec.Values == nil {
			t.Fatalf("stored %+v", got)
		}
	})
}

// The own-writes record steers the next pass: a cached copy at a version a write replaced is
// behind, one at the version it produced is not (and drops the record). A pass that read a
// stale copy and wrote over it leaves both earlier versions behind: the cache may next show
// the one in between.
func TestOwnWritesAreTracked(t *testing.T) {
	p := newPlan(t)
	var written ownwrites.Tracker
	v1 := p.ResourceVersion
	stale := p.DeepCopy()

	patch := statuspatch.Begin(p)
	p.Status.Phase = scorev1b1.PlanPhasePlanning
	if _, err := patch.Finish(ctx, env.Client, &written); err != nil {
		t.Fatal(err)
	}
	v2 := p.ResourceVersion
	if !written.Stale(stale) {
		t.Fatalf("the copy at %s is not behind the write that produced %s", v1, v2)
	}

	// A pass from the stale copy (an informer that has not caught up) writes over it.
	patch = statuspatch.Begin(stale)
	stale.Status.Phase, stale.Status.Message = scorev1b1.PlanPhasePlanning, "Waiting for Deployment web."
	if wrote, err := patch.Finish(ctx, env.Client, &written); !wrote || err != nil {
		t.Fatalf("wrote %v, %v", wrote, err)
	}
	v3 := stale.ResourceVersion
	for _, v := range []string{v1, v2} {
		if !written.Behind(p.UID, v) {
			t.Fatalf("a copy at %s is not behind the writes (last %s)", v, v3)
		}
	}
	if written.Behind(p.UID, v3) {
		t.Fatalf("the copy at %s, the last write's, is behind", v3)
	}
	if written.Behind(p.UID, v1) {
		t.Fatal("the record outlived a cache that caught up")
	}
}

// An object deleted since it was read is no error: there is nothing to report on.
func TestGoneIsNoError(t *testing.T) {
	p := newPlan(t)
	patch := statuspatch.Begin(p)
	if err := env.Client.Delete(ctx, read(t, p)); err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = scorev1b1.PlanPhaseProjected
	if wrote, err := patch.Finish(ctx, env.Client, nil); wrote || err != nil {
		t.Fatalf("wrote %v, %v", wrote, err)
	}
}

// With AtVersionRead the status is written only over the version read: a writer that changed
// the object since makes the write a Conflict, and nothing is written or recorded (without the
// option the same sequence writes: TestSurvivesAConcurrentWriter). With no writer in between,
// it writes as without.
func TestAtVersionRead(t *testing.T) {
	t.Run("nobody wrote since the read", func(t *testing.T) {
		p := newPlan(t)
		var written ownwrites.Tracker
		read1 := p.ResourceVersion
		patch := statuspatch.Begin(p)
		p.Status.Phase = scorev1b1.PlanPhaseProjected
		if wrote, err := patch.Finish(ctx, env.Client, &written, statuspatch.AtVersionRead()); !wrote || err != nil {
			t.Fatalf("wrote %v, %v", wrote, err)
		}
		if got := read(t, p); got.Status.Phase != scorev1b1.PlanPhaseProjected || got.ResourceVersion != p.ResourceVersion {
			t.Fatalf("stored %s at %s; the pass has %s", got.Status.Phase, got.ResourceVersion, p.ResourceVersion)
		}
		if !written.Behind(p.UID, read1) {
			t.Fatal("the write was not recorded")
		}
	})
	t.Run("another writer since the read", func(t *testing.T) {
		p := newPlan(t)
		var written ownwrites.Tracker
		read1 := p.ResourceVersion
		stored := read(t, p).Status
		patch := statuspatch.Begin(p)
		p.Status.Phase = scorev1b1.PlanPhaseProjected
		otherVersion := otherWriter(t, p)
		wrote, err := patch.Finish(ctx, env.Client, &written, statuspatch.AtVersionRead())
		if wrote || !apierrors.IsConflict(err) {
			t.Fatalf("wrote %v, %v; want a conflict", wrote, err)
		}
		got := read(t, p)
		if got.ResourceVersion != otherVersion || !equality.Semantic.DeepEqual(got.Status, stored) || got.Spec.Values == nil {
			t.Fatalf("stored %+v at %s, want the other writer's %s with the status as it was", got.Status, got.ResourceVersion, otherVersion)
		}
		if written.Behind(p.UID, read1) {
			t.Fatal("a refused write was recorded")
		}
	})
}
