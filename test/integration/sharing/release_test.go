package sharing

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/status/claimdecision"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// apiToken is the credential the provisioner sends the external API, from score-system/api-token.
const apiToken = "sharing-token"

// sharedAPIDefinition is an external database the platform shares from limitsHome and retains,
// created and deleted through an API (API_URL is the fake's address); and a class of which a
// consumer namespace holds one instance at most, which the platform retains.
const sharedAPIDefinition = `  - uri: http+api://test/retained-api
    type: retained-api
    deprovisionPolicy: Retain
    sharing: {namespace: ` + limitsHome + `, namespaceSelector: {matchLabels: {limits: "yes"}}, otherwise: Deny}
    api:
      credentials: {secretRef: {name: api-token, key: token}, prefix: "Bearer "}
      create: {method: PUT, url: "API_URL/dbs/{{ .Guid }}"}
      delete: {url: "API_URL/dbs/{{ .State.created.id }}"}
    outputs: |
      name: {{ .State.created.id }}
  - uri: template://test/retained-bounded-kv
    type: retained-bounded-kv
    deprovisionPolicy: Retain
    sharing: {namespace: ` + limitsHome + `, namespaceSelector: {matchLabels: {limits: "yes"}}, otherwise: Deny, maxInstancesPerNamespace: 1}
    init: *limitsInit
    state: *limitsState
    outputs: *limitsOutputs
    manifests: *limitsManifests
  - uri: template://test/upgraded-kv
    type: upgraded-kv
    deprovisionPolicy: Retain
    sharing: {namespace: ` + limitsHome + `, namespaceSelector: {matchLabels: {limits: "yes"}}, otherwise: Deny, maxInstancesPerNamespace: 2}
    init: *limitsInit
    state: *limitsState
    outputs: *limitsOutputs
    manifests: *limitsManifests
`

// api is the external API of sharedAPIDefinition.
var api *externalAPI

// externalAPI creates a database on PUT /dbs/<name> (answering its id) and deletes it on
// DELETE /dbs/<id>; it records every request.
type externalAPI struct {
	server *httptest.Server
	client *http.Client
	mu     sync.Mutex
	calls  []string // "<method> <path>"
}

