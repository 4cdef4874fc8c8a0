package sharing

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
	"github.com/score-orchestrator/score-orchestrator/internal/status/claimdecision"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// limitsHome shares the instances of the tests with the namespaces labelled limits=yes.
const limitsHome = "limits-home"

// sharingLimitDefinitions share from limitsHome: at most two instances per consumer namespace;
// the id main only; and an instance the platform retains.
const sharingLimitDefinitions = `  - uri: template://test/bounded-kv
    type: bounded-kv
    sharing: {namespace: ` + limitsHome + `, namespaceSelector: {matchLabels: {limits: "yes"}}, otherwise: Deny, maxInstancesPerNamespace: 2}
    init: &limitsInit |
      name: lkv-{{ substr 0 8 .Guid }}
    state: &limitsState |
      password: {{ dig "password" (randAlphaNum 32) .State | quote }}
    outputs: &limitsOutputs |
      host: {{ .Init.name }}.{{ .Namespace }}
      password: {{ encodeSecretRef .Init.name "password" }}
    manifests: &limitsManifests |
      - apiVersion: v1
        kind: Secret
        metadata: {name: {{ .Init.name }}}
        stringData: {password: {{ .State.password | quote }}}
  - uri: template://test/listed-kv
    type: listed-kv
    sharing: {namespace: ` + limitsHome + `, namespaceSelector: {matchLabels: {limits: "yes"}}, otherwise: Deny, ids: [main]}
    init: *limitsInit
    state: *limitsState
    outputs: *limitsOutputs
    manifests: *limitsManifests
  - uri: template://test/retained-kv
    type: retained-kv
    deprovisionPolicy: Retain
    sharing: {namespace: ` + limitsHome + `, namespaceSelector: {matchLabels: {limits: "yes"}}, otherwise: Deny}
    init: *limitsInit
    state: *limitsState
    outputs: *limitsOutputs
    manifests: *limitsManifests
`

// consumerNamespace creates a consumer namespace of the test's own, which the platform admits.
func consumerNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: testenv.Namespace(t, env.Client)}, ns); err != nil {
		t.Fatal(err)
	}
	metav1.SetMetaDataLabel(&ns.ObjectMeta, "limits", "yes")
	if err := env.Client.Update(ctx, ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// An admitted tenant must not create instances in the sharing namespace without bound, one
// per id. Five claims of distinct ids from one namespace, created at once and provisioned by
// concurrent workers, get two instances, the platform's bound; the other three are refused
// before anything is provisioned, and the ledger lists the two. An id the platform does not
// share is denied.
func TestSharedInstancesPerNamespaceAreBounded(t *testing.T) {
	ns := consumerNamespace(t)
	run := rand.String(5) // ids of this run's own: the same ids from another namespace would join its instances
	var claims []*scorev1b1.ResourceClaim
	for i := range 5 {
		claims = append(claims, newClaim(ns, fmt.Sprintf("w%d-db", i), fmt.Sprintf("w%d", i), "db", "bounded-kv", fmt.Sprintf("db-%d-%s", i, run), scorev1b1.DeprovisionDelete))
	}
	testenv.Create(t, env.Client, claims[0], claims[1], claims[2], claims[3], claims[4])
	var bound, refused []*scorev1b1.ResourceClaim
	testenv.Eventually(t, testenv.WaitTimeout, "every claim answered", func() error {
		bound, refused = nil, nil
		for _, c := range claims {
			got := &scorev1b1.ResourceClaim{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), got); err != nil {
				return err
			}
			switch {
			case got.Status.Phase == scorev1b1.ClaimPhaseBound:
				bound = append(bound, got)
			case got.Status.Phase == scorev1b1.ClaimPhaseFailed && got.Status.Reason == scorev1b1.ReasonPolicyViolation:
				refused = append(refused, got)
			default:
				return fmt.Errorf("%s: %s %s", got.Name, got.Status.Phase, got.Status.Message)
			}
		}
		return nil
	})
	if len(bound) != 2 || len(refused) != 3 {
		t.Fatalf("%d bound, %d refused: want the bound, 2, and 3 refused", len(bound), len(refused))
	}
	if m := refused[0].Status.Message; !strings.Contains(m, "Namespace "+ns+" holds 2 instances of template://test/bounded-kv shared from namespace limits-home, the most the platform allows") {
		t.Fatalf("message %q", m)
	}
	for _, c := range refused {
		if len(c.Status.Resources) != 0 || c.Status.SecretRef != nil {
			t.Fatalf("something was provisioned for the refused %s: %v", c.Name, c.Status.Resources)
		}
	}
	var secrets corev1.SecretList
	if err := env.Client.List(ctx, &secrets, client.InNamespace(limitsHome)); err != nil {
		t.Fatal(err)
	}
	instances := 0
	for _, s := range secrets.Items {
		for _, c := range claims {
			if strings.HasPrefix(s.Name, "lkv-") && s.Name == "lkv-"+identityGuid(c, limitsHome)[:8] {
				instances++
			}
		}
	}
	if instances != 2 {
		t.Fatalf("%d instances in the sharing namespace, want 2", instances)
	}
	ledger := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: limitsHome, Name: claimdecision.LedgerName("template://test/bounded-kv")}, ledger); err != nil {
		t.Fatal(err)
	}
	if got, want := ledger.Data[ns], claimdecision.LedgerEntry([]string{bound[0].Status.Instance, bound[1].Status.Instance}); got != want {
		t.Fatalf("the ledger lists %q, want %q", got, want)
	}

	t.Run("a place freed is taken by a refused claim", func(t *testing.T) {
		if err := env.Client.Delete(ctx, bound[0]); err != nil {
			t.Fatal(err)
		}
		gone(t, bound[0])
		testenv.Eventually(t, 2*time.Minute, "a refused claim bound", func() error {
			for _, c := range refused {
				got := &scorev1b1.ResourceClaim{}
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), got); err != nil {
					return err
				}
				if got.Status.Phase == scorev1b1.ClaimPhaseBound {
					return nil
				}
			}
			return fmt.Errorf("none bound")
		})
	})

	t.Run("an id the platform does not share is denied", func(t *testing.T) {
		c := newClaim(ns, "x-db", "x", "db", "listed-kv", "other", scorev1b1.DeprovisionDelete)
		testenv.Create(t, env.Client, c)
		c = waitPhase(t, c, scorev1b1.ClaimPhaseFailed)
		if c.Status.Reason != scorev1b1.ReasonPermissionDenied || c.Status.Message != "Namespace "+ns+" may not share listed-kv other: the platform shares only the ids main." {
			t.Fatalf("%s: %s", c.Status.Reason, c.Status.Message)
		}
	})
}

