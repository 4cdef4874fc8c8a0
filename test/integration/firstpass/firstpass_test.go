// Package firstpass tests what the provisioner's first pass over a new claim, and the
// orchestrator's over a new Workload, ask of a real kube-apiserver: which requests, and how many
// of them wait on each other, and that
// an object a tenant made under the name of an instance's object is neither written over nor
// taken over.
package firstpass

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/orchestrator"
	provisionerctl "github.com/score-orchestrator/score-orchestrator/internal/controller/provisioner"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

var (
	env *testenv.Env
	ctx context.Context
	// requests records every request of the provisioner's clients; orchestratorRequests the
	// orchestrator's.
	requests, orchestratorRequests = &recorder{}, &recorder{}
)

// hold is how long the recorder holds each answer it records. It only widens the requests'
// intervals, so that requests a pass sends together are seen overlapping even when one of its
// goroutines is scheduled late; the depth is derived from which requests had ended before
// which started, never compared with a time. A scheduler delay longer than the hold can only
// make the measured depth larger than the pass's: the test may fail for it, never pass.
const hold = 150 * time.Millisecond

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, func(c context.Context, e *testenv.Env) error {
		env, ctx = e, c
		return start()
	}))
}

// start creates the config (the development catalog's postgres) and starts a provisioner whose
// requests go through the recorder.
func start() error {
	catalog, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "provisioners", "postgres.yaml"))
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("apiVersion: score.dev/v1b1\nkind: OrchestratorConfig\nallowMutableRefs: true\nprofiles:\n  - name: web-service\n    backends:\n" +
		"      - {backendId: k8s-web, runtimeClass: kubernetes, version: 1.0.0, template: {kind: manifests, ref: \"configmap://score-system/t/web.yaml\"}}\n" +
		"defaults: {profile: web-service}\nprovisioners:\n")
	for _, line := range strings.Split(string(catalog), "\n") {
		if line != "" {
			b.WriteString("  " + line + "\n")
		}
	}
	if err := testenv.CreateAll(ctx, env.Client,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "score-system"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "score-system", Name: "orchestrator-config"}, Data: map[string]string{"config.yaml": b.String()}},
	); err != nil {
		return err
	}
	cfg := rest.CopyConfig(env.Config)
	// No client-side rate limit: a request it delayed would start late, and read as waiting.
	cfg.QPS, cfg.Burst = -1, 0
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return requests.wrap(rt) }
	mgr, err := ctrl.NewManager(cfg, testenv.ManagerOptions())
	if err != nil {
		return err
	}
	store, err := configsource.Setup(mgr, configsource.DefaultOptions(), "score-provisioner")
	if err != nil {
		return err
	}
	r := &provisionerctl.Reconciler{Client: mgr.GetClient(), Config: store, Recorder: mgr.GetEventRecorder("score-provisioner"), APINamespace: "score-system"}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	go func() { _ = mgr.Start(ctx) }()
	return startOrchestrator()
}

// startOrchestrator starts an orchestrator, as the binary sets it up, whose requests go
// through their own recorder.
func startOrchestrator() error {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, 0
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return orchestratorRequests.wrap(rt) }
	mgr, err := ctrl.NewManager(cfg, testenv.ManagerOptions())
	if err != nil {
		return err
	}
	store, err := configsource.Setup(mgr, configsource.DefaultOptions(), "score-orchestrator")
	if err != nil {
		return err
	}
	if err := orchestrator.Setup(mgr, store, orchestrator.DefaultOptions()); err != nil {
		return err
	}
	go func() { _ = mgr.Start(ctx) }()
	return nil
}

// request is one request the provisioner made: what, and when it started and ended.
type request struct {
	method, path string
	start, end   time.Time
}

func (r request) String() string { return r.method + " " + r.path }

// recorder records the requests about objects of the namespaces it is told of (reads of one
// object and writes; not lists, watches or events), holding each answer for hold.
type recorder struct {
	mu         sync.Mutex
	namespaces map[string]bool
	log        []request
}

func (r *recorder) watch(namespace string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.namespaces == nil {
		r.namespaces = map[string]bool{}
	}
	r.namespaces[namespace] = true
}

// recorded are the requests about namespace's objects so far.
func (r *recorder) recorded(namespace string) []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []request
	for _, q := range r.log {
		if strings.Contains(q.path+"/", "/namespaces/"+namespace+"/") {
			out = append(out, q)
		}
	}
	return out
}

