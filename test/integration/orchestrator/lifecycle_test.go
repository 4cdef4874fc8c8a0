package orchestrator

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// The main path: a Workload with one dependency goes to Ready, and the test counts the
// orchestrator's API writes on the way.
func TestOneDependencyToReady(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := testenv.Namespace(t, env.Client)
	before := writes.Load()
	w := workload(ns, "orders",
		testenv.WithResource("db", "postgres"),
		testenv.WithVar("DB_HOST", "${resources.db.host}"),
		testenv.WithVar("DB_PASSWORD", "${resources.db.password}"),
		testenv.WithVar("DB_URL", "postgres://app:${resources.db.password}@${resources.db.host}/${metadata.name}"),
	)
	testenv.Create(t, env.Client, w)

	w = conditionIs(t, ns, "orders", scorev1b1.ConditionClaimsReady, metav1.ConditionFalse, scorev1b1.ReasonClaimPending)
	if len(w.Status.Claims) != 1 || w.Status.Claims[0].Key != "db" || w.Status.Claims[0].Phase != scorev1b1.ClaimPhasePending {
		t.Fatalf("claims %+v", w.Status.Claims)
	}
	if c := testenv.Condition(w, scorev1b1.ConditionRuntimeReady); c.Reason != string(scorev1b1.ReasonClaimPending) {
		t.Fatalf("runtime waits for claims: %+v", c)
	}
	if !containsString(w.Finalizers, scorev1b1.WorkloadFinalizer) {
		t.Fatalf("finalizer missing: %v", w.Finalizers)
	}

	claim := claimOf(t, w, "db", "postgres")
	t.Run("the claim", func(t *testing.T) {
		if !metav1.IsControlledBy(claim, w) || claim.Labels[scorev1b1.LabelWorkload] != "orders" {
			t.Fatalf("ownership %+v %v", claim.OwnerReferences, claim.Labels)
		}
		if claim.Spec.Key != "db" || claim.Spec.Type != "postgres" || claim.Spec.WorkloadRef.UID != string(w.UID) {
			t.Fatalf("spec %+v", claim.Spec)
		}
		if claim.Spec.DeprovisionPolicy != scorev1b1.DeprovisionRetain {
			t.Fatalf("the provisioner's default policy applies: %s", claim.Spec.DeprovisionPolicy)
		}
	})

	bind(t, claim, map[string]any{"host": "orders-db.svc", "port": 5432}, map[string]string{"password": "s3cr3t-value"})
	conditionIs(t, ns, "orders", scorev1b1.ConditionClaimsReady, metav1.ConditionTrue, scorev1b1.ReasonSucceeded)

	plan := planOf(t, ns, "orders")
	t.Run("the plan", func(t *testing.T) {
		if !metav1.IsControlledBy(plan, w) || plan.Spec.BackendID != "k8s-web" || plan.Spec.Profile != "web-service" || plan.Spec.ObservedWorkloadGeneration != w.Generation {
			t.Fatalf("plan %+v", plan.Spec)
		}
		raw, _ := json.Marshal(plan)
		if strings.Contains(string(raw), "s3cr3t-value") {
			t.Fatal("a secret value reached the plan")
		}
		env := map[string]scorev1b1.EnvProjection{}
		for _, e := range plan.Spec.Projection.Containers[0].Env {
			env[e.Name] = e
		}
		if e := env["DB_PASSWORD"]; e.From == nil || e.From.ClaimKey != "db" || e.From.OutputKey != "password" {
			t.Fatalf("secret output as a reference: %+v", e)
		}
		if c := plan.Spec.Claims[0]; c.SecretName != claim.Name+"-outputs" || c.SecretKeys[0] != "password" {
			t.Fatalf("claims %+v", plan.Spec.Claims)
		}
	})
	conditionIs(t, ns, "orders", scorev1b1.ConditionRuntimeReady, metav1.ConditionUnknown, scorev1b1.ReasonRuntimeProvisioning)

	t.Run("the exposure registration", func(t *testing.T) {
		e := &scorev1b1.WorkloadExposure{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, e); err != nil {
			t.Fatal(err)
		}
		if e.Spec.WorkloadRef.UID != string(w.UID) || e.Spec.RuntimeClass != "kubernetes" || e.Spec.ObservedWorkloadGeneration != w.Generation || !metav1.IsControlledBy(e, w) {
			t.Fatalf("exposure %+v", e.Spec)
		}
	})

	project(t, ns, "orders", scorev1b1.PlanPhaseProjected, "")
	expose(t, ns, "orders", w.Generation, []scorev1b1.Exposure{{URL: "http://orders.ns.svc.cluster.local:80", Scope: scorev1b1.ScopeClusterLocal, Reachable: ptr.To(true)}}, "Healthy")
	w = conditionIs(t, ns, "orders", scorev1b1.ConditionReady, metav1.ConditionTrue, scorev1b1.ReasonSucceeded)
	eventually(t, "the endpoint", func() error {
		w = get(t, ns, "orders")
		if w.Status.Endpoint == nil || *w.Status.Endpoint != "http://orders.ns.svc.cluster.local:80" {
			return fmt.Errorf("endpoint %v", w.Status.Endpoint)
		}
		return nil
	})
	// Whatever the orchestrator had still coming on the way to Ready is done once it answers a
	// later change, which costs a write of its own.
	moveEndpoint(t, ns, "orders")
	// Two events on the main path: being deployed, and Ready. The first status (waiting for
	// the claim) is no transition and records none; a benchmark of 200 Workloads found three.
	if n := countEvents(t, ns, "orders"); n != 2 {
		t.Errorf("%d events from creation to Ready, want 2", n)
	}
	cost := writes.Load() - before - endpointMoveWrites
	t.Logf("API writes by the orchestrator for one Workload with one dependency, creation to Ready with endpoint: %d", cost)
	if cost > 15 {
		t.Errorf("%d writes; the budget is 15", cost)
	}
	if w.Status.ObservedGeneration != w.Generation {
		t.Errorf("observedGeneration %d, generation %d", w.Status.ObservedGeneration, w.Generation)
	}

	t.Run("nothing changes, nothing is written", func(t *testing.T) {
		idle := writes.Load()
		// A change the plan does not depend on (a claim condition) makes the orchestrator look again.
		setClaimStatus(t, claim, func() scorev1b1.ResourceClaimStatus {
			s := claim.Status.DeepCopy()
			s.Conditions = append(s.Conditions, metav1.Condition{Type: "Observed", Status: metav1.ConditionTrue, Reason: "Test", LastTransitionTime: metav1.Now()})
			return *s
		}())
		seenByOrchestrator(t, &scorev1b1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claim.Name}}, func(c *scorev1b1.ResourceClaim) error {
			if meta.FindStatusCondition(c.Status.Conditions, "Observed") == nil {
				return fmt.Errorf("conditions %+v", c.Status.Conditions)
			}
			return nil
		})
		moveEndpoint(t, ns, "orders")
		if n := writes.Load() - idle - endpointMoveWrites; n != 0 {
			t.Fatalf("%d writes while nothing the Workload depends on changed, besides the endpoint's", n)
		}
		if p := planOf(t, ns, "orders"); p.ResourceVersion != plan.ResourceVersion {
			// the runtime's status update changed it; compare the spec generation instead
			if p.Generation != plan.Generation {
				t.Fatalf("the plan was rewritten: generation %d → %d", plan.Generation, p.Generation)
			}
		}
	})

	t.Run("events only on transitions", func(t *testing.T) {
		n := countEvents(t, ns, "orders")
		moveEndpoint(t, ns, "orders")
		if again := countEvents(t, ns, "orders"); again != n {
			t.Fatalf("events went from %d to %d with nothing changing", n, again)
		}
	})
}

