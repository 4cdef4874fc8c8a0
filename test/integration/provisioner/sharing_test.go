package provisioner

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// Sharing across namespaces is the platform's decision: claims with the same id from
// namespaces its selector admits share one instance in its sharing namespace, each getting
// the credentials in its own outputs Secret; a claim from another namespace is refused
// (Deny) or gets its own instance (Isolate), and never the shared credentials. The instance
// goes with its last consumer.
func TestSharingAcrossNamespaces(t *testing.T) {
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "shared-home"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"share": "yes"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "team-b", Labels: map[string]string{"share": "yes"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "team-c"}},
	} {
		testenv.Create(t, env.Client, ns)
	}
	a := newClaim("team-a", "web-db", "web", "db", "shared-kv", "main", scorev1b1.DeprovisionDelete)
	b := newClaim("team-b", "api-db", "api", "db", "shared-kv", "main", scorev1b1.DeprovisionDelete)
	testenv.Create(t, env.Client, a, b)
	a, b = waitPhase(t, a, scorev1b1.ClaimPhaseBound), waitPhase(t, b, scorev1b1.ClaimPhaseBound)
	if a.Status.InstanceNamespace != "shared-home" || b.Status.InstanceNamespace != "shared-home" {
		t.Fatalf("instance namespaces %q %q", a.Status.InstanceNamespace, b.Status.InstanceNamespace)
	}
	if !strings.Contains(string(a.Status.Outputs.Raw), ".shared-home") || string(a.Status.Outputs.Raw) != string(b.Status.Outputs.Raw) {
		t.Fatalf("one instance, in the sharing namespace: %s %s", a.Status.Outputs.Raw, b.Status.Outputs.Raw)
	}
	passA, passB := secretValue(t, "team-a", a.Status.SecretRef.Name, "password"), secretValue(t, "team-b", b.Status.SecretRef.Name, "password")
	if passA == "" || passA != passB {
		t.Fatalf("both consumers get the instance's credentials in their own namespace: %q %q", passA, passB)
	}
	var home corev1.SecretList
	if err := env.Client.List(ctx, &home, client.InNamespace("shared-home")); err != nil {
		t.Fatal(err)
	}
	var instance string
	for _, s := range home.Items {
		if strings.HasPrefix(s.Name, "skv-") {
			instance = s.Name
		}
	}
	if instance == "" || len(home.Items) != 2 { // the instance's Secret and its state
		t.Fatalf("the instance lives in the sharing namespace: %d secrets, instance %q", len(home.Items), instance)
	}
	// Its NetworkPolicy admits the consumers of the namespaces the platform selects.
	policy := &networkingv1.NetworkPolicy{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "shared-home", Name: instance}, policy); err != nil {
		t.Fatal(err)
	}
	consumers := metav1.LabelSelector{MatchLabels: map[string]string{"consumer.score.dev/" + a.Status.Instance: "true"}}
	want := []networkingv1.NetworkPolicyPeer{{PodSelector: &consumers},
		{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"share": "yes"}}, PodSelector: &consumers}}
	if from := policy.Spec.Ingress[0].From; !equality.Semantic.DeepEqual(from, want) {
		t.Fatalf("the shared instance's policy admits %+v, want %+v", from, want)
	}

	t.Run("a namespace the platform does not select is denied", func(t *testing.T) {
		c := newClaim("team-c", "x-db", "x", "db", "shared-kv", "main", scorev1b1.DeprovisionDelete)
		testenv.Create(t, env.Client, c)
		c = waitPhase(t, c, scorev1b1.ClaimPhaseFailed)
		if c.Status.Reason != scorev1b1.ReasonPermissionDenied || c.Status.SecretRef != nil || c.Status.Outputs != nil {
			t.Fatalf("status %+v", c.Status)
		}
		var secrets corev1.SecretList
		if err := env.Client.List(ctx, &secrets, client.InNamespace("team-c")); err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets.Items {
			for _, v := range s.Data {
				if string(v) == passA {
					t.Fatalf("the shared credentials reached team-c in %s", s.Name)
				}
			}
		}
	})

	t.Run("or, when the platform says Isolate, gets its own instance", func(t *testing.T) {
		c := newClaim("team-c", "y-db", "y", "db", "isolated-kv", "main", scorev1b1.DeprovisionDelete)
		testenv.Create(t, env.Client, c)
		c = waitPhase(t, c, scorev1b1.ClaimPhaseBound)
		if c.Status.InstanceNamespace != "" || !strings.Contains(string(c.Status.Outputs.Raw), ".team-c") {
			t.Fatalf("its own instance: %q %s", c.Status.InstanceNamespace, c.Status.Outputs.Raw)
		}
		if p := secretValue(t, "team-c", c.Status.SecretRef.Name, "password"); p == passA {
			t.Fatal("an isolated instance has its own credentials")
		}
	})

	t.Run("the instance goes with its last consumer", func(t *testing.T) {
		if err := env.Client.Delete(ctx, a); err != nil {
			t.Fatal(err)
		}
		gone(t, a)
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "shared-home", Name: instance}, &corev1.Secret{}); err != nil {
			t.Fatalf("deleting one consumer keeps the instance: %v", err)
		}
		if err := env.Client.Delete(ctx, b); err != nil {
			t.Fatal(err)
		}
		gone(t, b)
		gone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shared-home", Name: instance}})
	})
}