// Once no other claim is bound, a tenant's claim of a shared instance the platform retains,
// with the policy Delete, would delete its data and state when it went. Such a claim is
// refused before anything is provisioned, and its deletion deletes nothing.
func TestSharedInstancePolicyIsThePlatforms(t *testing.T) {
	ns := consumerNamespace(t)
	owner := newClaim(limitsHome, "keeper-db", "keeper", "db", "retained-kv", "ledger", scorev1b1.DeprovisionRetain)
	testenv.Create(t, env.Client, owner)
	owner = waitPhase(t, owner, scorev1b1.ClaimPhaseBound)
	data := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: limitsHome, Name: owner.Status.Resources[0].Name}}
	state := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: limitsHome, Name: "score-state-" + owner.Status.Instance}}
	password := secretValue(t, limitsHome, data.Name, "password")
	if err := env.Client.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	gone(t, owner) // retained: the data and the state stay, and no claim is bound to them

	thief := newClaim(ns, "thief-db", "thief", "db", "retained-kv", "ledger", scorev1b1.DeprovisionDelete)
	testenv.Create(t, env.Client, thief)
	thief = waitPhase(t, thief, scorev1b1.ClaimPhaseFailed)
	if thief.Status.Reason != scorev1b1.ReasonPermissionDenied || !strings.Contains(thief.Status.Message, "The claim's deprovision policy Delete is not Retain, the platform's for the shared retained-kv ledger") || thief.Status.SecretRef != nil {
		t.Fatalf("%s: %s (outputs Secret %v)", thief.Status.Reason, thief.Status.Message, thief.Status.SecretRef)
	}
	if err := env.Client.Delete(ctx, thief); err != nil {
		t.Fatal(err)
	}
	gone(t, thief)
	for _, s := range []*corev1.Secret{data, state} {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
			t.Fatalf("the retained instance's %s went with the refused claim: %v", s.Name, err)
		}
	}
	if got := secretValue(t, limitsHome, data.Name, "password"); got != password {
		t.Fatal("the retained data changed")
	}
}

// identityGuid is the Guid of the claim's instance in namespace.
func identityGuid(c *scorev1b1.ResourceClaim, namespace string) string {
	return provisioning.NewIdentity(namespace, c.Spec.WorkloadRef.Name, c.Spec.Key, c.Spec.Type, c.Spec.Class, c.Spec.ID).Guid()
}
