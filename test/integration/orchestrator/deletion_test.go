package orchestrator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

const provisionerFinalizer = "provisioner.test/cleanup"

// Path 9: deleting a Workload applies each claim's policy: Delete waits until the claim is
// gone, Retain removes ownership and keeps the claim, Orphan leaves it untouched. The
// finalizer goes only after cleanup, and the Workload says what it waits for meanwhile.
func TestDeletionPolicies(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := namespace(t)
	create(t, workload(ns, "shop",
		withResource("db", "postgres", scorev1b1.AnnotationDeprovisionPolicy, "Delete"),
		withResource("cache", "redis", scorev1b1.AnnotationDeprovisionPolicy, "Retain"),
		withResource("queue", "amqp", scorev1b1.AnnotationDeprovisionPolicy, "Orphan"),
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
			if c := condition(w, scorev1b1.ConditionReady); !strings.Contains(c.Message, "waiting for dependencies to be released: db") {
				return fmt.Errorf("ready: %s", c.Message)
			}
			return nil
		})
		if c := refreshed(t, db); c.DeletionTimestamp.IsZero() {
			t.Fatal("the Delete claim was not deleted")
		}
		consistently(t, "the Workload stays while the claim does", 500*time.Millisecond, func() error {
			get(t, ns, "shop")
			return nil
		})
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
		eventually(t, "workload gone", func() error {
			err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, &scorev1b1.Workload{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there: %v", err)
		})
	})
}

// Deleting a Workload whose claim is Retain and creating it again: the retained claim, tied
// to the old UID, is released so that a fresh claim can bind to the retained data.
func TestRecreateAfterRetain(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := namespace(t)
	create(t, workload(ns, "blog", withResource("db", "postgres"))) // Retain by the provisioner's default
	old := get(t, ns, "blog")
	claim := claimOf(t, old, "db", "postgres")
	if err := env.Client.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	eventually(t, "workload gone", func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "blog"}, &scorev1b1.Workload{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
	if c := refreshed(t, claim); len(c.OwnerReferences) > 0 || c.Spec.WorkloadRef.UID != string(old.UID) {
		t.Fatalf("retained claim %+v", c.ObjectMeta)
	}
	create(t, workload(ns, "blog", withResource("db", "postgres")))
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

// Regression: the retained claim a re-created Workload releases is owned by no Workload, so
// its deletion, which the provisioner's finalizer delays, never brought the new Workload
// back, and the fresh claim was not created until something else requeued it.
func TestRecreateAfterRetainWaitsForTheRelease(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := namespace(t)
	create(t, workload(ns, "shop", withResource("db", "postgres"))) // Retain by the provisioner's default
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
	eventually(t, "workload gone", func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, &scorev1b1.Workload{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
	create(t, workload(ns, "shop", withResource("db", "postgres")))
	fresh := get(t, ns, "shop")
	eventually(t, "the retained claim released", func() error {
		if c := refreshed(t, claim); c.DeletionTimestamp.IsZero() {
			return fmt.Errorf("not released yet")
		}
		return nil
	})
	time.Sleep(time.Second) // the Workload's passes while the release is pending are over
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