// recordable reports whether req is about one object of a namespace the recorder watches.
func (r *recorder) recordable(req *http.Request) bool {
	path := req.URL.Path
	parts := strings.Split(path, "/")
	at := slices.Index(parts, "namespaces")
	if at < 0 || at+1 >= len(parts) || req.URL.Query().Get("watch") == "true" || strings.Contains(path, "/events") {
		return false // not about a namespace or its objects, a watch, an event
	}
	if collection := at+3 == len(parts); collection && req.Method == http.MethodGet {
		return false // a list
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.namespaces[parts[at+1]] // its objects, or the namespace itself

}

func (r *recorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if !r.recordable(req) {
			return rt.RoundTrip(req)
		}
		q := request{method: req.Method, path: strings.TrimPrefix(req.URL.Path, "/"), start: time.Now()}
		resp, err := rt.RoundTrip(req)
		select { // the answer held: the API server slower, never a request dropped
		case <-time.After(hold):
		case <-req.Context().Done():
		}
		q.end = time.Now()
		r.mu.Lock()
		r.log = append(r.log, q)
		r.mu.Unlock()
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// depths is each request's depth: one more than the deepest request that had ended before it
// started (1 for a request that waited on none).
func depths(reqs []request) []int {
	out := make([]int, len(reqs))
	for i, q := range reqs {
		out[i] = 1
		for j, p := range reqs {
			if !p.end.After(q.start) && out[j]+1 > out[i] {
				out[i] = out[j] + 1
			}
		}
	}
	return out
}

// firstPass waits until r has recorded, in ns, the status write whose path ends with status,
// which ends the first pass (recorded once its answer was held; what follows is a later pass).
// It logs the pass's requests step by step, checks that they are want, in any order, and at
// most deepest steps deep, and returns them in the order they started.
func firstPass(t *testing.T, r *recorder, ns, status string, want []string, deepest int) []request {
	t.Helper()
	var all []request
	end := -1
	testenv.Eventually(t, testenv.WaitTimeout, "the status write recorded", func() error {
		all = r.recorded(ns)
		if end = slices.IndexFunc(all, func(q request) bool {
			return q.method == http.MethodPatch && strings.HasSuffix(q.path, status)
		}); end < 0 {
			return fmt.Errorf("no status write among %v", all)
		}
		return nil
	})
	var pass []request
	for _, q := range all {
		if q.start.Before(all[end].end) {
			pass = append(pass, q)
		}
	}
	slices.SortFunc(pass, func(a, b request) int { return a.start.Compare(b.start) })
	depth := depths(pass)
	var b strings.Builder
	for i, q := range pass {
		fmt.Fprintf(&b, "\n  step %d: %s", depth[i], q)
	}
	t.Logf("the first pass:%s", b.String())

	var got []string
	for _, q := range pass {
		got = append(got, q.String())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("requests:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if n := slices.Max(depth); n > deepest {
		t.Errorf("the first pass is %d requests deep, want at most %d:%s", n, deepest, b.String())
	}
	return pass
}

// The depth measure can fail: requests in a row are as deep as they are many, requests in
// flight together are one step, and a request that started before another ended does not
// wait on it. (The first pass of 5be9eaf measured eleven.)
func TestDepthsOfRequestsInARowAndTogether(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(0, 0).Add(time.Duration(s) * time.Second) }
	inARow := []request{{start: at(0), end: at(1)}, {start: at(1), end: at(2)}, {start: at(2), end: at(3)}}
	if got := depths(inARow); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("in a row: %v", got)
	}
	together := []request{{start: at(0), end: at(2)}, {start: at(1), end: at(3)}, {start: at(3), end: at(4)}}
	if got := depths(together); !slices.Equal(got, []int{1, 1, 2}) {
		t.Fatalf("together: %v", got)
	}
}

func claim(ns, workload string) *scorev1b1.ResourceClaim {
	return &scorev1b1.ResourceClaim{
		// Created as the orchestrator creates claims: with the finalizer.
		ObjectMeta: metav1.ObjectMeta{Name: workload + "-db", Namespace: ns, Finalizers: []string{scorev1b1.ClaimFinalizer}},
		Spec: scorev1b1.ResourceClaimSpec{WorkloadRef: scorev1b1.LocalWorkloadRef{Name: workload, UID: "uid-" + workload},
			Key: "db", Type: "postgres", DeprovisionPolicy: scorev1b1.DeprovisionDelete},
	}
}

// warmed is set once a claim was provisioned: the first claim of the process starts the watches
// of the applied kinds, as in a controller that has been running.
var warmed sync.Once

func warm(t *testing.T) {
	warmed.Do(func() {
		first := claim(testenv.Namespace(t, env.Client), "warm")
		testenv.Create(t, env.Client, first)
		provisioned(t, first)
	})
}

// provisioned waits until the provisioner wrote the claim's status for its generation.
func provisioned(t *testing.T, c *scorev1b1.ResourceClaim) *scorev1b1.ResourceClaim {
	t.Helper()
	out := &scorev1b1.ResourceClaim{}
	testenv.Eventually(t, testenv.WaitTimeout, "claim "+c.Name+" provisioned", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), out); err != nil {
			return err
		}
		if out.Status.ObservedGeneration != out.Generation || out.Status.Phase == "" || out.Status.Phase == scorev1b1.ClaimPhasePending {
			return fmt.Errorf("phase %q (%s)", out.Status.Phase, out.Status.Message)
		}
		return nil
	})
	return out
}

