// Package provisioner tests the provisioner controller on a real kube-apiserver and etcd. Its
// definitions create objects that are healthy as soon as they exist (ConfigMaps, Secrets), so
// no node is needed; the simulated-cluster run of make dev covers StatefulSets.
package provisioner

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	provisionerctl "github.com/score-orchestrator/score-orchestrator/internal/controller/provisioner"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/workers"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisionercmd"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/templates"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// configTemplate is the config; %[1]s is the built command provisioner, %[2]s the script,
// %[3]s the fake external API's base URL, %[4]s the digest of the helm provisioner's chart,
// %[5]s the fake API's host and port, %[6]s a host and port where nothing answers.
const configTemplate = `apiVersion: score.dev/v1b1
kind: OrchestratorConfig
allowMutableRefs: true
profiles:
  - name: web-service
    backends:
      - {backendId: k8s-web, runtimeClass: kubernetes, version: 1.0.0, template: {kind: manifests, ref: "configmap://score-system/t/web.yaml"}}
provisioners:
  - uri: template://test/kv
    type: kv
    init: |
      name: kv-{{ substr 0 8 .Guid }}
    state: |
      password: {{ dig "password" (randAlphaNum 32) .State | quote }}
      runs: {{ add 1 (dig "runs" 0 .State) }}
    shared: |
      instances: {{ add 1 (dig "instances" 0 .Shared) }}
    outputs: |
      host: {{ .Init.name }}.{{ .Namespace }}
      port: 1234
      password: {{ encodeSecretRef .Init.name "password" }}
      uid: {{ .Uid }}
      source: {{ .SourceWorkload }}
      size: {{ .Params.size | default "small" }}
    expected_outputs: [host, port, password]
    manifests: |
      - apiVersion: v1
        kind: Secret
        metadata: {name: {{ .Init.name }}}
        stringData: {password: {{ .State.password | quote }}}
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: {{ .Init.name }}}
        data: {size: {{ .Params.size | default "small" | quote }}}
  - uri: template://test/shared-kv
    type: shared-kv
    sharing:
      namespace: shared-home
      namespaceSelector: {matchLabels: {share: "yes"}}
      otherwise: Deny
    init: &skvInit |
      name: skv-{{ substr 0 8 .Guid }}
    state: &skvState |
      password: {{ dig "password" (randAlphaNum 32) .State | quote }}
    outputs: &skvOutputs |
      host: {{ .Init.name }}.{{ .Namespace }}
      password: {{ encodeSecretRef .Init.name "password" }}
    expected_outputs: [host, password]
    manifests: &skvManifests |
      - apiVersion: v1
        kind: Secret
        metadata: {name: {{ .Init.name }}}
        stringData: {password: {{ .State.password | quote }}}
      - apiVersion: networking.k8s.io/v1
        kind: NetworkPolicy
        metadata: {name: {{ .Init.name }}}
        spec:
          podSelector: {matchLabels: {app: {{ .Init.name }}}}
          ingress:
            - from:
                - podSelector: {matchLabels: {consumer.score.dev/{{ .Instance }}: "true"}}
                {{- if .ConsumerNamespaces }}
                - namespaceSelector: {{ toJson .ConsumerNamespaces }}
                  podSelector: {matchLabels: {consumer.score.dev/{{ .Instance }}: "true"}}
                {{- end }}
  - uri: template://test/isolated-kv
    type: isolated-kv
    sharing:
      namespace: shared-home
      namespaceSelector: {matchLabels: {share: "yes"}}
    init: *skvInit
    state: *skvState
    outputs: *skvOutputs
    manifests: *skvManifests
  - uri: helm://test/kv
    type: helm-kv
    helm:
      chart: configmap://score-system/charts/kv.tgz
      digest: %[4]s
      release: '{{ .Init.name }}'
      values: |
        password: {{ .State.password | quote }}
        size: {{ .Params.size | default "small" | quote }}
    init: |
      name: hkv-{{ substr 0 8 .Guid }}
    state: |
      password: {{ dig "password" (randAlphaNum 32) .State | quote }}
    outputs: |
      host: {{ .Init.name }}-kv.{{ .Namespace }}
      password: {{ encodeSecretRef (printf "%%s-kv" .Init.name) "password" }}
    expected_outputs: [host, password]
  - uri: template://test/broken
    type: broken
    outputs: |
      value: {{ fail "no capacity left" }}
  - uri: cmd://%[1]s
    type: cmd-kv
    expected_outputs: [host, password]
  - uri: cmd://%[2]s#echo
    type: cmd-echo
    args: ["<mode>"]
  - uri: cmd://%[2]s#fails
    type: cmd-fails
    args: [fail, storage]
  - uri: cmd://./bin/provisioner
    type: cmd-relative
  - uri: cmd://no-such-provisioner-binary
    type: cmd-missing
  - uri: template://test/invalid-object
    type: invalid-object
    manifests: |
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: Not_A_Valid_Name}
  - uri: template://test/port-of
    type: port-of
    outputs: |
      port: {{ (index .WorkloadServices .Params.workload).Ports.http.Port }}
  - uri: template://test/topic
    type: topic
    shared: |
      broker: broker
    manifests: |
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: {{ .Shared.broker }}}
        data: {role: "one per namespace, used by every topic"}
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: topic-{{ substr 0 8 .Guid }}}
  - uri: template://test/missing
    type: missing-output
    outputs: |
      host: h
    expected_outputs: [host, port]
  - uri: template://test/classed-gold
    type: classed
    matchParams: {tier: gold}
    outputs: |
      served: gold
      class: {{ .Class }}
      size: {{ .Params.size }}
  - uri: template://test/classed
    type: classed
    outputs: |
      served: plain
      class: {{ .Class }}
      size: {{ .Params.size }}
      uid: {{ .Uid }}
  - uri: http+api://test/db
    type: api-db
    api:
      credentials:
        secretRef: {name: api-token, key: token}
        prefix: "Bearer "
      create:
        url: "%[3]s/dbs"
        headers: {Content-Type: application/json}
        body: |
          {"name": {{ .Guid | quote }}, "mode": {{ .Params.mode | default "ok" | quote }}}
      status:
        url: "%[3]s/dbs/{{ .State.created.id }}"
      readyWhen: {path: status.phase, ready: [ready], failed: [error]}
      pollInterval: 100ms
      timeout: 2s
      secretOutputs: [password]
      delete:
        url: "%[3]s/dbs/{{ .State.created.id }}"
    outputs: |
      host: {{ .State.observed.host }}
      password: {{ .State.observed.password }}
    expected_outputs: [host, password]
  - uri: template://test/host-route
    type: host-route
    hostnameParams: [host]
    outputs: |
      url: http://{{ .Params.host }}
  - uri: http+api://test/url-secrets
    type: api-url-secrets
    api:
      credentials:
        secretRef: {name: api-token, key: token}
        prefix: "Bearer "
      create:
        url: 'https://apiuser:` + urlPassword + `@{{ if eq .Params.answer "none" }}%[6]s{{ else }}%[5]s{{ end }}/answer/{{ .Params.answer }}?token=` + urlToken + `&region=eu'
  - uri: template://test/deployed-kv
    type: deployed-kv
    init: |
      name: dkv-{{ substr 0 8 .Guid }}
    outputs: |
      host: {{ .Init.name }}.{{ .Namespace }}
    expected_outputs: [host]
    manifests: |
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: {{ .Init.name }}, labels: {app: {{ .Init.name }}}}
        spec:
          replicas: 1
          selector: {matchLabels: {app: {{ .Init.name }}}}
          template:
            metadata: {labels: {app: {{ .Init.name }}}}
            spec: {containers: [{name: kv, image: kv}]}
classes:
  - {type: classed, name: standard, default: true, params: {size: medium}}
  - type: classed
    name: big
    params: {size: large, tier: gold}
hostnames:
  - domains: ["*.{namespace}.apps.test"]
  - namespaceSelector: {matchLabels: {team: shop}}
    domains: [shop.test]
`

