package provisioner

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// staleClaims answers reads of the claim with a copy from before the latest write, as a cache
// that has not caught up does.
type staleClaims struct {
	client.Client
	stale *scorev1b1.ResourceClaim
}

func (s staleClaims) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if c, ok := obj.(*scorev1b1.ResourceClaim); ok && key == client.ObjectKeyFromObject(s.stale) {
		s.stale.DeepCopyInto(c)
		return nil
	}
	return s.Client.Get(ctx, key, obj, opts...)
}

// A claim deleted while its first pass provisioned it: the next pass may read the deleted
// claim from before the status that lists what was provisioned. Releasing on that copy would
// let the claim go with its objects still there; the release must wait for the current one.
func TestReleaseOnAnOutdatedCopyKeepsTheClaim(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, scorev1b1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	claim := &scorev1b1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-db", Finalizers: []string{scorev1b1.ClaimFinalizer}},
		Spec: scorev1b1.ResourceClaimSpec{WorkloadRef: scorev1b1.LocalWorkloadRef{Name: "web"}, Key: "db", Type: "postgres",
			DeprovisionPolicy: scorev1b1.DeprovisionRetain},
	}
	api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(claim).WithStatusSubresource(claim).Build()
	key := client.ObjectKeyFromObject(claim)
	if err := api.Delete(ctx, claim); err != nil {
		t.Fatal(err)
	}
	stale := &scorev1b1.ResourceClaim{}
	if err := api.Get(ctx, key, stale); err != nil {
		t.Fatal(err)
	}
	// The first pass's status write, which the cache has not delivered yet.
	current := stale.DeepCopy()
	current.Status.Phase = scorev1b1.ClaimPhaseBound
	current.Status.Resources = []scorev1b1.AppliedObject{{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "ns", Name: "web-db"}}
	if err := api.Status().Update(ctx, current); err != nil {
		t.Fatal(err)
	}

	r := &Reconciler{Client: staleClaims{Client: api, stale: stale}}
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	got := &scorev1b1.ResourceClaim{}
	if err := api.Get(ctx, key, got); err != nil {
		t.Fatalf("the claim is gone after a release decided on an outdated copy: %v", err)
	}
	if len(got.Finalizers) != 1 {
		t.Fatalf("finalizers %v", got.Finalizers)
	}

	// With the current copy the release goes ahead.
	r = &Reconciler{Client: api}
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if err := api.Get(ctx, key, got); err == nil {
		t.Fatalf("the claim is still there, finalizers %v", got.Finalizers)
	}
}
