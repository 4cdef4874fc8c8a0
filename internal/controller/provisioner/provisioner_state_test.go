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
	"github.com/score-orchestrator/score-orchestrator/internal/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
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
			func() map[string]any { st, _ := r.loadState(ctx, id, true); return st.State }},
		{"the namespace's shared state", func(p string) provisioning.Result { return provisioning.Result{Shared: map[string]any{"password": p}} },
			func() map[string]any { st, _ := r.loadState(ctx, id, true); return st.Shared }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for round, p := range []string{"first", "second"} { // created, then updated
				a, err := r.loadState(ctx, id, true)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := r.loadState(ctx, id, true)
				if err := r.saveState(ctx, id, &a, tc.res(p+"-a")); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if err := r.saveState(ctx, id, &b, tc.res(p+"-b")); !conflict(err) {
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

func TestReadsShared(t *testing.T) {
	for _, tc := range []struct {
		name string
		def  orchconfig.Provisioner
		want bool
	}{
		{"none", orchconfig.Provisioner{URI: "template://p/plain", State: "password: {{ .State.password }}", Outputs: "host: {{ .Init.name }}"}, false},
		{"a shared template", orchconfig.Provisioner{URI: "template://p/writes", Shared: "instances: 1"}, true},
		{"the word in a comment", orchconfig.Provisioner{URI: "template://p/comment", Manifests: "# Shared across namespaces\nn: 1"}, false},
		{"named in a template", orchconfig.Provisioner{URI: "template://p/reads", Manifests: "n: {{ .Shared.instances }}"}, true},
		{"indexed by name", orchconfig.Provisioner{URI: "template://p/index", Outputs: `n: {{ index . "Shared" }}`}, true},
		{"the whole data handed on", orchconfig.Provisioner{URI: "template://p/whole", Outputs: "data: {{ toJson . }}"}, true},
		{"the command strategy", orchconfig.Provisioner{URI: "cmd://x"}, true},
		{"the helm strategy", orchconfig.Provisioner{URI: "helm://chart"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := readsShared(tc.def); got != tc.want {
				t.Errorf("%v, want %v", got, tc.want)
			}
		})
	}
	// The development catalog: the databases never look at the shared state; the Kafka topic
	// keeps its broker there.
	store := configsource.NewStore()
	if _, err := store.Offer("1", devCatalog(t)); err != nil {
		t.Fatal(err)
	}
	loaded, _ := store.Get()
	want := map[string]bool{"template://score-dev/postgres": false, "template://score-dev/redis": false, "template://score-dev/kafka-topic": true}
	for _, d := range loaded.Config.Provisioners {
		if w, ok := want[d.URI]; ok && readsShared(d) != w {
			t.Errorf("%s: %v, want %v", d.URI, !w, w)
		}
		delete(want, d.URI)
	}
	if len(want) > 0 {
		t.Errorf("not in the development catalog: %v", want)
	}
}
