package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// claimOfWorkload returns the one claim of Workload ns/name, Bound with its outputs.
func claimOfWorkload(t *testing.T, ns, name string) *scorev1b1.ResourceClaim {
	t.Helper()
	var out *scorev1b1.ResourceClaim
	testenv.Eventually(t, 2*time.Minute, name+"'s claim Bound", func() error {
		var list scorev1b1.ResourceClaimList
		if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{scorev1b1.LabelWorkload: name}); err != nil {
			return err
		}
		if len(list.Items) != 1 || list.Items[0].Status.Phase != scorev1b1.ClaimPhaseBound || list.Items[0].Status.SecretRef == nil {
			return fmt.Errorf("%d claims", len(list.Items))
		}
		out = &list.Items[0]
		return nil
	})
	return out
}

// instance is what a claim provisioned, and the instance's state.
func instance(cl *scorev1b1.ResourceClaim) []scorev1b1.AppliedObject {
	objs := append([]scorev1b1.AppliedObject(nil), cl.Status.Resources...)
	return append(objs, scorev1b1.AppliedObject{APIVersion: "v1", Kind: "Secret", Namespace: cl.Namespace, Name: "score-state-" + cl.Status.Instance})
}

// liveUIDs are the UIDs of objs, by kind and name; a missing object has none, and one being
// deleted (a PVC its pod still uses, say) is marked so.
func liveUIDs(objs []scorev1b1.AppliedObject) (map[string]types.UID, error) {
	out := map[string]types.UID{}
	for _, o := range objs {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.FromAPIVersionAndKind(o.APIVersion, o.Kind))
		switch err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, u); {
		case err == nil && u.GetDeletionTimestamp() != nil:
			out[o.Kind+" "+o.Name] = u.GetUID() + " (being deleted)"
		case err == nil:
			out[o.Kind+" "+o.Name] = u.GetUID()
		case !apierrors.IsNotFound(err):
			return nil, err
		}
	}
	return out, nil
}

// paramsAnswered sets the params of the Workload's resource key and waits until the
// provisioner has answered the claim's new generation with Bound; it returns the claim.
func paramsAnswered(t *testing.T, ns, name, key, params string) *scorev1b1.ResourceClaim {
	t.Helper()
	update(t, client.ObjectKey{Namespace: ns, Name: name}, func(w *scorev1b1.Workload) {
		r := w.Spec.Resources[key]
		r.Params = jsonObject(params)
		w.Spec.Resources[key] = r
	})
	var out *scorev1b1.ResourceClaim
	testenv.Eventually(t, 2*time.Minute, name+"'s claim answering its params", func() error {
		var list scorev1b1.ResourceClaimList
		if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{scorev1b1.LabelWorkload: name}); err != nil {
			return err
		}
		for i := range list.Items {
			cl := &list.Items[i]
			if cl.Spec.Key != key {
				continue
			}
			if cl.Spec.Params == nil || string(cl.Spec.Params.Raw) != params {
				return fmt.Errorf("params %v", cl.Spec.Params)
			}
			if cl.Status.Phase != scorev1b1.ClaimPhaseBound || cl.Status.ObservedGeneration != cl.Generation {
				return fmt.Errorf("%s for generation %d of %d", cl.Status.Phase, cl.Status.ObservedGeneration, cl.Generation)
			}
			out = cl
			return nil
		}
		return fmt.Errorf("no claim for %s", key)
	})
	return out
}

func workloadGone(t *testing.T, ns, name string) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, name+" gone", func() error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &scorev1b1.Workload{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
}

// A shared instance (resources with the same type and id) outlives each of its consumers
// but the last: deleting one Workload leaves the instance — the same objects, the same
// credentials — to the other, which stays Ready; deleting the last removes it.
func TestSharedInstanceOutlivesEachConsumer(t *testing.T) {
	ns := "e2e-shared"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"orders", "billing"} {
		testenv.Create(t, c, testenv.Workload(ns, name, testenv.WithVar("DB", "${resources.db.uri}"), testenv.WithResource("db", "postgres", testenv.ResourceID("main"))))
	}
	for _, name := range []string{"orders", "billing"} {
		waitWorkload(t, client.ObjectKey{Namespace: ns, Name: name}, "Ready", nil)
	}
	orders, billing := claimOfWorkload(t, ns, "orders"), claimOfWorkload(t, ns, "billing")
	if orders.Status.Instance == "" || orders.Status.Instance != billing.Status.Instance {
		t.Fatalf("one id, one instance: %q %q", orders.Status.Instance, billing.Status.Instance)
	}
	objs := instance(orders)
	objects, err := liveUIDs(objs)
	if err != nil || len(objects) != len(objs) || len(objs) < 4 {
		t.Fatalf("the instance: %v of %v (%v)", objects, objs, err)
	}
	_, credentials := outputsOf(t, billing)
	if _, theirs := outputsOf(t, orders); fmt.Sprint(theirs) != fmt.Sprint(credentials) {
		t.Fatal("the consumers of one instance hold different credentials")
	}

	if err := c.Delete(ctx, &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders"}}); err != nil {
		t.Fatal(err)
	}
	workloadGone(t, ns, "orders")
	t.Run("the instance stays while a consumer remains", func(t *testing.T) {
		// The release of orders' claim is over: the provisioner lets a claim go last.
		if err := c.Get(ctx, client.ObjectKeyFromObject(orders), &scorev1b1.ResourceClaim{}); !apierrors.IsNotFound(err) {
			t.Fatalf("orders' claim outlived its Workload: %v", err)
		}
		// The positive control: a later change of the remaining consumer's claim, a param the
		// definition does not read, is answered by a pass of the provisioner over the instance.
		answered := paramsAnswered(t, ns, "billing", "db", `{"unread":"after-orders"}`)
		if answered.Status.Instance != billing.Status.Instance {
			t.Fatalf("the remaining consumer moved to another instance: %s, was %s", answered.Status.Instance, billing.Status.Instance)
		}
		if now, err := liveUIDs(instance(billing)); err != nil || fmt.Sprint(now) != fmt.Sprint(objects) {
			t.Fatalf("the instance's objects changed: %v, were %v (%v)", now, objects, err)
		}
		w := waitWorkload(t, client.ObjectKey{Namespace: ns, Name: "billing"}, "still Ready", nil)
		if _, now := outputsOf(t, claimOfWorkload(t, ns, w.Name)); fmt.Sprint(now) != fmt.Sprint(credentials) {
			t.Fatal("the remaining consumer's credentials changed")
		}
	})

	if err := c.Delete(ctx, &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "billing"}}); err != nil {
		t.Fatal(err)
	}
	workloadGone(t, ns, "billing")
	t.Run("it goes with the last", func(t *testing.T) {
		testenv.Eventually(t, time.Minute, "the instance deprovisioned", func() error {
			left, err := liveUIDs(objs)
			if err != nil || len(left) > 0 {
				return fmt.Errorf("left: %v (%v)", left, err)
			}
			return nil
		})
	})
}