var (
	env *testenv.Env
	ctx = context.Background()
)

// cmdOffNamespace is served by a second controller that runs with command provisioners
// disabled, the default; the first controller, with them enabled, serves every other
// namespace.
const cmdOffNamespace = "cmd-off"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "cmd-provisioners-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	goBin, script, err := buildCmdProvisioners(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	api := startFakeAPI()
	defer api.server.Close()
	chart, err := kvChart()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	nowhere, err := closedAddress()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	document := fmt.Sprintf(configTemplate, "/"+strings.TrimPrefix(goBin, "/"), "/"+strings.TrimPrefix(script, "/"), api.server.URL, testenv.Digest(chart),
		strings.TrimPrefix(api.server.URL, "https://"), nowhere)
	services, err := catalogServices()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	document = strings.Replace(document, "\nclasses:\n", "\n"+services+podDefinitions+secretRefDefinitions+"classes:\n", 1)
	return testenv.Main(m, func(ctx context.Context, e *testenv.Env) error {
		env = e
		return start(ctx, document, chart)
	})
}

// start creates the config, the chart and the API token, and starts the provisioners.
func start(ctx context.Context, document string, chart []byte) error {
	if err := testenv.CreateAll(ctx, env.Client,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "score-system"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cmdOffNamespace}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: heldNamespace}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "score-system", Name: "charts"}, BinaryData: map[string][]byte{"kv.tgz": chart}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "score-system", Name: "orchestrator-config"}, Data: map[string]string{"config.yaml": document}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "score-system", Name: "api-token"}, StringData: map[string]string{"token": apiToken}},
	); err != nil {
		return err
	}
	if err := startController(ctx, true, fields.AndSelectors(fields.OneTermNotEqualSelector("metadata.namespace", cmdOffNamespace),
		fields.OneTermNotEqualSelector("metadata.namespace", restartNamespace), fields.OneTermNotEqualSelector("metadata.namespace", stateNamespace),
		fields.OneTermNotEqualSelector("metadata.namespace", heldNamespace)), 0); err != nil {
		return err
	}
	if err := startController(ctx, true, fields.OneTermEqualSelector("metadata.namespace", heldNamespace), time.Hour); err != nil {
		return err
	}
	return startController(ctx, false, fields.OneTermEqualSelector("metadata.namespace", cmdOffNamespace), 0)
}

