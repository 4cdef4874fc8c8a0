package provisioner

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/score-orchestrator/score-orchestrator/internal/apply"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioning"
)

// Two claims sharing an instance provision it at the same time: the state each writes is
// written on top of the state it read, or not at all. The integration test of sharing found
// the second claim overwriting the password the first had already published (it read no
// state, and wrote over the state the first had created meanwhile).
func TestStateIsWrittenOnTopOfWhatWasRead(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	r := &Reconciler{Client: c, secrets: apply.CacheFirst{Cache: c, APIServer: c}}
	ctx := context.Background()
	id := provisioning.Identity{Namespace: "shared-home", Type: "kv", ID: "main"}
	conflict := func(err error) bool { return apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) }

	for _, tc := range []struct {
		name string
		res  func(password string) provisioning.Result
		read func() map[string]any
	}{
		{"the instance's state", func(p string) provisioning.Result { return provisioning.Result{State: map[string]any{"password": p}} },
			func() map[string]any { st, _ := r.loadState(ctx, id); return st.State }},
		{"the namespace's shared state", func(p string) provisioning.Result { return provisioning.Result{Shared: map[string]any{"password": p}} },
			func() map[string]any { st, _ := r.loadState(ctx, id); return st.Shared }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for round, p := range []string{"first", "second"} { // created, then updated
				a, err := r.loadState(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := r.loadState(ctx, id)
				if err := r.saveState(ctx, id, a, tc.res(p+"-a")); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if err := r.saveState(ctx, id, b, tc.res(p+"-b")); !conflict(err) {
					t.Fatalf("round %d: a write over state read before another write: %v, want a conflict", round, err)
				}
				if got := tc.read()["password"]; got != p+"-a" {
					t.Fatalf("round %d: state %v, want the first writer's", round, got)
				}
			}
		})
	}
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.StateSecretName()}, s); err != nil || s.Labels == nil {
		t.Fatalf("state Secret %v %v", s.Labels, err)
	}
}
