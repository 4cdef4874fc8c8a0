package provisioner

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// secretRefDefinitions are the definitions of the secret reference tests: one that echoes a
// param into an output (a careless endpoint definition), and two that refer to
// a platform Secret, one of which lists it.
const secretRefDefinitions = `  - uri: template://test/echo
    type: echo
    outputs: |
      url: {{ printf "http://echo.%s.svc%s" .Namespace (.Params.path | default "") | quote }}
  - uri: template://test/platform-ref
    type: platform-ref
    platformSecrets: [platform-*]
    outputs: |
      token: {{ encodeSecretRef "platform-token" "token" }}
    expected_outputs: [token]
  - uri: template://test/unlisted-ref
    type: unlisted-ref
    outputs: |
      token: {{ encodeSecretRef "platform-token" "token" }}
    expected_outputs: [token]
`

// A claim of the endpoint definition, its path param a secret reference, must not copy a
// colleague's database password into its own outputs Secret. A reference resolves only when
// the definition made it, and names a Secret of the instance or one the definition lists.
func TestSecretReferencesResolveOnlyWhatTheDefinitionMade(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	// kv counts its runs in its state, whose write wakes its claim again: a kv claim left
	// behind keeps the package's provisioner busy, and later claims wait.
	t.Cleanup(func() { _ = env.Client.DeleteAllOf(ctx, &scorev1b1.ResourceClaim{}, client.InNamespace(ns)) })
	victim := newClaim(ns, "owner-db", "owner", "db", "kv", "", scorev1b1.DeprovisionDelete)
	platform := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "platform-token"}, StringData: map[string]string{"token": "the-platforms-token-0123456789"}}
	testenv.Create(t, env.Client, victim, platform)
	victim = waitPhase(t, victim, scorev1b1.ClaimPhaseBound)
	instance := victim.Status.Resources[0].Name // the kv's Secret, its password
	password := secretValue(t, ns, instance, "password")

	// refused waits for the claim to be refused with PermissionDenied, saying why, and checks
	// that none of the values reached its status or an outputs Secret.
	refused := func(t *testing.T, c *scorev1b1.ResourceClaim, says string) {
		t.Helper()
		testenv.Create(t, env.Client, c)
		c = waitPhase(t, c, scorev1b1.ClaimPhaseFailed)
		if c.Status.Reason != scorev1b1.ReasonPermissionDenied || !strings.Contains(c.Status.Message, says) || c.Status.SecretRef != nil {
			t.Fatalf("status %s %q, outputs Secret %v", c.Status.Reason, c.Status.Message, c.Status.SecretRef)
		}
		for _, v := range []string{password, "the-platforms-token-0123456789"} {
			if c.Status.Outputs != nil && strings.Contains(string(c.Status.Outputs.Raw), v) || strings.Contains(c.Status.Message, v) {
				t.Fatal("a Secret's value reached the claim's status")
			}
		}
		s := &corev1.Secret{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: scorev1b1.OutputsSecretName(c.Name)}, s); err == nil {
			t.Fatalf("an outputs Secret was written for the refused claim: %v", s.Data)
		}
	}

	t.Run("a param echoed into an output", func(t *testing.T) {
		c := newClaim(ns, "thief-api", "thief", "api", "echo", "", scorev1b1.DeprovisionDelete)
		c.Spec.Params = jsonRaw(`{"path": "/🔐💬` + instance + `_password💬🔐"}`)
		refused(t, c, "params.path holds 🔐 or 💬")
	})
	t.Run("a platform Secret the definition does not list", func(t *testing.T) {
		refused(t, newClaim(ns, "thief-token", "thief", "token", "unlisted-ref", "", scorev1b1.DeprovisionDelete),
			"secret platform-token is not the instance's")
	})
	t.Run("a platform Secret the definition lists", func(t *testing.T) {
		c := newClaim(ns, "app-token", "app", "token", "platform-ref", "", scorev1b1.DeprovisionDelete)
		testenv.Create(t, env.Client, c)
		c = waitPhase(t, c, scorev1b1.ClaimPhaseBound)
		if got := secretValue(t, ns, c.Status.SecretRef.Name, "token"); got != "the-platforms-token-0123456789" {
			t.Fatalf("token %q", got)
		}
	})
}
