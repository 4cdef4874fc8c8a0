// Package hostile tries, on a simulated cluster of its own with the control plane installed as
// a platform installs it (kubectl apply -k config/default: the controllers under their own
// ServiceAccounts and roles), every hole a tenant or a registration could reach. The
// tenant, mallory, is bound to score-workload-editor in two namespaces and nothing else: the
// tests act as mallory through impersonation, so the API server judges every request by her
// rights. A platform identity (the admin) tries the registration holes. Every test ends by
// checking that nothing of another tenant changed and that every other Workload is still Ready.
package hostile

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv/controllerproc"
)

// The namespaces: victims live in teamA, mallory edits Workloads in both. teamA is also the
// home of a postgres class the platform shares with namespaces labelled share=yes (teamB).
const (
	teamA   = "team-a"
	teamB   = "team-b"
	mallory = "mallory"
)

var (
	ctx = context.Background()
	// admin is the cluster's administrator; tenant acts as mallory. adminConfig is admin's
	// connection, for the clients and commands a test makes.
	admin, tenant client.Client
	// kubeconfig is the administrator's, for the commands a test runs.
	kubeconfig  string
	adminConfig *rest.Config
	// controllers is the control plane's process; state its directory.
	controllers *controllerproc.Process
	state       string
	// api is the fake external API an http+api definition reaches.
	api *fakeAPI
	// victims are the other tenants' Workloads, Ready before any test; untouched records
	// every object of teamA as it was then.
	victims   = []string{"owner", "shared-owner"}
	untouched map[string]string
)

func TestMain(m *testing.M) {
	os.Exit(testenv.SimulatedMain(m, testenv.Simulated{Name: "score-hostile", Clusters: map[string]testenv.ClusterSpec{"": {Volumes: 8}}}, setup))
}

// setup installs the control plane as a platform engineer does, the platform's additions and
// the victims, and starts the controllers' process.
func setup(env *testenv.SimulatedEnv) (func(), error) {
	k := env.Clusters[""]
	state, admin, kubeconfig, adminConfig = env.State, k.Client, k.Kubeconfig(), k.Config
	as := rest.CopyConfig(k.Config)
	as.Impersonate = rest.ImpersonationConfig{UserName: mallory, Groups: []string{"system:authenticated"}}
	var err error
	if tenant, err = client.New(as, client.Options{Scheme: testenv.Scheme()}); err != nil {
		return nil, err
	}
	bin := filepath.Join(state, "score-controllers")
	build := exec.Command("go", "build", "-o", bin, "./cmd/score-controllers")
	build.Dir = env.Root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building score-controllers: %v\n%s", err, out)
	}
	// The install, as a platform engineer runs it, and the Gateway API the route needs.
	for _, args := range [][]string{{"apply", "--server-side", "-k", "config/default"}, {"apply", "--server-side", "-f", "config/crd/thirdparty"}} {
		kubectl := exec.Command(filepath.Join(env.Root, "bin", "kubectl"), append([]string{"--kubeconfig", k.Kubeconfig()}, args...)...)
		kubectl.Dir = env.Root
		if out, err := kubectl.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	api = startFakeAPI()
	caFile := filepath.Join(state, "fake-api-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.server.Certificate().Raw}), 0o600); err != nil {
		return nil, err
	}
	if err := platform(); err != nil {
		return nil, err
	}
	var d appsv1.Deployment
	if err := waitFor(2*time.Minute, func() error {
		return admin.Get(ctx, client.ObjectKey{Namespace: "score-system", Name: "score-controllers"}, &d)
	}); err != nil {
		return nil, fmt.Errorf("the score-controllers Deployment: %w", err)
	}
	if controllers, err = controllerproc.Launch(k.Config, bin, state, &d, "", "SSL_CERT_FILE="+caFile); err != nil {
		return nil, err
	}
	stop := func() {
		_ = controllers.Stop(10 * time.Second)
		api.server.Close()
	}
	if err := victimsReady(); err != nil {
		fmt.Fprintf(os.Stderr, "--- the controllers' log\n%s\n", controllers.LogTail())
		stop()
		return nil, err
	}
	return stop, nil
}