// A deletion that cannot finish says what it waits for, all the way down: the Workload names
// the dependency, and the dependency's claim names the object that will not go (here one
// held by a finalizer of someone else's). Once the object goes, so do both.
func TestStuckDeletionSaysWhatItWaitsFor(t *testing.T) {
	ns := "e2e-stuck"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	testenv.Create(t, c, testenv.Workload(ns, "shop", testenv.WithVar("DB", "${resources.db.uri}"), testenv.WithResource("db", "postgres")))
	waitWorkload(t, client.ObjectKey{Namespace: ns, Name: "shop"}, "Ready", nil)
	claim := claimOfWorkload(t, ns, "shop")
	var held *corev1.Secret
	for _, o := range claim.Status.Resources {
		if o.Kind == "Secret" {
			held = &corev1.Secret{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.Name}, held); err != nil {
				t.Fatal(err)
			}
		}
	}
	if held == nil {
		t.Fatalf("postgres provisions a Secret: %+v", claim.Status.Resources)
	}
	const hold = "e2e.score.dev/hold"
	patch := client.MergeFrom(held.DeepCopy())
	held.Finalizers = append(held.Finalizers, hold)
	if err := c.Patch(ctx, held, patch); err != nil {
		t.Fatal(err)
	}

	if err := c.Delete(ctx, &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}}); err != nil {
		t.Fatal(err)
	}
	t.Run("the Workload names the dependency, the claim the object", func(t *testing.T) {
		testenv.Eventually(t, time.Minute, "the waits said", func() error {
			w := &scorev1b1.Workload{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, w); err != nil {
				return err
			}
			r := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
			if r == nil || r.Status != metav1.ConditionFalse || r.Reason != string(scorev1b1.ReasonClaimPending) ||
				r.Message != "Deleting; waiting for dependencies to be released: db." {
				return fmt.Errorf("the Workload: %+v", r)
			}
			cl := &scorev1b1.ResourceClaim{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(claim), cl); err != nil {
				return err
			}
			if want := "Deprovisioning; waiting for Secret " + held.Name + " to be deleted."; cl.Status.Message != want {
				return fmt.Errorf("the claim: %q, want %q", cl.Status.Message, want)
			}
			return nil
		})
		// And it keeps waiting: a later pass, the answer to a change of the Workload, still does.
		key := client.ObjectKey{Namespace: ns, Name: "shop"}
		update(t, key, func(w *scorev1b1.Workload) {
			w.Spec.Containers["main"].Variables["CHANGED"] = "while deleting"
		})
		testenv.Eventually(t, time.Minute, "the answer to the change", func() error {
			w := &scorev1b1.Workload{}
			switch err := c.Get(ctx, key, w); {
			case apierrors.IsNotFound(err):
				t.Fatal("the Workload went before its dependency")
			case err != nil:
				return err
			}
			r := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
			if w.Status.ObservedGeneration != w.Generation || r == nil || r.ObservedGeneration != w.Generation {
				return fmt.Errorf("generation %d observed: %d", w.Generation, w.Status.ObservedGeneration)
			}
			if r.Message != "Deleting; waiting for dependencies to be released: db." {
				t.Fatalf("the Workload stopped waiting for its dependency: %+v", r)
			}
			return nil
		})
	})

	if err := c.Get(ctx, client.ObjectKeyFromObject(held), held); err != nil {
		t.Fatal(err)
	}
	patch = client.MergeFrom(held.DeepCopy())
	held.Finalizers = nil
	if err := c.Patch(ctx, held, patch); err != nil {
		t.Fatal(err)
	}
	workloadGone(t, ns, "shop")
	if err := c.Get(ctx, client.ObjectKeyFromObject(claim), &scorev1b1.ResourceClaim{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the claim outlived its Workload: %v", err)
	}
}
