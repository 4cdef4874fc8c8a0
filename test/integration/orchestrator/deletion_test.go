package orchestrator

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

const provisionerFinalizer = "provisioner.test/cleanup"

// Path 9: deleting a Workload applies each claim's policy: Delete waits until the claim is
// gone, Retain removes ownership and keeps the claim, Orphan leaves it untouched. The
// finalizer goes only after cleanup, and the Workload says what it waits for meanwhile.
func TestDeletionPolicies(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := testenv.Namespace(t, env.Client)
	testenv.Create(t, env.Client, workload(ns, "shop",
		testenv.WithResource("db", "postgres", testenv.ResourceAnnotation(scorev1b1.AnnotationDeprovisionPolicy, "Delete")),
		testenv.WithResource("cache", "redis", testenv.ResourceAnnotation(scorev1b1.AnnotationDeprovisionPolicy, "Retain")),
		testenv.WithResource("queue", "amqp", testenv.ResourceAnnotation(scorev1b1.AnnotationDeprovisionPolicy, "Orphan")),
	))
	w := get(t, ns, "shop")
	db, cache, queue := claimOf(t, w, "db", "postgres"), claimOf(t, w, "cache", "redis"), claimOf(t, w, "queue", "amqp")
	// Play the provisioner: it holds the Delete claim until it has cleaned up.
	db.Finalizers = append(db.Finalizers, provisionerFinalizer)
	if err := env.Client.Update(ctx, db); err != nil {
		t.Fatal(err)
	}
	queueVersion := refreshed(t, queue).ResourceVersion

	if err := env.Client.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	t.Run("the Workload waits for the Delete claim and says so", func(t *testing.T) {
		eventually(t, "deleting status", func() error {
			w := get(t, ns, "shop")
			if c := testenv.Condition(w, scorev1b1.ConditionReady); !strings.Contains(c.Message, "waiting for dependencies to be released: db") {
				return fmt.Errorf("ready: %s", c.Message)
			}
			return nil
		})
		if c := refreshed(t, db); c.DeletionTimestamp.IsZero() {
			t.Fatal("the Delete claim was not deleted")
		}
		// A later pass, the answer to a change of the Workload, still waits for the claim.
		w := changeSpec(t, ns, "shop")
		if !containsString(w.Finalizers, scorev1b1.WorkloadFinalizer) {
			t.Fatalf("the finalizer went while the Delete claim is there: %v", w.Finalizers)
		}
		if c := testenv.Condition(w, scorev1b1.ConditionReady); c.Message != "Deleting; waiting for dependencies to be released: db." || c.ObservedGeneration != w.Generation {
			t.Fatalf("ready at generation %d: %+v", w.Generation, c)
		}
	})
	t.Run("Retain removes ownership and keeps the claim", func(t *testing.T) {
		eventually(t, "cache disowned", func() error {
			c := refreshed(t, cache)
			if len(c.OwnerReferences) > 0 || !c.DeletionTimestamp.IsZero() {
				return fmt.Errorf("owners %v, deleting %v", c.OwnerReferences, c.DeletionTimestamp)
			}
			return nil
		})
	})
	t.Run("Orphan leaves the claim untouched", func(t *testing.T) {
		c := refreshed(t, queue)
		if c.ResourceVersion != queueVersion || !metav1.IsControlledBy(c, w) || !c.DeletionTimestamp.IsZero() {
			t.Fatalf("the orphan claim changed: rv %s→%s owners %v", queueVersion, c.ResourceVersion, c.OwnerReferences)
		}
	})
	t.Run("the finalizer goes once the Delete claim is gone", func(t *testing.T) {
		c := refreshed(t, db)
		c.Finalizers = nil
		if err := env.Client.Update(ctx, c); err != nil {
			t.Fatal(err)
		}
		testenv.WaitGone(t, env.Client, workload(ns, "shop"))
	})
}

// Deleting a Workload whose claim is Retain and creating it again: the retained claim, tied
// to the old UID, is released so that a fresh claim can bind to the retained data.
func TestRecreateAfterRetain(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := testenv.Namespace(t, env.Client)
	testenv.Create(t, env.Client, workload(ns, "blog", testenv.WithResource("db", "postgres"))) // Retain by the provisioner's default
	old := get(t, ns, "blog")
	claim := claimOf(t, old, "db", "postgres")
	if err := env.Client.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	testenv.WaitGone(t, env.Client, old)
	if c := refreshed(t, claim); len(c.OwnerReferences) > 0 || c.Spec.WorkloadRef.UID != string(old.UID) {
		t.Fatalf("retained claim %+v", c.ObjectMeta)
	}
	testenv.Create(t, env.Client, workload(ns, "blog", testenv.WithResource("db", "postgres")))
	fresh := get(t, ns, "blog")
	release(t, claim)
	eventually(t, "a claim for the new Workload", func() error {
		c := &scorev1b1.ResourceClaim{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(claim), c); err != nil {
			return err
		}
		if c.Spec.WorkloadRef.UID != string(fresh.UID) || !metav1.IsControlledBy(c, fresh) {
			return fmt.Errorf("claim still tied to %s", c.Spec.WorkloadRef.UID)
		}
		return nil
	})
}