func startExternalAPI() *externalAPI {
	a := &externalAPI{}
	a.server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.calls = append(a.calls, r.Method+" "+r.URL.Path)
		a.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+apiToken {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"id": %q}`, strings.TrimPrefix(r.URL.Path, "/dbs/"))
	}))
	a.client = a.server.Client()
	a.client.Timeout = 5 * time.Second
	return a
}

// requests are the requests the API received with the method.
func (a *externalAPI) requests(method string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, c := range a.calls {
		if strings.HasPrefix(c, method+" ") {
			out = append(out, c)
		}
	}
	return out
}

// A refused claim's release must not send an http+api instance's delete request. A tenant, the
// only consumer of an external database the platform retains, turns its policy to Delete, is
// refused, and deletes its Workload: the refusal lets go of the instance's objects and
// identity, and a release decided by the claim's spec would send the delete request with the
// platform's credentials, for the instance's state in the sharing namespace. A claim's release
// deprovisions only an instance its status names, by the platform's policy.
func TestHostileSharedAPIInstanceIsNotDeletedByARefusedClaim(t *testing.T) {
	ns := consumerNamespace(t)
	id := "vault-" + rand.String(5)
	c := newClaim(ns, "tenant-"+id, "tenant-"+id, "db", "retained-api", id, scorev1b1.DeprovisionRetain)
	testenv.Create(t, env.Client, c)
	c = waitPhase(t, c, scorev1b1.ClaimPhaseBound)
	if len(api.requests("PUT")) == 0 {
		t.Fatal("the external database was not created")
	}
	instance, deletes := c.Status.Instance, len(api.requests("DELETE"))
	c.Spec.DeprovisionPolicy = scorev1b1.DeprovisionDelete
	if err := env.Client.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	c = waitPhase(t, c, scorev1b1.ClaimPhaseFailed)
	if c.Status.Reason != scorev1b1.ReasonPermissionDenied || c.Status.Instance != "" {
		t.Fatalf("%s: %s (instance %q)", c.Status.Reason, c.Status.Message, c.Status.Instance)
	}
	if err := env.Client.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	gone(t, c)
	if now := api.requests("DELETE"); len(now) > deletes {
		t.Fatalf("the refused claim's release deleted the retained database: %v", now[deletes:])
	}
	state := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: limitsHome, Name: "score-state-" + instance}, state); err != nil {
		t.Fatalf("the retained database's state: %v", err)
	}
}

// A tenant whose claim is bound to a shared instance the platform retains turns its policy to
// Delete (the orchestrator writes the annotation's policy into the claim's spec) and deletes
// its Workload before the provisioner's next pass (a backlog, a restart, both events merged):
// a release that followed the spec would delete the retained objects and the state, or send
// the external API's delete request. A claim is released by the platform's policy the
// provisioner recorded when it bound the claim.
func TestHostileSharedInstancePolicyChangedBeforeTheProvisionersPass(t *testing.T) {
	for _, typ := range []string{"retained-kv", "retained-api"} {
		t.Run(typ, func(t *testing.T) {
			ns := consumerNamespace(t)
			id := "racy-" + rand.String(5)
			c := newClaim(ns, "racer-"+id, "racer-"+id, "db", typ, id, scorev1b1.DeprovisionRetain)
			testenv.Create(t, env.Client, c)
			c = waitPhase(t, c, scorev1b1.ClaimPhaseBound)
			if c.Status.PlatformPolicy != scorev1b1.DeprovisionRetain {
				t.Fatalf("the platform's policy recorded: %q", c.Status.PlatformPolicy)
			}
			kept := []*corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Namespace: limitsHome, Name: "score-state-" + c.Status.Instance}}}
			for _, o := range c.Status.Resources {
				kept = append(kept, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name}})
			}
			for _, s := range kept {
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
					t.Fatal(err)
				}
			}
			deletes := len(api.requests("DELETE"))
			restartProvisionerAfter(t, func() {
				c.Spec.DeprovisionPolicy = scorev1b1.DeprovisionDelete
				if err := env.Client.Update(ctx, c); err != nil {
					t.Fatal(err)
				}
				if err := env.Client.Delete(ctx, c); err != nil {
					t.Fatal(err)
				}
			})
			gone(t, c)
			for _, s := range kept {
				now := &corev1.Secret{}
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(s), now); err != nil || now.UID != s.UID {
					t.Fatalf("the retained instance's %s went with the claim (%v)", s.Name, err)
				}
			}
			if now := api.requests("DELETE"); len(now) > deletes {
				t.Fatalf("the release deleted the retained database: %v", now[deletes:])
			}
		})
	}
}

// The bound on shared instances per namespace must hold against a churned Workload: an
// instance the platform retains stays in the sharing namespace after its claim goes, so a
// ledger that dropped an instance no live claim holds would let a tenant delete its Workload
// (its claim retained), create it again with another id (the orchestrator deletes the retained
// claim), and have one more instance each time. An instance keeps its place until a release
// deprovisions it; the retained one is bound again by its own id.
func TestHostileRetainedSharedInstancesKeepTheirPlace(t *testing.T) {
	ns := consumerNamespace(t)
	run := rand.String(5)
	first := newClaim(ns, "churn-db", "churn", "db", "retained-bounded-kv", "first-"+run, scorev1b1.DeprovisionRetain)
	testenv.Create(t, env.Client, first)
	first = waitPhase(t, first, scorev1b1.ClaimPhaseBound)
	if err := env.Client.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	gone(t, first)
	if !ledgerLists(t, "template://test/retained-bounded-kv", ns, first.Status.Instance) {
		t.Fatal("the retained instance left the ledger with its claim")
	}

	second := newClaim(ns, "churn-db", "churn", "db", "retained-bounded-kv", "second-"+run, scorev1b1.DeprovisionRetain)
	testenv.Create(t, env.Client, second)
	second = waitPhase(t, second, scorev1b1.ClaimPhaseFailed)
	if second.Status.Reason != scorev1b1.ReasonPolicyViolation || !strings.Contains(second.Status.Message, "Namespace "+ns+" holds 1 instances of template://test/retained-bounded-kv") {
		t.Fatalf("%s: %s", second.Status.Reason, second.Status.Message)
	}
	var secrets corev1.SecretList
	if err := env.Client.List(ctx, &secrets, client.InNamespace(limitsHome)); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		if s.Name == "lkv-"+identityGuid(second, limitsHome)[:8] {
			t.Fatal("the second instance was provisioned")
		}
	}

	t.Run("the retained instance is bound again by its id", func(t *testing.T) {
		if err := env.Client.Delete(ctx, second); err != nil {
			t.Fatal(err)
		}
		gone(t, second)
		again := newClaim(ns, "churn-db", "churn", "db", "retained-bounded-kv", "first-"+run, scorev1b1.DeprovisionRetain)
		testenv.Create(t, env.Client, again)
		if again = waitPhase(t, again, scorev1b1.ClaimPhaseBound); again.Status.Instance != first.Status.Instance {
			t.Fatalf("bound to %s, not the retained %s", again.Status.Instance, first.Status.Instance)
		}
	})
}

// An upgrade from a version whose ledger counted an instance while a claim held it: that
// version left an instance it deprovisioned in its namespace's entry until the namespace's next
// record. Counted for ever, such entries would hold a namespace at its bound with nothing
// there. The first record carries the ledger over: the entries of instances that are gone
// leave it, a retained instance (its state kept) keeps its place.
func TestAnEarlierVersionsLedgerIsCarriedOver(t *testing.T) {
	const uri = "template://test/upgraded-kv"
	ns := consumerNamespace(t)
	run := rand.String(5)
	retained := newClaim(ns, "kept-db", "kept", "db", "upgraded-kv", "kept-"+run, scorev1b1.DeprovisionRetain)
	testenv.Create(t, env.Client, retained)
	retained = waitPhase(t, retained, scorev1b1.ClaimPhaseBound)
	if err := env.Client.Delete(ctx, retained); err != nil {
		t.Fatal(err)
	}
	gone(t, retained)

	// The ledger as the earlier version left it: not marked, the namespace's entry listing an
	// instance it deprovisioned, at the bound of two.
	const deprovisioned = "00000000deadbeef"
	ledger := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: limitsHome, Name: claimdecision.LedgerName(uri)}, ledger); err != nil {
		t.Fatal(err)
	}
	delete(ledger.Annotations, "score.dev/shares-counted")
	ledger.Data[ns] = claimdecision.LedgerEntry([]string{retained.Status.Instance, deprovisioned})
	if err := env.Client.Update(ctx, ledger); err != nil {
		t.Fatal(err)
	}

	next := newClaim(ns, "next-db", "next", "db", "upgraded-kv", "next-"+run, scorev1b1.DeprovisionRetain)
	testenv.Create(t, env.Client, next)
	next = waitPhase(t, next, scorev1b1.ClaimPhaseBound)
	if ledgerLists(t, uri, ns, deprovisioned) || !ledgerLists(t, uri, ns, retained.Status.Instance) || !ledgerLists(t, uri, ns, next.Status.Instance) {
		t.Fatal("the ledger was not carried over: the deprovisioned instance dropped, the retained one and the next kept")
	}
	third := newClaim(ns, "third-db", "third", "db", "upgraded-kv", "third-"+run, scorev1b1.DeprovisionRetain)
	testenv.Create(t, env.Client, third)
	if third = waitPhase(t, third, scorev1b1.ClaimPhaseFailed); third.Status.Reason != scorev1b1.ReasonPolicyViolation {
		t.Fatalf("%s: %s (the retained instance keeps its place)", third.Status.Reason, third.Status.Message)
	}
}

// ledgerLists reports whether the ledger of the definition lists the instance for namespace.
func ledgerLists(t *testing.T, uri, namespace, instance string) bool {
	t.Helper()
	ledger := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: limitsHome, Name: claimdecision.LedgerName(uri)}, ledger); err != nil {
		t.Fatal(err)
	}
	for _, h := range claimdecision.LedgerInstances(ledger.Data[namespace]) {
		if h == instance {
			return true
		}
	}
	return false
}
