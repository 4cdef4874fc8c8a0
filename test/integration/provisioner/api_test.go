package provisioner

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// apiToken is the credential the controller reads from score-system/api-token.
const apiToken = "s3cret-token"

// urlPassword and urlToken are secrets the api-url-secrets definition puts into its URL: a
// password in the userinfo, a token in the query.
const (
	urlPassword = "url-pass-0451"
	urlToken    = "url-token-0451"
)

// fakeAPIClient trusts the fake API's certificate; set by startFakeAPI.
var fakeAPIClient *http.Client

// fakeAPI is an external database API on loopback: POST /dbs creates a database that stays
// "creating" until the test makes it ready (mode ok), fails (mode fail) or never gets ready
// (mode never); GET /dbs/<id> reports it; DELETE /dbs/<id> deletes it. Every request without
// the bearer token is refused.
type fakeAPI struct {
	server *httptest.Server
	mu     sync.Mutex
	phases map[string]string
	auth   []string // the Authorization header of every request
	calls  []string // "<method> <path>"
	// creates counts the create requests per database name (an instance's Guid).
	creates map[string]int
}

var api *fakeAPI

func startFakeAPI() *fakeAPI {
	api = &fakeAPI{phases: map[string]string{}, creates: map[string]int{}}
	api.server = httptest.NewTLSServer(http.HandlerFunc(api.serve))
	fakeAPIClient = api.server.Client()
	fakeAPIClient.Timeout = 5 * time.Second
	return api
}

func (a *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.auth = append(a.auth, r.Header.Get("Authorization"))
	a.calls = append(a.calls, r.Method+" "+r.URL.Path)
	if r.Header.Get("Authorization") != "Bearer "+apiToken {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	id := strings.TrimPrefix(r.URL.Path, "/dbs/")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/dbs":
		var in struct{ Name, Mode string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		a.creates[in.Name]++
		id = "db-" + in.Name[:8]
		a.phases[id] = map[string]string{"ok": "creating", "never": "creating", "fail": "error"}[in.Mode]
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id})
	case r.Method == http.MethodGet && a.phases[id] != "":
		body := map[string]any{"status": map[string]any{"phase": a.phases[id]}}
		if a.phases[id] == "ready" {
			body["host"], body["password"] = id+".db.example", "pw-"+id
		}
		_ = json.NewEncoder(w).Encode(body)
	case r.Method == http.MethodDelete && a.phases[id] != "":
		delete(a.phases, id)
		w.WriteHeader(http.StatusNoContent)
	case r.URL.Path == "/answer/500":
		w.WriteHeader(http.StatusInternalServerError)
	case r.URL.Path == "/answer/garbage":
		_, _ = w.Write([]byte("<html>not JSON</html>"))
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func (a *fakeAPI) setPhase(id, phase string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.phases[id] = phase
}

// createsOf is how many create requests the database name received.
func (a *fakeAPI) createsOf(name string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.creates[name]
}

func (a *fakeAPI) called(call string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.calls {
		if c == call {
			return true
		}
	}
	return false
}

func TestExternalAPIProvisioner(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	c := newClaim(ns, "web-db", "web", "db", "api-db", "", scorev1b1.DeprovisionDelete)
	testenv.Create(t, env.Client, c)
	id := provisioning.NewIdentity(ns, "web", "db", "api-db", "", "")
	dbID := "db-" + id.Guid()[:8]

	// Created, and pending while the API says creating: the claim waits, saying why.
	c = waitPhase(t, c, scorev1b1.ClaimPhaseBinding)
	testenv.Eventually(t, 10*time.Second, "the claim reports the API's status", func() error {
		got := &scorev1b1.ResourceClaim{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), got); err != nil {
			return err
		}
		if !strings.Contains(got.Status.Message, `status.phase is "creating"`) {
			return fmt.Errorf("message %q", got.Status.Message)
		}
		return nil
	})
	if !api.called("POST /dbs") || !api.called("GET /dbs/"+dbID) {
		t.Fatalf("calls %v", api.calls)
	}

	// Ready: the outputs come from the status response, the password only in the Secret.
	api.setPhase(dbID, "ready")
	c = waitPhase(t, c, scorev1b1.ClaimPhaseBound)
	if string(c.Status.Outputs.Raw) != `{"host":"`+dbID+`.db.example"}` || !c.Status.OutputsAvailable {
		t.Fatalf("outputs %s", c.Status.Outputs.Raw)
	}
	if got := secretValue(t, ns, c.Status.SecretRef.Name, "password"); got != "pw-"+dbID {
		t.Fatalf("password %q", got)
	}
	status, _ := json.Marshal(c.Status)
	if strings.Contains(string(status), apiToken) || strings.Contains(string(status), "pw-"+dbID) {
		t.Fatalf("a secret reached the status: %s", status)
	}
	api.mu.Lock()
	for _, h := range api.auth {
		if h != "Bearer "+apiToken {
			api.mu.Unlock()
			t.Fatalf("a request went without the credentials: %q", h)
		}
	}
	api.mu.Unlock()

	// Deleted under Delete: the delete request is sent and the state goes.
	if err := env.Client.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	gone(t, c)
	if !api.called("DELETE /dbs/" + dbID) {
		t.Fatalf("no delete request: %v", api.calls)
	}
	gone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: id.StateSecretName()}})
}

