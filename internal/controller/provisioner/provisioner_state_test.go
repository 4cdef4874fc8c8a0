package provisioner

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/apply"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/caches"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
)

// Two claims sharing an instance provision it at the same time: the state each writes is
// written on top of the state it read, or not at all. The integration test of sharing found
// the second claim overwriting the password the first had already published (it read no
// state, and wrote over the state the first had created meanwhile).
func TestStateIsWrittenOnTopOfWhatWasRead(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	r := &Reconciler{Client: c, secrets: caches.CacheFirst{Cache: c, APIServer: c}, APINamespace: "score-system"}
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

// A state Secret is read only when the provisioner wrote it as it is: signed under the key of
// the control plane's namespace, for its namespace and name. A tenant's Secret of the name
// (unsigned, or with a signature copied from elsewhere), or the provisioner's own changed since,
// is refused as an object another owner made, and is left by the release; one older than the
// key is an earlier version's, which did not sign.
func TestStateTheProvisionerDidNotWriteIsRefused(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	r := &Reconciler{Client: c, secrets: caches.CacheFirst{Cache: c, APIServer: c}, APINamespace: "score-system"}
	ctx := context.Background()
	k, err := r.signingKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	k.since = time.Now() // the fake client does not date objects
	refused := func(id provisioning.Identity) {
		t.Helper()
		var owned *apply.OwnedElsewhere
		if _, err := r.loadState(ctx, id, false); !errors.As(err, &owned) || owned.Name != id.StateSecretName() {
			t.Fatalf("read: %v, want it refused", err)
		}
	}
	state := func(id provisioning.Identity) *corev1.Secret {
		t.Helper()
		s := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.StateSecretName()}, s); err != nil {
			t.Fatal(err)
		}
		return s
	}

	ours := provisioning.Identity{Namespace: "team", Type: "postgres", ID: "main"}
	st, err := r.loadState(ctx, ours, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.saveState(ctx, ours, &st, provisioning.Result{State: map[string]any{"password": "drawn"}}); err != nil {
		t.Fatal(err)
	}
	if st, err := r.loadState(ctx, ours, false); err != nil || st.State["password"] != "drawn" {
		t.Fatalf("its own state: %v %v", st.State, err)
	}
	signed := state(ours)

	t.Run("made by a tenant", func(t *testing.T) {
		id := provisioning.Identity{Namespace: "team", Type: "postgres", ID: "forged"}
		forged := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: id.Namespace, Name: id.StateSecretName(), CreationTimestamp: metav1.NewTime(time.Now().Add(time.Minute)),
			Labels: map[string]string{scorev1b1.LabelInstance: id.Hash()}}, Data: map[string][]byte{"state.json": []byte(`{"password":"known"}`)}}
		if err := c.Create(ctx, forged); err != nil {
			t.Fatal(err)
		}
		refused(id)
		if err := r.deleteState(ctx, id); err != nil {
			t.Fatal(err)
		}
		state(id) // left
	})
	t.Run("a signature copied from another instance's", func(t *testing.T) {
		id := provisioning.Identity{Namespace: "other", Type: "postgres", ID: "main"}
		copied := signed.DeepCopy()
		copied.ObjectMeta = metav1.ObjectMeta{Namespace: id.Namespace, Name: id.StateSecretName(), Annotations: signed.Annotations, CreationTimestamp: metav1.NewTime(time.Now().Add(time.Minute))}
		if err := c.Create(ctx, copied); err != nil {
			t.Fatal(err)
		}
		refused(id)
	})
	t.Run("an earlier version's, older than the key", func(t *testing.T) {
		id := provisioning.Identity{Namespace: "team", Type: "postgres", ID: "old"}
		old := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: id.Namespace, Name: id.StateSecretName(), CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour))},
			Data: map[string][]byte{"state.json": []byte(`{"password":"kept"}`)}}
		if err := c.Create(ctx, old); err != nil {
			t.Fatal(err)
		}
		if st, err := r.loadState(ctx, id, false); err != nil || st.State["password"] != "kept" {
			t.Fatalf("%v %v", st.State, err)
		}
	})
	t.Run("a namespace's shared state made by a tenant", func(t *testing.T) {
		id := provisioning.Identity{Namespace: "shop", Type: "kafka-topic", ID: "orders"}
		forged := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: id.Namespace, Name: sharedStateSecret, CreationTimestamp: metav1.NewTime(time.Now().Add(time.Minute))},
			Data: map[string][]byte{"state.json": []byte(`{"broker":"theirs"}`)}}
		if err := c.Create(ctx, forged); err != nil {
			t.Fatal(err)
		}
		var owned *apply.OwnedElsewhere
		if _, err := r.loadState(ctx, id, true); !errors.As(err, &owned) || owned.Name != sharedStateSecret {
			t.Fatalf("read: %v, want it refused", err)
		}
	})
	t.Run("the provisioner's, changed since", func(t *testing.T) {
		changed := signed.DeepCopy()
		changed.Data["state.json"] = []byte(`{"password":"known"}`)
		if err := c.Update(ctx, changed); err != nil {
			t.Fatal(err)
		}
		refused(ours)
		if err := r.deleteState(ctx, ours); err != nil {
			t.Fatal(err)
		}
		state(ours) // left
	})
}