// heldNamespace is served by a controller that holds a claim's progress for an hour
// (--progress-hold), and counts its claims' status writes (heldStatusWrites), so that the
// count does not depend on this machine's speed. Every other namespace is served by
// controllers that hold nothing, so that each test sees every step at once.
const heldNamespace = "held-progress"

// heldStatusWrites counts the claim status writes of the controller of heldNamespace, by
// claim name.
var heldStatusWrites sync.Map

// countStatusWrites wraps a transport to count the claim status writes it sends.
func countStatusWrites(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if rest, ok := strings.CutSuffix(req.URL.Path, "/status"); ok && req.Method != http.MethodGet && strings.Contains(rest, "/resourceclaims/") {
			n, _ := heldStatusWrites.LoadOrStore(path.Base(rest), new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
		}
		return rt.RoundTrip(req)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// startController runs a provisioner controller over the namespaces the selector admits,
// holding a claim's progress for hold. Its workers are adaptive, from two: every test goes
// through the gate (internal/controller/workers), which lets more through as requests wait.
func startController(ctx context.Context, enableCmd bool, namespaces fields.Selector, hold time.Duration) error {
	opts := testenv.ManagerOptions()
	opts.Cache.DefaultFieldSelector = namespaces
	if opts.Cache.ByObject == nil {
		opts.Cache.ByObject = map[client.Object]cache.ByObject{}
	}
	// Namespaces are cluster-scoped: the namespace field selector does not apply to them.
	opts.Cache.ByObject[&corev1.Namespace{}] = cache.ByObject{Field: fields.Everything()}
	opts.Controller = config.Controller{SkipNameValidation: ptr.To(true)} // several controllers in one process
	cfg := rest.CopyConfig(env.Config)
	if hold > 0 {
		cfg.Wrap(countStatusWrites)
	}
	pushback := workers.NewPushback()
	cfg.Wrap(pushback.Wrap)
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return err
	}
	store, err := configsource.Setup(mgr, configsource.DefaultOptions(), "score-provisioner")
	if err != nil {
		return err
	}
	r := &provisionerctl.Reconciler{Client: mgr.GetClient(), Config: store, Recorder: mgr.GetEventRecorder("score-provisioner"), EnableCmd: enableCmd,
		CmdLimits:    provisionercmd.Limits{Timeout: 10 * time.Second, MaxOutput: 1 << 20},
		APINamespace: "score-system", HTTPClient: fakeAPIClient, Charts: &templates.Source{Reader: mgr.GetAPIReader()},
		Workers: &workers.Adaptive{Start: 2, Pushback: pushback}, ProgressHold: hold}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	go func() { _ = mgr.Start(ctx) }()
	return nil
}

func newClaim(ns, name, workload, key, typ, id string, policy scorev1b1.DeprovisionPolicy) *scorev1b1.ResourceClaim {
	return &scorev1b1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: scorev1b1.ResourceClaimSpec{
			WorkloadRef: scorev1b1.LocalWorkloadRef{Name: workload, UID: "uid-" + workload},
			Key:         key, Type: typ, ID: id, DeprovisionPolicy: policy,
		},
	}
}