// waitFor calls f until it returns nil, or returns its last error after timeout.
func waitFor(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// platform sets up what the platform team owns: the tenants' namespaces (Pod Security
// baseline enforced), mallory's binding to score-workload-editor in each, and the config's
// additions — every namespace its own host names, a postgres class shared from teamA (and the
// retained and bounded ones of secrets_test.go), an http+api definition with its credentials.
func platform() error {
	baseline := map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}
	for name, extra := range map[string]map[string]string{teamA: {}, teamB: {"share": "yes"}} {
		labels := map[string]string{}
		for k, v := range baseline {
			labels[k] = v
		}
		for k, v := range extra {
			labels[k] = v
		}
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}); err != nil {
			return err
		}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "mallory-edits-workloads"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "score-workload-editor"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: mallory}}}
		if err := admin.Create(ctx, binding); err != nil {
			return err
		}
	}
	if err := admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "score-system", Name: "api-token"}, StringData: map[string]string{"token": apiToken}}); err != nil {
		return err
	}
	return devenv.EditConfig(ctx, admin, func(doc map[string]any) error {
		doc["hostnames"] = []any{map[string]any{"domains": []any{"*.{namespace}.dev.local"}}}
		provisioners, _ := doc["provisioners"].([]any)
		for _, p := range provisioners {
			def, _ := p.(map[string]any)
			if def["type"] != "postgres" {
				continue
			}
			shared := map[string]any{}
			for k, v := range def {
				shared[k] = v
			}
			shared["uri"], shared["class"] = "template://hostile/postgres-shared", "shared"
			shared["sharing"] = map[string]any{"namespace": teamA, "namespaceSelector": map[string]any{"matchLabels": map[string]any{"share": "yes"}}}
			provisioners = append([]any{shared}, provisioners...) // before the catalog's, which serves every class
			break
		}
		provisioners = append(sharingLimits(), provisioners...) // secrets_test.go
		provisioners = append(provisioners, map[string]any{
			"uri": "http+api://hostile/api-db", "type": "api-db",
			"api": map[string]any{
				"credentials": map[string]any{"secretRef": map[string]any{"name": "api-token", "key": "token"}, "prefix": "Bearer "},
				"create":      map[string]any{"method": "PUT", "url": api.server.URL + "/dbs/{{ .Params.name }}?owner={{ .Namespace }}"},
			},
			"outputs": "name: {{ .Params.name }}\n",
		})
		// A route definition whose params are untyped: a host the hostnames rules judge (and
		// name in the claim's message) whatever it holds.
		for _, p := range provisioners {
			def, _ := p.(map[string]any)
			if def["type"] != "route" || def["uri"] != "template://score-dev/route" {
				continue
			}
			untyped := map[string]any{}
			for k, v := range def {
				untyped[k] = v
			}
			untyped["uri"], untyped["type"], untyped["supported_params"] = "template://hostile/untyped-route", "untyped-route", []any{"host", "path", "port"}
			provisioners = append(provisioners, untyped)
			break
		}
		// A careless volume definition: its size not typed, and printed unquoted into the
		// claim's size.
		provisioners = append(provisioners, map[string]any{
			"uri": "template://hostile/careless-volume", "type": "careless-volume", "supported_params": []any{"size"},
			"init":      "name: vol-{{ substr 0 12 .Guid }}\n",
			"state":     "size: {{ dig \"size\" (.Params.size | default \"1Gi\") .State | quote }}\n",
			"outputs":   "source:\n  persistentVolumeClaim: {claimName: {{ .Init.name }}}\n",
			"manifests": "- apiVersion: v1\n  kind: PersistentVolumeClaim\n  metadata:\n    name: {{ .Init.name }}\n  spec:\n    accessModes: [ReadWriteOnce]\n    resources: {requests: {storage: {{ .State.size }}}}\n",
		})
		doc["provisioners"] = provisioners
		return nil
	})
}

// victimsReady creates the other tenants' Workloads, waits until they are Ready and records
// every object of their namespace.
func victimsReady() error {
	for _, w := range []*scorev1b1.Workload{
		testenv.Workload(teamA, "owner", testenv.WithPort("http", 80), testenv.WithResource("db", "postgres")),
		testenv.Workload(teamA, "shared-owner", testenv.WithPort("http", 80), testenv.WithResource("db", "postgres", func(r *scorev1b1.Resource) { r.Class = ptrTo("shared") })),
	} {
		if err := admin.Create(ctx, w); err != nil {
			return err
		}
	}
	for _, name := range victims {
		if err := waitFor(4*time.Minute, func() error { return isReady(teamA, name) }); err != nil {
			return fmt.Errorf("the victim %s: %w", name, err)
		}
	}
	// Recorded once settled: two snapshots a few seconds apart agree (the last status writes of
	// becoming Ready are done).
	return waitFor(time.Minute, func() error {
		first, err := snapshot(teamA)
		if err != nil {
			return err
		}
		time.Sleep(3 * time.Second)
		if untouched, err = snapshot(teamA); err != nil {
			return err
		}
		if !maps.Equal(first, untouched) {
			return errors.New("the victims' objects are still being written")
		}
		return nil
	})
}

// isReady is nil when the Workload is Ready at its generation, else why not.
func isReady(ns, name string) error {
	w := &scorev1b1.Workload{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
		return err
	}
	if c := testenv.Condition(w, scorev1b1.ConditionReady); c.Status != metav1.ConditionTrue || c.ObservedGeneration != w.Generation {
		return fmt.Errorf("%s: %s", c.Reason, c.Message)
	}
	return nil
}