// A first pass over a new claim of the catalog's postgres, once the provisioner watches the
// kinds it applies (after its first claim), is seven requests in four steps that wait on each
// other: the state Secret written together with the creation of the instance's Secret (the
// configuration stage), then the NetworkPolicy, Service and StatefulSet together, then the
// outputs Secret, then the claim's status. It read nothing from the API server: every object
// it applies is created with a create-only apply, none read first. It was eleven requests in
// a row.
func TestFirstPassIsFourStepsDeep(t *testing.T) {
	warm(t)

	ns := testenv.Namespace(t, env.Client)
	requests.watch(ns)
	c := claim(ns, "web")
	testenv.Create(t, env.Client, c)
	provisioned(t, c)

	id := provisioning.NewIdentity(ns, "web", "db", "postgres", "", "")
	name := "pg-" + id.Guid()[:12]
	want := []string{
		"POST api/v1/namespaces/" + ns + "/secrets",
		"PATCH api/v1/namespaces/" + ns + "/secrets/" + name,
		"PATCH apis/networking.k8s.io/v1/namespaces/" + ns + "/networkpolicies/" + name,
		"PATCH api/v1/namespaces/" + ns + "/services/" + name,
		"PATCH apis/apps/v1/namespaces/" + ns + "/statefulsets/" + name,
		"POST api/v1/namespaces/" + ns + "/secrets",
		"PATCH apis/score.dev/v1b1/namespaces/" + ns + "/resourceclaims/" + c.Name + "/status",
	}
	// The pass ends with its status (recorded once its answer was held); what follows is a
	// later pass.
	firstPass(t, requests, ns, "/resourceclaims/"+c.Name+"/status", want, 4)
}

// The orchestrator's first pass over a new Workload with two dependencies is five requests in
// three steps that wait on each other: the Workload's finalizer (before any child exists, so
// that every claim is released with it), then both claims and the exposure together, then the
// Workload's status. It was five in a row: the finalizer, each claim, the exposure, the status.
func TestOrchestratorFirstPassIsThreeStepsDeep(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	orchestratorRequests.watch(ns)
	w := testenv.Workload(ns, "shop", testenv.WithPort("http", 80), testenv.WithResource("db", "postgres"), testenv.WithResource("cache", "postgres"))
	testenv.Create(t, env.Client, w)

	base := "apis/score.dev/v1b1/namespaces/" + ns
	want := []string{
		"PATCH " + base + "/workloads/shop",
		"POST " + base + "/resourceclaims",
		"POST " + base + "/resourceclaims",
		"POST " + base + "/workloadexposures",
		"PATCH " + base + "/workloads/shop/status",
	}
	// The pass ends with the Workload's status (recorded once its answer was held); what
	// follows is a later pass.
	pass := firstPass(t, orchestratorRequests, ns, "/workloads/"+w.Name+"/status", want, 3)
	// The finalizer is on before any child is created.
	finalizer := slices.IndexFunc(pass, func(q request) bool {
		return q.method == http.MethodPatch && strings.HasSuffix(q.path, "/workloads/shop")
	})
	for _, q := range pass {
		if q.method == http.MethodPost && q.start.Before(pass[finalizer].end) {
			t.Errorf("%s started before the finalizer's write ended", q)
		}
	}
}