func containsString(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// Manual recovery: setting score.dev/reconcile-requested-at hands the request on to the
// claims and the plan (so the provisioner and the runtime process them again) and echoes it
// in the status, for a script to wait on. The request is bookkeeping: it changes nothing that
// is rendered.
func TestReconcileOnRequest(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := testenv.Namespace(t, env.Client)
	testenv.Create(t, env.Client, workload(ns, "kick", testenv.WithResource("db", "redis")))
	w := get(t, ns, "kick")
	claim := claimOf(t, w, "db", "redis")
	bind(t, claim, map[string]any{"host": "h"}, nil)
	plan := planOf(t, ns, "kick")

	// A merge patch, as scorectl reconcile sends: an update could conflict with the
	// controller's own metadata writes and make this test flaky.
	w = get(t, ns, "kick")
	patch := client.MergeFrom(w.DeepCopy())
	w.Annotations = map[string]string{scorev1b1.AnnotationReconcileRequestedAt: "2026-11-22T07:00:00Z"}
	if err := env.Client.Patch(ctx, w, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the request is echoed and handed on", func() error {
		w := get(t, ns, "kick")
		if w.Status.LastHandledReconcileAt != "2026-11-22T07:00:00Z" {
			return fmt.Errorf("lastHandledReconcileAt %q", w.Status.LastHandledReconcileAt)
		}
		if got := refreshed(t, claim).Annotations[scorev1b1.AnnotationReconcileRequestedAt]; got != "2026-11-22T07:00:00Z" {
			return fmt.Errorf("claim annotation %q", got)
		}
		if got := planOf(t, ns, "kick").Annotations[scorev1b1.AnnotationReconcileRequestedAt]; got != "2026-11-22T07:00:00Z" {
			return fmt.Errorf("plan annotation %q", got)
		}
		return nil
	})
	// The annotation does not reach the plan's values (workload.annotations, which keep the
	// user's annotations): if it did, every request would rewrite the plan, and the Workload
	// would stop being Ready until the runtime had rendered the plan again.
	if p := planOf(t, ns, "kick"); p.Generation != plan.Generation {
		t.Errorf("the reconcile request rewrote the plan's spec (generation %d → %d); the plan's values: %s", plan.Generation, p.Generation, p.Spec.Values.Raw)
	}
}