// waitPhase waits until the provisioner has answered the claim's current generation with
// the phase, and returns the claim as it then was.
func waitPhase(t *testing.T, c *scorev1b1.ResourceClaim, phase scorev1b1.ClaimPhase) *scorev1b1.ResourceClaim {
	t.Helper()
	return testenv.WaitClaimPhase(t, env.Client, c, phase)
}

// waitClaim waits until the claim, as read, is as ok wants it, and returns it.
func waitClaim(t *testing.T, c *scorev1b1.ResourceClaim, what string, ok func(*scorev1b1.ResourceClaim) bool) *scorev1b1.ResourceClaim {
	t.Helper()
	return testenv.WaitClaim(t, env.Client, c, what, ok)
}

// secretValue reads one key of a Secret.
func secretValue(t *testing.T, ns, name, key string) string {
	t.Helper()
	return testenv.SecretValue(t, env.Client, ns, name, key)
}

// gone waits until obj no longer exists.
func gone(t *testing.T, obj client.Object) {
	t.Helper()
	testenv.WaitGone(t, env.Client, obj)
}

func TestBindOutputsAndStableState(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	c := newClaim(ns, "web-db", "web", "db", "kv", "", scorev1b1.DeprovisionDelete)
	testenv.Create(t, env.Client, c)
	c = waitPhase(t, c, scorev1b1.ClaimPhaseBound)
	if !c.Status.OutputsAvailable || c.Status.Provisioner != "template://test/kv" {
		t.Fatalf("status %+v", c.Status)
	}
	out := string(c.Status.Outputs.Raw)
	for _, want := range []string{`"port":1234`, `"uid":"kv.default#web.db"`, `"source":"web"`, `"size":"small"`} {
		if !strings.Contains(out, want) {
			t.Errorf("outputs %s lack %s", out, want)
		}
	}
	if strings.Contains(out, "password") {
		t.Fatalf("a secret output reached the status: %s", out)
	}
	if c.Status.SecretRef == nil || c.Status.SecretRef.Keys[0] != "password" {
		t.Fatalf("secretRef %+v", c.Status.SecretRef)
	}
	password := secretValue(t, ns, c.Status.SecretRef.Name, "password")
	if len(password) != 32 {
		t.Fatalf("password %q", password)
	}
	if len(c.Status.Resources) != 2 || c.Status.Resources[0].Health != "Current" {
		t.Fatalf("inventory %+v", c.Status.Resources)
	}

	t.Run("a spec change re-runs with the same state", func(t *testing.T) {
		c.Spec.Params = jsonRaw(`{"size":"large"}`)
		if err := env.Client.Update(ctx, c); err != nil {
			t.Fatal(err)
		}
		c = waitPhase(t, c, scorev1b1.ClaimPhaseBound)
		if !strings.Contains(string(c.Status.Outputs.Raw), `"size":"large"`) {
			t.Fatalf("outputs %s", c.Status.Outputs.Raw)
		}
		if got := secretValue(t, ns, c.Status.SecretRef.Name, "password"); got != password {
			t.Fatal("the password was regenerated")
		}
	})

	t.Run("Delete removes what was provisioned", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: c.Status.Resources[1].Name}}
		if err := env.Client.Delete(ctx, c); err != nil {
			t.Fatal(err)
		}
		gone(t, c)
		gone(t, cm)
		var states corev1.SecretList
		if err := env.Client.List(ctx, &states, client.InNamespace(ns), client.HasLabels{scorev1b1.LabelInstance}); err != nil {
			t.Fatal(err)
		}
		for _, s := range states.Items {
			if strings.HasPrefix(s.Name, "score-state-") {
				t.Fatalf("the state %s must go with a Delete claim", s.Name)
			}
		}
	})
}

