package orchestrator

import (
	"context"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/scheme"
)

// A claim the orchestrator created, and that was deleted before its cache showed it, is
// created again: the memory of objects created but not yet cached must not keep it for the
// life of the process, or the Workload waits for a claim that no longer exists until a
// restart. The cache here never shows the claim, and the API server no longer has it.
func TestAClaimGoneBeforeTheCacheSawItIsCreatedAgain(t *testing.T) {
	store := sampleConfig(t)
	w := &scorev1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", UID: "w-uid", Generation: 1},
		Spec: scorev1b1.WorkloadSpec{
			Containers: map[string]scorev1b1.Container{"main": {Image: "nginx"}},
			Resources:  map[string]scorev1b1.Resource{"db": {Type: "postgres"}},
		},
	}
	claimsCreated := 0
	cache := withWorkloadIndex(fake.NewClientBuilder().WithScheme(scheme.New())).WithObjects(w).WithStatusSubresource(w).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*scorev1b1.ResourceClaim); ok {
				claimsCreated++
				return nil // created, then deleted before the cache showed it
			}
			return c.Create(ctx, obj, opts...)
		}}).Build()
	apiServer := fake.NewClientBuilder().WithScheme(scheme.New()).Build() // has no claim
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	r := &Reconciler{Client: cache, APIReader: apiServer, Config: store, Recorder: events.NewFakeRecorder(100), Now: func() time.Time { return now }}
	pass := func() {
		t.Helper()
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}); err != nil {
			t.Fatal(err)
		}
	}

	pass()
	if claimsCreated != 1 {
		t.Fatalf("first pass: %d claims created, want 1", claimsCreated)
	}
	now = now.Add(pendingFor / 2)
	pass()
	if claimsCreated != 1 {
		t.Fatalf("a pass soon after: %d claims created, want 1 (the creation is taken on trust while the cache catches up)", claimsCreated)
	}
	now = now.Add(pendingFor)
	pass()
	if claimsCreated != 2 {
		t.Fatalf("a pass after the cache should have caught up: %d claims created, want 2 (the claim is gone, so it is created again)", claimsCreated)
	}
}

// sampleConfig is a config store that holds the sample Orchestrator Config as revision 1,
// settled.
func sampleConfig(t *testing.T) *configsource.Store {
	t.Helper()
	doc, err := os.ReadFile("../../../config/samples/orchestrator-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	store := configsource.NewStore()
	if _, err := store.Offer("1", doc); err != nil {
		t.Fatal(err)
	}
	store.Settle()
	return store
}

// withWorkloadIndex is b, its scheme set, with the index the orchestrator's manager has
// (indexWorkload).
func withWorkloadIndex(b *fake.ClientBuilder) *fake.ClientBuilder {
	for _, obj := range indexedByWorkload() {
		b = b.WithIndex(obj, indexWorkload, workloadLabel)
	}
	return b
}