func refreshed(t *testing.T, c *scorev1b1.ResourceClaim) *scorev1b1.ResourceClaim {
	t.Helper()
	out := &scorev1b1.ResourceClaim{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The retained claim a re-created Workload releases is owned by no Workload, yet its deletion,
// which the provisioner's finalizer delays, brings the new Workload back: an owner reference
// alone would not, and the fresh claim would wait until something else requeued it.
func TestRecreateAfterRetainWaitsForTheRelease(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := testenv.Namespace(t, env.Client)
	testenv.Create(t, env.Client, workload(ns, "shop", testenv.WithResource("db", "postgres"))) // Retain by the provisioner's default
	old := get(t, ns, "shop")
	claim := claimOf(t, old, "db", "postgres")
	// Stands in for the provisioner, whose finalizer holds a claim until it is released.
	patch := client.MergeFrom(claim.DeepCopy())
	claim.Finalizers = append(claim.Finalizers, "test.score.dev/release")
	if err := env.Client.Patch(ctx, claim, patch); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	testenv.WaitGone(t, env.Client, old)
	testenv.Create(t, env.Client, workload(ns, "shop", testenv.WithResource("db", "postgres")))
	fresh := get(t, ns, "shop")
	eventually(t, "the retained claim released", func() error {
		if c := refreshed(t, claim); c.DeletionTimestamp.IsZero() {
			return fmt.Errorf("not released yet")
		}
		return nil
	})
	// Every pass the new Workload had coming while the release is pending is over, and it
	// waits for the claim: from here on, only the claim's deletion can bring it back.
	if w := requestReconcile(t, ns, "shop"); len(w.Status.Claims) != 1 || w.Status.Claims[0].Phase != scorev1b1.ClaimPhasePending {
		t.Fatalf("claims %+v", w.Status.Claims)
	}
	released := refreshed(t, claim)
	patch = client.MergeFrom(released.DeepCopy())
	released.Finalizers = nil
	if err := env.Client.Patch(ctx, released, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a claim for the new Workload", func() error {
		c := &scorev1b1.ResourceClaim{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(claim), c); err != nil {
			return err
		}
		if !metav1.IsControlledBy(c, fresh) {
			return fmt.Errorf("claim still tied to %s", c.Spec.WorkloadRef.UID)
		}
		return nil
	})
}

// A Workload whose namespace is being deleted says so once and is not retried: the refused
// creation of its claims is no denial (no PermissionDenied, no event, no backoff), and a change
// of its spec costs one status patch and the refused creations of its claim and exposure, sent
// together, per pass (the Workload's two watches may bring two). envtest runs no namespace
// controller, so the namespace stays Terminating for as long as the test needs.
func TestNamespaceBeingDeleted(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := testenv.Namespace(t, env.Client)
	// Invalid first, so that nothing is created before the namespace starts going.
	testenv.Create(t, env.Client, workload(ns, "leaving", testenv.WithVar("DB", "${resources.db.host}")))
	conditionIs(t, ns, "leaving", scorev1b1.ConditionInputsValid, metav1.ConditionFalse, scorev1b1.ReasonSpecInvalid)
	if err := env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the namespace terminating", func() error {
		n := &corev1.Namespace{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
			return err
		}
		if n.Status.Phase != corev1.NamespaceTerminating {
			return fmt.Errorf("phase %s", n.Status.Phase)
		}
		return nil
	})

	w := get(t, ns, "leaving")
	w.Spec.Resources = map[string]scorev1b1.Resource{"db": {Type: "redis"}}
	if err := env.Client.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	w = conditionIs(t, ns, "leaving", scorev1b1.ConditionClaimsReady, metav1.ConditionFalse, scorev1b1.ReasonClaimPending)
	for _, typ := range []string{scorev1b1.ConditionInputsValid, scorev1b1.ConditionClaimsReady, scorev1b1.ConditionRuntimeReady} {
		t.Logf("%s: %+v", typ, testenv.Condition(w, typ))
	}
	if c := testenv.Condition(w, scorev1b1.ConditionInputsValid); c.Status != metav1.ConditionTrue {
		t.Fatalf("the fixed spec is valid: %+v", c)
	}
	if c := testenv.Condition(w, scorev1b1.ConditionRuntimeReady); !strings.Contains(c.Message, "namespace is being deleted") {
		t.Fatalf("the runtime condition says why nothing is deployed: %+v", c)
	}
	events := countEvents(t, ns, "leaving")

	before := writes.Load()
	changeSpec(t, ns, "leaving")
	// The status that observed the new generation, and the refused creations of the claim and
	// the exposure (sent together) in each of at most two passes: a retry would cost more.
	if n := writes.Load() - before; n < 3 || n > 5 {
		t.Errorf("a spec change in a namespace being deleted cost %d writes, want 3 to 5", n)
	}
	if n := countReasonEvents(t, ns, "leaving", string(scorev1b1.ReasonPermissionDenied)); n != 0 {
		t.Errorf("%d PermissionDenied events: a namespace being deleted is no denial", n)
	}
	if n := countEvents(t, ns, "leaving"); n != events {
		t.Errorf("%d events after the spec change, %d before", n, events)
	}
	var claims scorev1b1.ResourceClaimList
	if err := env.Client.List(ctx, &claims, client.InNamespace(ns)); err != nil || len(claims.Items) != 0 {
		t.Fatalf("no claim can be created: %v %d", err, len(claims.Items))
	}
}
