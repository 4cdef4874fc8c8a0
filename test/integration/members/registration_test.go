package members

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// catcher is the server a hostile registration names: it answers /version as an API server
// does and records the credentials every request carried. With body set, it answers every
// request with an error whose body echoes the request's credentials.
type catcher struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newCatcher(t *testing.T, echo bool) *catcher {
	c := &catcher{}
	c.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.seen = append(c.seen, r.Header.Get("Authorization"))
		c.mu.Unlock()
		if echo {
			http.Error(w, "you sent "+r.Header.Get("Authorization"), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"major":"1","minor":"37","gitVersion":"v1.37.1"}`)
	}))
	t.Cleanup(c.Close)
	return c
}

// credentials are the Authorization headers the catcher received.
func (c *catcher) credentials() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen...)
}

// caData is the catcher's certificate, PEM, as a kubeconfig's certificate-authority-data holds it.
func (c *catcher) caData() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate().Raw}))
}

// kubeconfigFor is a kubeconfig naming server, trusted by ca, with user as its user entry.
func kubeconfigFor(server, ca, user string) string {
	return `apiVersion: v1
kind: Config
clusters:
- name: member
  cluster:
    server: ` + server + `
    certificate-authority-data: ` + b64(ca) + `
users:
- name: u
  user:
` + user + `
contexts:
- name: member
  context: {cluster: member, user: u}
current-context: member
`
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func register(t *testing.T, name string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: controlPlane, Name: name,
		Labels: map[string]string{scorev1b1.LabelSecretType: scorev1b1.SecretTypeCluster}}, StringData: data}
	testenv.Create(t, env.Client, s)
	t.Cleanup(func() { _ = env.Client.Delete(ctx, s) })
}

// published is what the runtime publishes for a cluster in score-clusters.
func published(name string) (clusters.Status, bool, error) {
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: controlPlane, Name: clusters.StatusConfigMap}, cm); err != nil {
		return clusters.Status{}, false, err
	}
	st, ok := clusters.Decode(cm)[name]
	return st, ok, nil
}

// A registration runs no code inside the controllers and reads no file on their disk: an exec
// plugin (a script that leaves a marker) is never run, a tokenFile naming a real file is never
// read (its content reaches neither the server the registration names nor score-clusters),
// and an API server's answer echoing the credentials is not published. The refusals are in
// score-clusters, which `scorectl cluster list` shows. A registration with inline credentials
// to the same server is the positive control: it is probed, with its token.
func TestHostileRegistrationRunsNothingAndReadsNoFile(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "the-plugin-ran")
	plugin := filepath.Join(dir, "plugin.sh")
	if err := os.WriteFile(plugin, []byte("#!/bin/sh\ntouch "+marker+"\n"+
		`echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-the-plugin"}}'`+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(dir, "token")
	fileContent := "file-secret-" + randomHex(t)
	if err := os.WriteFile(secretFile, []byte(fileContent), 0o600); err != nil {
		t.Fatal(err)
	}
	server := newCatcher(t, false)
	echo := newCatcher(t, true)
	ca := server.caData()

	register(t, "control", map[string]string{clusters.KeyKubeconfig: kubeconfigFor(server.URL, ca, "    token: control-token")})
	register(t, "exec", map[string]string{clusters.KeyKubeconfig: kubeconfigFor(server.URL, ca,
		"    exec: {apiVersion: client.authentication.k8s.io/v1, command: "+plugin+", interactiveMode: Never}")})
	register(t, "token-file", map[string]string{clusters.KeyKubeconfig: kubeconfigFor(server.URL, ca, "    tokenFile: "+secretFile)})
	register(t, "ca-file", map[string]string{clusters.KeyKubeconfig: strings.Replace(kubeconfigFor(server.URL, ca, "    token: ca-file-token"),
		"certificate-authority-data: "+b64(ca), "certificate-authority: "+secretFile, 1)})
	register(t, "echo", map[string]string{clusters.KeyServer: echo.URL, clusters.KeyCA: echo.caData(), clusters.KeyToken: "echoed-token"})

	testenv.Eventually(t, time.Minute, "every registration published", func() error {
		if st, ok, err := published("control"); err != nil || !ok || !st.Reachable {
			return fmt.Errorf("the control: %+v %t %v", st, ok, err)
		}
		for _, name := range []string{"exec", "token-file", "ca-file", "echo"} {
			if st, ok, err := published(name); err != nil || !ok || st.Reachable || st.Message == "" || st.Message == "Not probed yet." {
				return fmt.Errorf("%s: %+v %t %v", name, st, ok, err)
			}
		}
		return nil
	})
	for name, field := range map[string]string{"exec": "exec", "token-file": "tokenFile", "ca-file": "certificate-authority"} {
		st, _, _ := published(name)
		if !strings.Contains(st.Message, "refused") || !strings.Contains(st.Message, field) {
			t.Errorf("%s: the published message does not say it refuses %s: %q", name, field, st.Message)
		}
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("the exec plugin ran inside the controllers (%v)", err)
	}
	for _, seen := range server.credentials() {
		if seen != "Bearer control-token" {
			t.Errorf("the registration's server received %q", seen)
		}
	}
	for _, name := range []string{"exec", "token-file", "ca-file", "echo", "control"} {
		st, _, _ := published(name)
		t.Logf("%s: %s", name, st.Message)
		for _, secret := range []string{fileContent, "from-the-plugin", "echoed-token", "control-token"} {
			if strings.Contains(st.Message, secret) {
				t.Errorf("%s: score-clusters carries %q: %q", name, secret, st.Message)
			}
		}
	}
}

func randomHex(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