// Manual recovery: a deleted claim is created again, and the Workload converges.
func TestClaimReset(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := testenv.Namespace(t, env.Client)
	testenv.Create(t, env.Client, workload(ns, "reset", testenv.WithResource("db", "redis")))
	w := get(t, ns, "reset")
	old := claimOf(t, w, "db", "redis")
	bind(t, old, map[string]any{"host": "h"}, nil)
	conditionIs(t, ns, "reset", scorev1b1.ConditionClaimsReady, metav1.ConditionTrue, scorev1b1.ReasonSucceeded)
	if err := env.Client.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	release(t, old)
	eventually(t, "a new claim", func() error {
		c := &scorev1b1.ResourceClaim{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(old), c); err != nil {
			return err
		}
		if c.UID == old.UID {
			return fmt.Errorf("still the old claim")
		}
		return nil
	})
	conditionIs(t, ns, "reset", scorev1b1.ConditionClaimsReady, metav1.ConditionFalse, scorev1b1.ReasonClaimPending)
	bind(t, claimOf(t, w, "db", "redis"), map[string]any{"host": "h2"}, nil)
	conditionIs(t, ns, "reset", scorev1b1.ConditionClaimsReady, metav1.ConditionTrue, scorev1b1.ReasonSucceeded)
}

// A dependency that has published its outputs but is not healthy yet. By default the plan
// waits until it is Bound, as workload-lifecycle.md's Phase 3 orders it; with
// dependencies.deployWhen: OutputsAvailable the plan is emitted at once, so the application
// rolls out while its database comes up (pipelining), and the Workload is Ready only
// once both are.
func TestPlanWhileDependencyBecomesHealthy(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := testenv.Namespace(t, env.Client)
	binding := func() scorev1b1.ResourceClaimStatus {
		return scorev1b1.ResourceClaimStatus{Phase: scorev1b1.ClaimPhaseBinding, OutputsAvailable: true, Provisioner: "test",
			Message: "Waiting for StatefulSet/db.", Outputs: &apiextensionsv1.JSON{Raw: []byte(`{"host":"orders-db.svc","port":5432}`)}}
	}

	t.Run("by default the plan waits for the dependency to be Bound", func(t *testing.T) {
		w := workload(ns, "in-order", testenv.WithResource("db", "postgres"), testenv.WithVar("DB_HOST", "${resources.db.host}"))
		testenv.Create(t, env.Client, w)
		claim := claimOf(t, w, "db", "postgres")
		setClaimStatus(t, claim, binding())
		eventually(t, "the orchestrator's answer to the published outputs", func() error {
			w = get(t, ns, "in-order")
			if len(w.Status.Claims) != 1 || !w.Status.Claims[0].OutputsAvailable || w.Status.Claims[0].Phase != scorev1b1.ClaimPhaseBinding {
				return fmt.Errorf("claims %+v", w.Status.Claims)
			}
			return nil
		})
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "in-order"}, &scorev1b1.WorkloadPlan{}); !apierrors.IsNotFound(err) {
			t.Fatalf("a plan before the dependency is Bound: %v", err)
		}
		if c := testenv.Condition(w, scorev1b1.ConditionRuntimeReady); c.Reason != string(scorev1b1.ReasonClaimPending) {
			t.Fatalf("runtime waits for claims: %+v", c)
		}
		bind(t, claim, map[string]any{"host": "orders-db.svc", "port": 5432}, nil)
		planOf(t, ns, "in-order")
	})

	t.Run("with deployWhen OutputsAvailable the plan is emitted once the outputs are published", func(t *testing.T) {
		// The config also moves Workloads to a newer backend: a Workload without dependencies
		// on that backend shows the orchestrator uses it.
		early := withNewerBackend(baseConfig) + "dependencies:\n  deployWhen: OutputsAvailable\n"
		applyConfig(t, early)
		t.Cleanup(func() { applyConfig(t, baseConfig) })
		testenv.Create(t, env.Client, workload(ns, "probe"))
		eventually(t, "the config in use", func() error {
			if p := planOf(t, ns, "probe"); p.Spec.BackendID != "k8s-web-v2" {
				return fmt.Errorf("backend %s", p.Spec.BackendID)
			}
			return nil
		})
		w := workload(ns, "early-rollout", testenv.WithResource("db", "postgres"), testenv.WithVar("DB_HOST", "${resources.db.host}"))
		testenv.Create(t, env.Client, w)
		claim := claimOf(t, w, "db", "postgres")
		setClaimStatus(t, claim, binding())
		plan := planOf(t, ns, "early-rollout")
		// The pass that wrote the plan patches the status last: wait for it.
		eventually(t, "the claim's summary", func() error {
			w = get(t, ns, "early-rollout")
			if len(w.Status.Claims) != 1 || w.Status.Claims[0].Phase != scorev1b1.ClaimPhaseBinding || !w.Status.Claims[0].OutputsAvailable {
				return fmt.Errorf("claims %+v", w.Status.Claims)
			}
			return nil
		})
		conditionIs(t, ns, "early-rollout", scorev1b1.ConditionClaimsReady, metav1.ConditionFalse, scorev1b1.ReasonClaimPending)
		project(t, ns, "early-rollout", scorev1b1.PlanPhaseProjected, "")
		expose(t, ns, "early-rollout", w.Generation, []scorev1b1.Exposure{{URL: "http://early-rollout.ns.svc.cluster.local:80", Scope: scorev1b1.ScopeClusterLocal}}, "Healthy")
		w = conditionIs(t, ns, "early-rollout", scorev1b1.ConditionRuntimeReady, metav1.ConditionTrue, scorev1b1.ReasonSucceeded)
		if c := testenv.Condition(w, scorev1b1.ConditionReady); c.Status != metav1.ConditionFalse || c.Reason != string(scorev1b1.ReasonClaimPending) {
			t.Fatalf("the application runs but its database is not healthy: Ready is %s/%s", c.Status, c.Reason)
		}
		bind(t, claim, map[string]any{"host": "orders-db.svc", "port": 5432}, nil)
		conditionIs(t, ns, "early-rollout", scorev1b1.ConditionReady, metav1.ConditionTrue, scorev1b1.ReasonSucceeded)
		if p := planOf(t, ns, "early-rollout"); p.Generation != plan.Generation {
			t.Fatalf("the plan was written again when the dependency became healthy: generation %d → %d", plan.Generation, p.Generation)
		}
	})
}