// boundThenDeleted creates the claim, waits until it is Bound, deletes it and waits until it
// is gone; it returns the claim as it was bound, and the password it was given.
func boundThenDeleted(t *testing.T, c *scorev1b1.ResourceClaim) (*scorev1b1.ResourceClaim, string) {
	t.Helper()
	testenv.Create(t, env.Client, c)
	c = waitPhase(t, c, scorev1b1.ClaimPhaseBound)
	password := secretValue(t, c.Namespace, c.Status.SecretRef.Name, "password")
	if err := env.Client.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	gone(t, c)
	return c, password
}

func TestRetainRebindsToTheSameData(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	c, password := boundThenDeleted(t, newClaim(ns, "api-db-1", "api", "db", "kv", "", scorev1b1.DeprovisionRetain))
	data := c.Status.Resources[0]
	if got := secretValue(t, ns, data.Name, "password"); got != password {
		t.Fatal("Retain must keep the data")
	}
	again := newClaim(ns, "api-db-2", "api", "db", "kv", "", scorev1b1.DeprovisionRetain)
	testenv.Create(t, env.Client, again)
	again = waitPhase(t, again, scorev1b1.ClaimPhaseBound)
	if got := secretValue(t, ns, again.Status.SecretRef.Name, "password"); got != password {
		t.Fatalf("a claim of the same identity must re-bind to the same credentials")
	}
}

// The provisioner reads a state Secret from its cache of provisioned objects, absence
// included. One the cache does not hold (here its instance label removed) makes the first
// write of a new claim's state fail; the next pass reads it from the API server: the instance
// keeps its credentials, and the Secret gets its label back, whether the definition's state
// changes on every run (kv counts its runs) or not (isolated-kv, written for the label alone).
func TestStateTheCacheDoesNotHoldIsKept(t *testing.T) {
	for _, typ := range []string{"kv", "isolated-kv"} {
		t.Run(typ, func(t *testing.T) {
			ns := testenv.Namespace(t, env.Client)
			_, password := boundThenDeleted(t, newClaim(ns, "api-db-1", "api", "db", typ, "", scorev1b1.DeprovisionRetain))
			var secrets corev1.SecretList
			if err := env.Client.List(ctx, &secrets, client.InNamespace(ns), client.HasLabels{scorev1b1.LabelInstance}); err != nil {
				t.Fatal(err)
			}
			var state *corev1.Secret
			for i := range secrets.Items {
				if _, ok := secrets.Items[i].Data["state.json"]; ok {
					state = &secrets.Items[i]
				}
			}
			if state == nil {
				t.Fatalf("no labelled state Secret in %s", ns)
			}
			delete(state.Labels, scorev1b1.LabelInstance)
			if err := env.Client.Update(ctx, state); err != nil {
				t.Fatal(err)
			}

			again := newClaim(ns, "api-db-2", "api", "db", typ, "", scorev1b1.DeprovisionRetain)
			testenv.Create(t, env.Client, again)
			again = waitPhase(t, again, scorev1b1.ClaimPhaseBound)
			if got := secretValue(t, ns, again.Status.SecretRef.Name, "password"); got != password {
				t.Fatalf("the instance's credentials were replaced: the state Secret the cache did not hold was taken as absent")
			}
			testenv.Eventually(t, 10*time.Second, "the state Secret labelled again", func() error {
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(state), state); err != nil {
					return err
				}
				if state.Labels[scorev1b1.LabelInstance] != again.Status.Instance {
					return fmt.Errorf("labels %v, want %s=%s", state.Labels, scorev1b1.LabelInstance, again.Status.Instance)
				}
				return nil
			})
		})
	}
}