// apiToken is the fake API's credential.
const apiToken = "hostile-api-token"

// fakeAPI records the requests of the http+api definition.
type fakeAPI struct {
	server *httptest.Server
	mu     sync.Mutex
	paths  []string
}

func startFakeAPI() *fakeAPI {
	a := &fakeAPI{}
	a.server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.paths = append(a.paths, r.Method+" "+r.URL.EscapedPath()+"?"+r.URL.RawQuery)
		a.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+apiToken {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	a.server.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	a.server.StartTLS()
	return a
}

// requests are the requests the fake API received.
func (a *fakeAPI) requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.paths...)
}

func ptrTo[T any](v T) *T { return &v }

// ready waits until the Workload is Ready.
func ready(t *testing.T, ns, name string, timeout time.Duration) {
	t.Helper()
	testenv.Eventually(t, timeout, ns+"/"+name+" Ready", func() error { return isReady(ns, name) })
}

// refused waits up to 15 seconds (the lifecycle's promise for an error) for the Workload to
// say, in its Ready condition, one of the reasons, and returns its message.
func refused(t *testing.T, ns, name string, reasons ...scorev1b1.Reason) string {
	t.Helper()
	var msg string
	testenv.Eventually(t, 15*time.Second, ns+"/"+name+" refused", func() error {
		w := &scorev1b1.Workload{}
		if err := tenant.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
			return err
		}
		c := testenv.Condition(w, scorev1b1.ConditionReady)
		for _, r := range reasons {
			if c.Status == metav1.ConditionFalse && c.Reason == string(r) && c.ObservedGeneration == w.Generation {
				msg = c.Message
				return nil
			}
		}
		return fmt.Errorf("Ready is %s %s: %s", c.Status, c.Reason, c.Message)
	})
	return msg
}

// snapshot records, by kind and name, the UID and resource version of every object of ours
// in a namespace and of every object a controller applies: what another tenant must not change.
func snapshot(ns string) (map[string]string, error) {
	out := map[string]string{}
	lists := []client.ObjectList{&scorev1b1.WorkloadList{}, &scorev1b1.ResourceClaimList{}, &scorev1b1.WorkloadPlanList{}, &scorev1b1.WorkloadExposureList{},
		&corev1.SecretList{}, &corev1.ConfigMapList{}, &corev1.ServiceList{}, &corev1.PersistentVolumeClaimList{}, &appsv1.DeploymentList{}, &appsv1.StatefulSetList{}}
	for _, l := range lists {
		if err := admin.List(ctx, l, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			o := item.(client.Object)
			out[fmt.Sprintf("%T %s", o, o.GetName())] = string(o.GetUID()) + "@" + o.GetResourceVersion()
		}
	}
	return out, nil
}

// othersUntouched checks, at the end of a test, that no object of the victims' namespace
// changed or went (new ones a test's own Workloads caused are theirs: the shared class's
// instances live there), and that every victim is still Ready.
func othersUntouched(t *testing.T) {
	t.Helper()
	now, err := snapshot(teamA)
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	for key, was := range untouched {
		if now[key] != was {
			changed = append(changed, fmt.Sprintf("%s: %s → %q", key, was, now[key]))
		}
	}
	if len(changed) > 0 {
		t.Errorf("the other tenant's objects changed:\n%s", strings.Join(changed, "\n"))
	}
	for _, name := range victims {
		ready(t, teamA, name, 10*time.Second)
	}
}

// secretValue reads one key of a Secret, as an administrator.
func secretValue(t *testing.T, ns, name, key string) string {
	t.Helper()
	s := &corev1.Secret{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return string(s.Data[key])
}

// claimOf is the Workload's claim of a resource key.
func claimOf(t *testing.T, ns, workload, key string) *scorev1b1.ResourceClaim {
	t.Helper()
	c, err := findClaim(ns, workload, key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// findClaim is the Workload's claim of a resource key, or an error saying there is none yet.
func findClaim(ns, workload, key string) (*scorev1b1.ResourceClaim, error) {
	var list scorev1b1.ResourceClaimList
	if err := admin.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{scorev1b1.LabelWorkload: workload}); err != nil {
		return nil, err
	}
	for i := range list.Items {
		if list.Items[i].Spec.Key == key {
			return &list.Items[i], nil
		}
	}
	return nil, fmt.Errorf("%s/%s has no claim of %s", ns, workload, key)
}

// contains reports whether any of the texts holds secret.
func contains(secret string, texts ...[]byte) bool {
	for _, text := range texts {
		if bytes.Contains(text, []byte(secret)) {
			return true
		}
	}
	return false
}