func TestExternalAPIFailures(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	cases := []struct {
		mode, message string
	}{
		{"fail", "Provisioner http+api://test/db failed: the API reports status.phase error."},
		{"never", `Provisioner http+api://test/db failed: not ready within 2s (status.phase is "creating").`},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			c := newClaim(ns, "w-"+tc.mode, "w", tc.mode, "api-db", "", scorev1b1.DeprovisionDelete)
			c.Spec.Params = jsonRaw(`{"mode":"` + tc.mode + `"}`)
			testenv.Create(t, env.Client, c)
			c = waitPhase(t, c, scorev1b1.ClaimPhaseFailed)
			if c.Status.Reason != scorev1b1.ReasonClaimFailed || c.Status.Message != tc.message {
				t.Fatalf("status %s: %s", c.Status.Reason, c.Status.Message)
			}
		})
	}
}

// closedAddress is a loopback host and port where nothing listens.
func closedAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

// A URL's userinfo and query values are secrets the platform put there: a request that gets
// no answer, a non-2xx answer or one that is not JSON fails the claim, and neither secret
// reaches the claim's status or its events, where a tenant could read it.
func TestExternalAPIErrorsKeepURLSecrets(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	cases := []struct {
		answer, message string
	}{
		{"none", "connection refused"},
		{"500", "/answer/500?token=redacted&region=redacted answered 500 Internal Server Error"},
		{"garbage", "/answer/garbage?token=redacted&region=redacted did not answer a JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.answer, func(t *testing.T) {
			c := newClaim(ns, "w-"+tc.answer, "w", tc.answer, "api-url-secrets", "", scorev1b1.DeprovisionDelete)
			c.Spec.Params = jsonRaw(`{"answer":"` + tc.answer + `"}`)
			testenv.Create(t, env.Client, c)
			c = waitPhase(t, c, scorev1b1.ClaimPhaseFailed)
			status, _ := json.Marshal(c.Status)
			if strings.Contains(string(status), urlPassword) || strings.Contains(string(status), urlToken) {
				t.Fatalf("a secret of the URL reached the claim's status: %s", status)
			}
			if !strings.Contains(c.Status.Message, tc.message) {
				t.Fatalf("message %q does not say %q", c.Status.Message, tc.message)
			}
		})
	}
	var events eventsv1.EventList
	if err := env.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if strings.Contains(e.Note, urlPassword) || strings.Contains(e.Note, urlToken) {
			t.Fatalf("a secret of the URL reached an event: %s", e.Note)
		}
	}
}

// Claims of one instance (one id, one namespace) provisioned at once send one create request:
// the claim whose pass first records that it is sending it sends it, the others wait for its
// outcome and bind to the same external dependency, not one each.
func TestExternalAPISharedInstanceIsCreatedOnce(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	const n = 8
	claims := make([]*scorev1b1.ResourceClaim, n)
	for i := range claims {
		w := fmt.Sprintf("w%d", i)
		claims[i] = newClaim(ns, w+"-db", w, "db", "api-db", "orders", scorev1b1.DeprovisionDelete)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, c := range claims {
		wg.Go(func() { errs <- env.Client.Create(ctx, c) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	id := provisioning.NewIdentity(ns, "", "", "api-db", "", "orders")
	dbID := "db-" + id.Guid()[:8]
	for _, c := range claims {
		waitClaim(t, c, "waits for the API", func(c *scorev1b1.ResourceClaim) bool {
			return strings.Contains(c.Status.Message, `status.phase is "creating"`)
		})
	}
	api.setPhase(dbID, "ready")
	for _, c := range claims {
		c = waitPhase(t, c, scorev1b1.ClaimPhaseBound)
		if got := secretValue(t, ns, c.Status.SecretRef.Name, "password"); got != "pw-"+dbID {
			t.Fatalf("claim %s bound to %q, want the one instance's password", c.Name, got)
		}
	}
	if got := api.createsOf(id.Guid()); got != 1 {
		t.Fatalf("%d create requests for one instance, want 1", got)
	}
}