// A claim reset: the claim deleted and created again under the same name before the garbage
// collector removed the old claim's outputs Secret (this API server has no garbage collector,
// so it never does). The new claim takes the Secret over, so that the collector, when it runs,
// finds a live owner and leaves it.
func TestResetClaimTakesOverItsOutputsSecret(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	_, password := boundThenDeleted(t, newClaim(ns, "api-db", "api", "db", "kv", "", scorev1b1.DeprovisionRetain))
	again := newClaim(ns, "api-db", "api", "db", "kv", "", scorev1b1.DeprovisionRetain)
	testenv.Create(t, env.Client, again)
	again = waitPhase(t, again, scorev1b1.ClaimPhaseBound)
	testenv.Eventually(t, 20*time.Second, "the outputs Secret controlled by the new claim", func() error {
		s := &corev1.Secret{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: again.Status.SecretRef.Name}, s); err != nil {
			return err
		}
		if !metav1.IsControlledBy(s, again) || len(s.OwnerReferences) != 1 {
			return fmt.Errorf("owners %+v, want only the claim %s", s.OwnerReferences, again.UID)
		}
		if string(s.Data["password"]) != password {
			return fmt.Errorf("Retain must re-bind to the same credentials")
		}
		return nil
	})
}

// A Secret named as a claim's outputs Secret that the claim does not control (one a tenant
// created before the claim, with data and labels of their own; one another object controls)
// is neither written, read back nor taken over: the claim fails with PermissionDenied and
// says so, and the Secret stays as it was, no credential written into it (a tenant's Secret
// must not receive the instance's credentials).
// (isolated-kv, whose state does not change from run to run: kv's counts its runs, and each
// write of it brings the claim back at once.)
func TestOutputsSecretNotTheClaimsIsLeftAlone(t *testing.T) {
	cases := []struct {
		name   string
		labels map[string]string
		owner  []metav1.OwnerReference
	}{
		{"no owner, a label the provisioner does not select", map[string]string{"team": "tenant"}, nil},
		{"no owner, the label the provisioner's cache selects", map[string]string{"team": "tenant", scorev1b1.LabelWorkload: "web"}, nil},
		{"controlled by another object", nil, []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "tenant", UID: "uid-tenant", Controller: ptr.To(true)}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := testenv.Namespace(t, env.Client)
			name := planner.ClaimName("web", "db", "isolated-kv") // as the orchestrator names the claim
			tenant := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: scorev1b1.OutputsSecretName(name), Labels: tc.labels, OwnerReferences: tc.owner},
				Data:       map[string][]byte{"password": []byte("the tenant's own"), "note": []byte("mine")},
			}
			testenv.Create(t, env.Client, tenant)
			c := newClaim(ns, name, "web", "db", "isolated-kv", "", scorev1b1.DeprovisionDelete)
			testenv.Create(t, env.Client, c)
			c = waitPhase(t, c, scorev1b1.ClaimPhaseFailed)
			want := "Secret " + tenant.Name + " exists and was not created for this claim"
			if c.Status.Reason != scorev1b1.ReasonPermissionDenied || !strings.Contains(c.Status.Message, want) || c.Status.SecretRef != nil {
				t.Fatalf("status %s %q, secretRef %+v; want PermissionDenied saying %q and no secretRef", c.Status.Reason, c.Status.Message, c.Status.SecretRef, want)
			}
			// The claim has answered (Failed, for its generation) after the pass that would
			// have written the Secret.
			got := &corev1.Secret{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(tenant), got); err != nil {
				t.Fatal(err)
			}
			if got.ResourceVersion != tenant.ResourceVersion || !reflect.DeepEqual(got.Data, tenant.Data) || !reflect.DeepEqual(got.OwnerReferences, tenant.OwnerReferences) || !reflect.DeepEqual(got.Labels, tenant.Labels) {
				t.Fatalf("the Secret was changed: version %s (was %s), data keys %d, owners %+v, labels %v", got.ResourceVersion, tenant.ResourceVersion, len(got.Data), got.OwnerReferences, got.Labels)
			}
		})
	}
}