// A tenant who computes the name of an instance's object and makes one of that name first
// (here its Service, with a selector of its own) gets nothing of theirs written over or taken
// over: the claim fails naming it, the tenant's Service is as they made it (no field of ours,
// no instance label, no apply of ours in its managed fields), and what the pass created before
// it knew is ours, listed, and deleted with the claim, leaving the tenant's Service.
func TestHostilePrecreatedObjectIsNeitherWrittenNorTaken(t *testing.T) {
	warm(t) // the kinds watched: the pass creates what does not exist before it reads the Service
	ns := testenv.Namespace(t, env.Client)
	name := "pg-" + provisioning.NewIdentity(ns, "web", "db", "postgres", "", "").Guid()[:12]
	theirs := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"made-by": "tenant"}},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "eavesdropper"}, Ports: []corev1.ServicePort{{Name: "sniff", Port: 5432, TargetPort: intstr.FromInt32(9999)}}},
	}
	testenv.Create(t, env.Client, theirs)
	before := &corev1.Service{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(theirs), before); err != nil {
		t.Fatal(err)
	}

	c := claim(ns, "web")
	testenv.Create(t, env.Client, c)
	want := fmt.Sprintf("Service %s exists and was not created by the provisioner", name)
	out := &scorev1b1.ResourceClaim{}
	testenv.Eventually(t, testenv.WaitTimeout, "the claim reports the conflict", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), out); err != nil {
			return err
		}
		if out.Status.Phase != scorev1b1.ClaimPhaseFailed || !strings.Contains(out.Status.Message, want) {
			return fmt.Errorf("%s: %s", out.Status.Phase, out.Status.Message)
		}
		return nil
	})

	after := &corev1.Service{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(theirs), after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion || after.Labels[scorev1b1.LabelInstance] != "" || after.Spec.Selector["app"] != "eavesdropper" {
		t.Fatalf("the tenant's Service was written: %+v", after.ObjectMeta)
	}
	for _, f := range after.ManagedFields {
		if f.Manager == scorev1b1.FieldManagerProvisioner {
			t.Fatalf("the provisioner manages fields of the tenant's Service: %+v", f)
		}
	}
	for _, o := range out.Status.Resources {
		if o.Kind == "Service" {
			t.Fatalf("the tenant's Service is in the claim's inventory: %+v", out.Status.Resources)
		}
	}

	// What the pass created is the claim's, and goes with it; the tenant's Service stays.
	if len(out.Status.Resources) == 0 {
		t.Fatal("the objects the pass created are not listed")
	}
	if err := env.Client.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	testenv.WaitGone(t, env.Client, c)
	for _, o := range out.Status.Resources {
		u := &metav1.PartialObjectMetadata{}
		u.SetGroupVersionKind(schemaOf(o))
		testenv.WaitGone(t, env.Client, withKey(u, o.Namespace, o.Name))
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(theirs), after); err != nil || after.ResourceVersion != before.ResourceVersion {
		t.Fatalf("the tenant's Service after the release: %v, %+v", err, after.ObjectMeta)
	}
}

func schemaOf(o scorev1b1.AppliedObject) schema.GroupVersionKind {
	gv, _ := schema.ParseGroupVersion(o.APIVersion)
	return gv.WithKind(o.Kind)
}

func withKey(u *metav1.PartialObjectMetadata, namespace, name string) *metav1.PartialObjectMetadata {
	u.Namespace, u.Name = namespace, name
	return u
}

// refused waits until the claim is Failed with PermissionDenied and a message holding want.
func refused(t *testing.T, c *scorev1b1.ResourceClaim, want string) *scorev1b1.ResourceClaim {
	t.Helper()
	out := &scorev1b1.ResourceClaim{}
	testenv.Eventually(t, testenv.WaitTimeout, "the claim refused as a conflict", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), out); err != nil {
			return err
		}
		if out.Status.Phase != scorev1b1.ClaimPhaseFailed || out.Status.Reason != scorev1b1.ReasonPermissionDenied || !strings.Contains(out.Status.Message, want) {
			return fmt.Errorf("%s %s: %s", out.Status.Phase, out.Status.Reason, out.Status.Message)
		}
		return nil
	})
	return out
}

// proceeds waits until the claim's instance is provisioned: its outputs published, no longer
// refused (envtest runs no StatefulSet controller, so it stays Binding).
func proceeds(t *testing.T, c *scorev1b1.ResourceClaim) *scorev1b1.ResourceClaim {
	t.Helper()
	out := &scorev1b1.ResourceClaim{}
	testenv.Eventually(t, testenv.WaitTimeout, "the claim provisioned", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), out); err != nil {
			return err
		}
		if out.Status.Phase == scorev1b1.ClaimPhaseFailed || !out.Status.OutputsAvailable {
			return fmt.Errorf("%s %s: %s", out.Status.Phase, out.Status.Reason, out.Status.Message)
		}
		return nil
	})
	return out
}

