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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testenv"
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

// liveUIDs are the UIDs of objs, by kind and name; a missing object has none.
func liveUIDs(objs []scorev1b1.AppliedObject) (map[string]types.UID, error) {
	out := map[string]types.UID{}
	for _, o := range objs {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.FromAPIVersionAndKind(o.APIVersion, o.Kind))
		switch err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, u); {
		case err == nil:
			out[o.Kind+" "+o.Name] = u.GetUID()
		case !apierrors.IsNotFound(err):
			return nil, err
		}
	}
	return out, nil
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
		if err := c.Create(ctx, &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: scorev1b1.WorkloadSpec{
			Containers: map[string]scorev1b1.Container{"main": {Image: "nginx:1.27", Variables: map[string]string{"DB": "${resources.db.uri}"}}},
			Resources:  map[string]scorev1b1.Resource{"db": {Type: "postgres", ID: ptr.To("main")}},
		}}); err != nil {
			t.Fatal(err)
		}
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
		time.Sleep(2 * time.Second) // anything the release would still delete, it has begun to
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
	if err := c.Create(ctx, &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}, Spec: scorev1b1.WorkloadSpec{
		Containers: map[string]scorev1b1.Container{"main": {Image: "nginx:1.27", Variables: map[string]string{"DB": "${resources.db.uri}"}}},
		Resources:  map[string]scorev1b1.Resource{"db": {Type: "postgres"}},
	}}); err != nil {
		t.Fatal(err)
	}
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
		for i := 0; i < 10; i++ { // and it keeps waiting
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, &scorev1b1.Workload{}); err != nil {
				t.Fatalf("the Workload went before its dependency: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
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