// An earlier claim's outputs Secret is taken over (a claim reset), with this claim's metadata
// only: a Secret made to look like one, with an annotation another tool would act on (copying
// it elsewhere), carries none of it once the credentials are written into it.
func TestTakenOverOutputsSecretKeepsOnlyTheClaimsMetadata(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	name := planner.ClaimName("web", "db", "isolated-kv")
	earlier := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: scorev1b1.OutputsSecretName(name),
			Labels:          map[string]string{scorev1b1.LabelWorkload: "web", "team": "tenant"},
			Annotations:     map[string]string{"replicate-to": "tenant-elsewhere"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: scorev1b1.GroupVersion.String(), Kind: "ResourceClaim", Name: name, UID: "uid-earlier", Controller: ptr.To(true)}}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"password": []byte("old")},
	}
	testenv.Create(t, env.Client, earlier)
	c := newClaim(ns, name, "web", "db", "isolated-kv", "", scorev1b1.DeprovisionDelete)
	testenv.Create(t, env.Client, c)
	c = waitPhase(t, c, scorev1b1.ClaimPhaseBound)
	s := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(earlier), s); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(s, c) || len(s.OwnerReferences) != 1 || len(s.Annotations) != 0 || !reflect.DeepEqual(s.Labels, map[string]string{scorev1b1.LabelWorkload: "web"}) {
		t.Fatalf("taken over with owners %+v, labels %v, annotations %v; want the claim's only", s.OwnerReferences, s.Labels, s.Annotations)
	}
	if string(s.Data["password"]) == "old" || len(s.Data["password"]) != 32 {
		t.Fatal("the claim's password was not written")
	}
}

func TestOrphanLeavesEverything(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	c := newClaim(ns, "job-db", "job", "db", "kv", "", scorev1b1.DeprovisionOrphan)
	testenv.Create(t, env.Client, c)
	c = waitPhase(t, c, scorev1b1.ClaimPhaseBound)
	objs := c.Status.Resources
	if err := env.Client.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	gone(t, c)
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: objs[1].Name}, cm); err != nil {
		t.Fatalf("Orphan must leave the objects: %v", err)
	}
}

func TestSharedInstance(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	a := newClaim(ns, "a-db", "a", "db", "kv", "orders", scorev1b1.DeprovisionDelete)
	b := newClaim(ns, "b-database", "b", "database", "kv", "orders", scorev1b1.DeprovisionDelete)
	testenv.Create(t, env.Client, a, b)
	a, b = waitPhase(t, a, scorev1b1.ClaimPhaseBound), waitPhase(t, b, scorev1b1.ClaimPhaseBound)
	if a.Status.Resources[0].Name != b.Status.Resources[0].Name {
		t.Fatalf("one shared id, one instance: %s vs %s", a.Status.Resources[0].Name, b.Status.Resources[0].Name)
	}
	// The consumers of one instance end up with its one set of credentials. (One run of this
	// test once saw them differ right after both were Bound; it converged. Investigation open.)
	testenv.Eventually(t, 10*time.Second, "one instance, one password", func() error {
		pa, pb := secretValue(t, ns, a.Status.SecretRef.Name, "password"), secretValue(t, ns, b.Status.SecretRef.Name, "password")
		if pa != pb {
			return fmt.Errorf("the consumers see different passwords")
		}
		return nil
	})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: a.Status.Resources[1].Name}}
	if err := env.Client.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	gone(t, a)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatalf("the instance must stay while a consumer remains: %v", err)
	}
	if err := env.Client.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	gone(t, b)
	gone(t, cm)
}

func TestFailures(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	cases := []struct {
		typ, reason, message string
	}{
		{"mongodb", "ClaimFailed", "No provisioner serves mongodb. Available types: api-db, api-url-secrets, app-service, broken, careless-worker, classed, cmd-echo, cmd-fails, cmd-kv, cmd-missing, cmd-relative, deployed-kv, echo, helm-kv, host-route, invalid-object, isolated-kv, kinds-bound, kv, missing-output, node-agent, platform-ref, port-of, service, shared-kv, topic, unlisted-ref. A platform engineer serves a new type by adding a provisioner definition (score-k8s's provisioner file format) to the Orchestrator Config's provisioners."},
		{"broken", "ClaimFailed", "no capacity left"},
		{"missing-output", "ClaimFailed", "did not produce the expected outputs port"},
		{"invalid-object", "ClaimFailed", `ConfigMap "Not_A_Valid_Name" is invalid`},
	}
	for _, tc := range cases {
		t.Run(tc.typ, func(t *testing.T) {
			c := newClaim(ns, "w-"+tc.typ, "w", tc.typ, tc.typ, "", scorev1b1.DeprovisionDelete)
			testenv.Create(t, env.Client, c)
			c = waitPhase(t, c, scorev1b1.ClaimPhaseFailed)
			if string(c.Status.Reason) != tc.reason || !strings.Contains(c.Status.Message, tc.message) || c.Status.OutputsAvailable {
				t.Fatalf("status %s: %s", c.Status.Reason, c.Status.Message)
			}
		})
	}
}