// Each step's status written once: a Workload with a postgres dependency goes from
// created to Ready in at most three status writes. Its orchestrator holds a status that only
// reports progress for an hour (heldShard), so the count does not depend on this machine's
// speed: the first status (the claim pending) and Ready are written; the claim Binding, then
// Bound with the plan written, the plan applied and the endpoint published before the workload
// is healthy are each superseded before the hour is out, and never written.
func TestCreatedToReadyInThreeStatusWrites(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := testenv.Namespace(t, env.Client)
	w := workload(ns, "orders", testenv.WithResource("db", "postgres"), testenv.WithVar("DB_HOST", "${resources.db.host}"))
	w.Labels = map[string]string{scorev1b1.LabelShard: heldShard}
	testenv.Create(t, env.Client, w)
	statusWrites := func() int64 {
		n, ok := heldStatusWrites.Load(ns + "/orders")
		if !ok {
			return 0
		}
		return n.(*atomic.Int64).Load()
	}

	// The first status is never held.
	w = conditionIs(t, ns, "orders", scorev1b1.ConditionReady, metav1.ConditionFalse, scorev1b1.ReasonClaimPending)
	if len(w.Status.Claims) != 1 || w.Status.Claims[0].Phase != scorev1b1.ClaimPhasePending {
		t.Fatalf("claims %+v", w.Status.Claims)
	}
	claim := claimOf(t, w, "db", "postgres")
	// The provisioner publishes the outputs while the database becomes healthy, then binds.
	setClaimStatus(t, claim, scorev1b1.ResourceClaimStatus{Phase: scorev1b1.ClaimPhaseBinding, OutputsAvailable: true, Provisioner: "test",
		Outputs:    &apiextensionsv1.JSON{Raw: []byte(`{"host":"orders-db.svc"}`)},
		Conditions: []metav1.Condition{{Type: scorev1b1.ClaimConditionReady, Status: metav1.ConditionFalse, Reason: "Binding", LastTransitionTime: metav1.Now()}}})
	bind(t, claim, map[string]any{"host": "orders-db.svc"}, nil)
	// The plan is written while the status waits: the orchestrator has seen the claim Bound.
	planOf(t, ns, "orders")
	project(t, ns, "orders", scorev1b1.PlanPhasePlanning, "")
	url := "http://orders." + ns + ".svc.cluster.local:80"
	expose(t, ns, "orders", w.Generation, []scorev1b1.Exposure{{URL: url, Scope: scorev1b1.ScopeClusterLocal}}, scorev1b1.ExposureConditionProvisioning)
	project(t, ns, "orders", scorev1b1.PlanPhaseProjected, "")
	expose(t, ns, "orders", w.Generation, []scorev1b1.Exposure{{URL: url, Scope: scorev1b1.ScopeClusterLocal, Reachable: ptr.To(true)}}, scorev1b1.ExposureConditionHealthy)
	w = conditionIs(t, ns, "orders", scorev1b1.ConditionReady, metav1.ConditionTrue, scorev1b1.ReasonSucceeded)
	if w.Status.Endpoint == nil || *w.Status.Endpoint != url || w.Status.Claims[0].Phase != scorev1b1.ClaimPhaseBound {
		t.Fatalf("endpoint %v, claims %+v", w.Status.Endpoint, w.Status.Claims)
	}
	n := statusWrites()
	t.Logf("Workload status writes from creation to Ready: %d", n)
	if n > 3 {
		t.Errorf("%d status writes from creation to Ready; the target is at most three", n)
	}
	if n != 2 {
		t.Errorf("%d status writes; with every step within the hour, the first status and Ready", n)
	}
	// One event: Ready. Being deployed was never written, so never recorded. Events are sent
	// after the status write that records them: wait for the first, then count them all.
	testenv.Eventually(t, 30*time.Second, "the Ready event", func() error {
		if countEvents(t, ns, "orders") == 0 {
			return fmt.Errorf("no event yet")
		}
		return nil
	})
	if e := countEvents(t, ns, "orders"); e != 1 {
		t.Errorf("%d events from creation to Ready, want 1", e)
	}
}