// An object a tenant made under an instance's name is a conflict the user can act on, not a
// failure to retry: the claim is PermissionDenied, as the runtime reports an object another
// owner has, and is not retried with backoff; the tenant's deletion of the object brings it back
// (the object carries no instance label, so no cache of the provisioner holds it: the claim
// is woken by a watch on that object alone), and the instance is provisioned, the Service ours.
func TestHostilePrecreatedObjectIsAConflictUntilDeleted(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	name := "pg-" + provisioning.NewIdentity(ns, "web", "db", "postgres", "", "").Guid()[:12]
	theirs := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "sniff", Port: 5432}}},
	}
	testenv.Create(t, env.Client, theirs)
	c := claim(ns, "web")
	testenv.Create(t, env.Client, c)
	out := refused(t, c, fmt.Sprintf("Service %s exists and was not created by the provisioner", name))
	if !strings.Contains(out.Status.Message, "the claim proceeds once it is deleted") {
		t.Errorf("the message does not say what to do: %s", out.Status.Message)
	}

	if err := env.Client.Delete(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	proceeds(t, c)
	ours := &corev1.Service{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(theirs), ours); err != nil {
		t.Fatal(err)
	}
	if ours.UID == theirs.UID || ours.Labels[scorev1b1.LabelInstance] == "" {
		t.Fatalf("the Service is not the instance's: %+v", ours.ObjectMeta)
	}
}

// A tenant with Secret rights in the namespace computes an instance's state Secret's name and
// makes it before the provisioner does, with state of their own: a password they know, marked
// with the instance's label and a signature annotation of their making, or without any mark
// (which no cache of the provisioner holds). The provisioner reads neither as its state: the
// claim is PermissionDenied naming the Secret, the tenant's Secret is neither written over nor
// deleted (not even when the claim is released), and their password reaches no other Secret
// and no status. Once they delete it, the claim comes back by itself and draws its own.
func TestHostilePrecreatedStateIsNeitherReadNorWritten(t *testing.T) {
	const known = "the-tenant-knows-this"
	for _, tc := range []struct {
		name   string
		labels func(hash string) map[string]string
		annots map[string]string
	}{
		{"marked as the instance's", func(hash string) map[string]string { return map[string]string{scorev1b1.LabelInstance: hash} },
			map[string]string{"score.dev/state-mac": "bm90IGEgc2lnbmF0dXJl"}},
		{"unmarked", func(string) map[string]string { return nil }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := testenv.Namespace(t, env.Client)
			id := provisioning.NewIdentity(ns, "web", "db", "postgres", "", "")
			theirs := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: id.StateSecretName(), Labels: tc.labels(id.Hash()), Annotations: tc.annots},
				Data:       map[string][]byte{"state.json": []byte(`{"password":"` + known + `"}`)},
			}
			testenv.Create(t, env.Client, theirs)
			before := theirs.ResourceVersion

			c := claim(ns, "web")
			testenv.Create(t, env.Client, c)
			out := refused(t, c, fmt.Sprintf("Secret %s exists and was not created by the provisioner", id.StateSecretName()))
			if out.Status.Outputs != nil && strings.Contains(string(out.Status.Outputs.Raw), known) {
				t.Fatalf("the tenant's password is in the claim's outputs: %s", out.Status.Outputs.Raw)
			}
			unread := func() {
				t.Helper()
				got := &corev1.Secret{}
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(theirs), got); err != nil {
					t.Fatal(err)
				}
				if got.UID != theirs.UID || got.ResourceVersion != before {
					t.Fatalf("the tenant's Secret was written: %+v", got.ObjectMeta)
				}
				var secrets corev1.SecretList
				if err := env.Client.List(ctx, &secrets, client.InNamespace(ns)); err != nil {
					t.Fatal(err)
				}
				for _, s := range secrets.Items {
					for k, v := range s.Data {
						if s.UID != theirs.UID && strings.Contains(string(v), known) {
							t.Fatalf("the tenant's password reached Secret %s (%s)", s.Name, k)
						}
					}
				}
			}
			unread()

			// Released under Delete, the claim leaves the tenant's Secret; a new claim is
			// refused the same.
			if err := env.Client.Delete(ctx, c); err != nil {
				t.Fatal(err)
			}
			testenv.WaitGone(t, env.Client, c)
			unread()
			c = claim(ns, "web")
			testenv.Create(t, env.Client, c)
			refused(t, c, id.StateSecretName())
			unread()

			if err := env.Client.Delete(ctx, theirs); err != nil {
				t.Fatal(err)
			}
			proceeds(t, c)
			state := &corev1.Secret{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(theirs), state); err != nil {
				t.Fatal(err)
			}
			if state.UID == theirs.UID || strings.Contains(string(state.Data["state.json"]), known) || state.Annotations["score.dev/state-mac"] == "" {
				t.Fatalf("the state after the tenant's Secret went: %+v", state.ObjectMeta)
			}
		})
	}
}