func jsonRaw(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

// A provisioner that reads another Workload's ports sees them change.
func TestWorkloadServicesChangesReachClaims(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	w := testenv.Workload(ns, "api", testenv.WithPort("http", 80))
	testenv.Create(t, env.Client, w)
	c := newClaim(ns, "route", "web", "route", "port-of", "", scorev1b1.DeprovisionDelete)
	c.Spec.Params = jsonRaw(`{"workload":"api"}`)
	testenv.Create(t, env.Client, c)
	c = waitPhase(t, c, scorev1b1.ClaimPhaseBound)
	if string(c.Status.Outputs.Raw) != `{"port":80}` {
		t.Fatalf("outputs %s", c.Status.Outputs.Raw)
	}
	w.Spec.Service.Ports["http"] = scorev1b1.ServicePort{Port: 8080}
	if err := env.Client.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "the new port reaches the claim", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return err
		}
		if string(c.Status.Outputs.Raw) != `{"port":8080}` {
			return fmt.Errorf("outputs %s", c.Status.Outputs.Raw)
		}
		return nil
	})
}

// Two instances whose definitions both produce one namespace-wide object (score-k8s's kafka
// broker and MinIO server are such objects): deleting one instance must leave the object to
// the other, not delete it from under it, and the two must not keep relabelling it.
func TestObjectSharedByInstancesOfANamespace(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	a := newClaim(ns, "a-events", "a", "events", "topic", "", scorev1b1.DeprovisionDelete)
	b := newClaim(ns, "b-events", "b", "events", "topic", "", scorev1b1.DeprovisionDelete)
	testenv.Create(t, env.Client, a, b)
	a, b = waitPhase(t, a, scorev1b1.ClaimPhaseBound), waitPhase(t, b, scorev1b1.ClaimPhaseBound)
	broker := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "broker"}, broker); err != nil {
		t.Fatal(err)
	}

	t.Run("reconciling either instance again leaves the object as it is", func(t *testing.T) {
		for _, c := range []*scorev1b1.ResourceClaim{a, b} {
			patch := client.MergeFrom(c.DeepCopy())
			c.Annotations = map[string]string{"test/nudge": "1"}
			if err := env.Client.Patch(ctx, c, patch); err != nil {
				t.Fatal(err)
			}
		}
		// The positive control: a later change of each claim, one the definition does not
		// read, is answered (its generation observed) after the nudge was processed.
		for _, c := range []*scorev1b1.ResourceClaim{a, b} {
			patch := client.MergeFrom(c.DeepCopy())
			c.Spec.Params = jsonRaw(`{"unread":"` + c.Name + `"}`)
			if err := env.Client.Patch(ctx, c, patch); err != nil {
				t.Fatal(err)
			}
			waitPhase(t, c, scorev1b1.ClaimPhaseBound)
		}
		again := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(broker), again); err != nil {
			t.Fatal(err)
		}
		if again.ResourceVersion != broker.ResourceVersion {
			t.Fatalf("the shared object was rewritten: instance label %s, was %s", again.Labels[scorev1b1.LabelInstance], broker.Labels[scorev1b1.LabelInstance])
		}
	})

	t.Run("deleting one instance leaves the object to the other", func(t *testing.T) {
		topicA := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: a.Status.Resources[1].Name}}
		if err := env.Client.Delete(ctx, a); err != nil {
			t.Fatal(err)
		}
		gone(t, a)
		gone(t, topicA)
		again := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(broker), again); err != nil || again.UID != broker.UID {
			t.Fatalf("the object another instance uses was deleted: %v", err)
		}
		waitPhase(t, b, scorev1b1.ClaimPhaseBound)
	})

	t.Run("deleting the last instance deletes the object", func(t *testing.T) {
		if err := env.Client.Delete(ctx, b); err != nil {
			t.Fatal(err)
		}
		gone(t, b)
		gone(t, broker)
	})
}
