// Package several tests a Workload on several clusters end to end on real API servers: a hub
// running the controllers (in this process) and member clusters, each an API server and etcd
// of its own, registered as `scorectl cluster add` registers them. A backend places each
// Workload on two matching clusters (then on All): each copy runs on its member with its
// dependency next to it, the Workload is Ready when every copy is and shows the first copy's
// endpoint, a copy not ready makes it RuntimeDegraded, a cluster whose label goes loses its
// copy (the other untouched), and under All a newly registered cluster receives one.
//
// The members run no controllers: the test plays their Deployment controller and load
// balancer (it writes the status they would), each load balancer with an address of its own,
// so that the endpoint says which copy it is.
package several

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/registration"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv/inprocess"
)

const controlPlane = "score-system"

var (
	env *testenv.Env
	ctx = context.Background()
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, func(ctx context.Context, e *testenv.Env) error {
		env = e
		return testenv.CreateAll(ctx, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controlPlane}})
	}))
}

// config places web-service Workloads on `clusters` of the env=test clusters, in name order,
// behind a load balancer; a kv dependency is a ConfigMap of its instance's, provisioned next
// to its consumer.
func config(templateDigest, clusters string) string {
	return configOf("", profile("web-service", templateDigest, clusters, "test", "{expose: {serviceType: LoadBalancer}}"))
}

// profile is a profile of one backend, k8s-NAME, placing its Workloads on `clusters` of the
// clusters labelled env=label, in name order, with the template's values.
func profile(name, templateDigest, clusters, label, values string) string {
	return fmt.Sprintf(`  - name: %[1]s
    backends:
      - backendId: k8s-%[1]s
        runtimeClass: kubernetes
        version: 1.0.0
        template: {kind: manifests, ref: "configmap://score-system/templates/web.yaml", digest: %[2]q, values: %[5]s}
        placement:
          clusterSelector: {matchLabels: {env: %[4]s}}
          policy: Ordered
          clusters: %[3]s
`, name, templateDigest, clusters, label, values)
}

// configOf is a config of the profiles, web-service the default, with more of its top level.
func configOf(more string, profiles ...string) string {
	return `apiVersion: score.dev/v1b1
kind: OrchestratorConfig
profiles:
` + strings.Join(profiles, "") + `defaults:
  profile: web-service
` + more + `
provisioners:
  - uri: template://test/kv
    type: kv
    init: |
      name: kv-{{ substr 0 8 .Guid }}
    outputs: |
      host: {{ .Init.name }}.{{ .Namespace }}
    expected_outputs: [host]
    manifests: |
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: {{ .Init.name }}}
        data: {role: kv}
`
}

// member is a registered member cluster, and the address its load balancer gives.
type member struct {
	name string
	env  *testenv.Env
	ip   string
}

func register(t *testing.T, name, ip string) *member {
	t.Helper()
	return registerAs(t, name, ip, "test")
}

// registerAs registers a member labelled env=label.
func registerAs(t *testing.T, name, ip, label string) *member {
	t.Helper()
	m := &member{name: name, env: testenv.StartForTest(t), ip: ip}
	reg := registration.Registration{Name: name, Namespace: controlPlane, Labels: map[string]string{"env": label}}
	if op := testenv.RegisterMember(t, env.Client, m.env.Config, reg); op != "registered" {
		t.Fatalf("registering %s: %q", name, op)
	}
	// Let go of it with the test: a member whose API server is gone is no cluster to place on.
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: controlPlane, Name: name}})
	})
	return m
}

// deployment waits for the Workload's Deployment on m, and returns it.
func (m *member) deployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	testenv.Eventually(t, 2*time.Minute, "the Deployment on "+m.name, func() error {
		return m.env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d)
	})
	return d
}

// serve plays m's controllers for the Workload: its Deployment has ready replicas (ready
// false: none) and its Service the load balancer's address.
func (m *member) serve(t *testing.T, ns, name string, ready bool) {
	t.Helper()
	d := m.deployment(t, ns, name)
	n := int32(0)
	if ready {
		n = ptr.Deref(d.Spec.Replicas, 1)
	}
	d.Status = testenv.DeploymentStatus(d, n)
	if err := m.env.Client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{}
	testenv.Eventually(t, time.Minute, "the Service on "+m.name, func() error {
		return m.env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc)
	})
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: m.ip}}
	if err := m.env.Client.Status().Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
}

// instances are the names of the kv instances' ConfigMaps on c in ns.
func instances(t *testing.T, c client.Client, ns string) []string {
	t.Helper()
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.HasLabels{scorev1b1.LabelInstance}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, cm := range list.Items {
		out = append(out, cm.Name)
	}
	return out
}

// ready waits until the Workload's Ready condition has status and reason.
func ready(t *testing.T, ns, name string, status metav1.ConditionStatus, reason scorev1b1.Reason) *scorev1b1.Workload {
	t.Helper()
	w := &scorev1b1.Workload{}
	testenv.Eventually(t, 2*time.Minute, fmt.Sprintf("Ready %s/%s", status, reason), func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
			return err
		}
		c := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
		if c == nil || c.Status != status || c.Reason != string(reason) || c.ObservedGeneration != w.Generation {
			return fmt.Errorf("Ready %+v", c)
		}
		return nil
	})
	return w
}

// plans are the Workload's plans by name, with their clusters.
func plans(t *testing.T, ns, name string) map[string]*scorev1b1.WorkloadPlan {
	t.Helper()
	var list scorev1b1.WorkloadPlanList
	if err := env.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{scorev1b1.LabelWorkload: name}); err != nil {
		t.Fatal(err)
	}
	out := map[string]*scorev1b1.WorkloadPlan{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

func where(ps map[string]*scorev1b1.WorkloadPlan) []string {
	var out []string
	for name, p := range ps {
		out = append(out, name+"@"+p.Spec.Cluster)
	}
	slices.Sort(out)
	return out
}

func TestSeveralClusters(t *testing.T) {
	alpha, beta := register(t, "alpha", "10.0.0.1"), register(t, "beta", "10.0.0.2")
	text, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "templates", "web-service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	digest := testenv.Digest(text)
	testenv.PutConfigMap(t, env.Client, controlPlane, "templates", map[string]string{"web.yaml": string(text)})
	testenv.PutConfigMap(t, env.Client, controlPlane, "orchestrator-config", map[string]string{"config.yaml": config(digest, "2")})
	stop, err := inprocess.Start(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)

	ns := testenv.Namespace(t, env.Client)
	testenv.Create(t, env.Client, testenv.Workload(ns, "web", testenv.WithPort("http", 80),
		testenv.WithResource("db", "kv"), testenv.WithVar("DB_HOST", "${resources.db.host}")))

	t.Run("clusters 2: a copy on each member with its dependency next to it; Ready when both are, the first's endpoint", func(t *testing.T) {
		alpha.deployment(t, ns, "web")
		beta.deployment(t, ns, "web")
		if got := where(plans(t, ns, "web")); !slices.Equal(got, []string{"web.1@beta", "web@alpha"}) {
			t.Fatalf("plans %v", got)
		}
		// Each copy's dependency is an instance on its own cluster, none on the hub.
		testenv.Eventually(t, time.Minute, "an instance on each member", func() error {
			a, b := instances(t, alpha.env.Client, ns), instances(t, beta.env.Client, ns)
			if len(a) != 1 || len(b) != 1 || a[0] == b[0] {
				return fmt.Errorf("alpha %v, beta %v", a, b)
			}
			return nil
		})
		if hub := instances(t, env.Client, ns); len(hub) != 0 {
			t.Fatalf("instances on the hub: %v", hub)
		}
		// Each copy's pods read their own instance's host.
		for _, m := range []*member{alpha, beta} {
			d := m.deployment(t, ns, "web")
			env := d.Spec.Template.Spec.Containers[0].Env
			i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == "DB_HOST" })
			if i < 0 || env[i].Value != instances(t, m.env.Client, ns)[0]+"."+ns {
				t.Fatalf("DB_HOST on %s: %+v, want its own instance", m.name, env)
			}
		}

		// One copy serving: ready with reduced capacity, never Succeeded.
		alpha.serve(t, ns, "web", true)
		w := ready(t, ns, "web", metav1.ConditionTrue, scorev1b1.ReasonRuntimeDegraded)
		if c := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionRuntimeReady); c.Message != "The workload is running with reduced capacity: 1 of 2 copies are ready." {
			t.Fatalf("RuntimeReady %q", c.Message)
		}
		beta.serve(t, ns, "web", true)
		w = ready(t, ns, "web", metav1.ConditionTrue, scorev1b1.ReasonSucceeded)
		testenv.Eventually(t, time.Minute, "the first copy's endpoint", func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
				return err
			}
			if w.Status.Endpoint == nil || *w.Status.Endpoint != "http://10.0.0.1:80" {
				return fmt.Errorf("endpoint %v", w.Status.Endpoint)
			}
			return nil
		})
		// Every copy's endpoint is in its own exposure.
		e := &scorev1b1.WorkloadExposure{}
		testenv.Eventually(t, time.Minute, "the second copy's exposure", func() error {
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web.1"}, e); err != nil {
				return err
			}
			if len(e.Status.Exposures) == 0 || e.Status.Exposures[0].URL != "http://10.0.0.2:80" {
				return fmt.Errorf("exposures %+v", e.Status.Exposures)
			}
			return nil
		})
	})

	t.Run("scorectl status -o wide lists every copy's cluster and endpoint", func(t *testing.T) {
		scorectl, err := testenv.BuildCommand(t.TempDir(), "scorectl")
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(scorectl, "status", "web", "-n", ns, "-o", "wide", "--kubeconfig", testenv.Kubeconfig(t, env.Config)).CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		want := [][]string{
			{"NAME", "READY", "REASON", "CLUSTER", "ENDPOINT", "DEPENDENCIES", "MESSAGE"},
			{"web", "True", "Succeeded", "alpha", "http://10.0.0.1:80", "1/1", "The", "workload", "is", "ready."},
			{"web", "Projected", "-", "alpha", "http://10.0.0.1:80", "-"},
			{"web.1", "Projected", "-", "beta", "http://10.0.0.2:80", "-"},
		}
		if len(lines) != len(want) {
			t.Fatalf("got\n%s", out)
		}
		for i := range want {
			if got := strings.Join(strings.Fields(lines[i]), " "); got != strings.Join(want[i], " ") {
				t.Errorf("line %d: %q, want %q", i, got, strings.Join(want[i], " "))
			}
		}
	})

	t.Run("a Workload whose name looks like a copy's never reaches the copies' objects", func(t *testing.T) {
		// A copy's name has a dot, which no Workload's name may have.
		if err := env.Client.Create(ctx, testenv.Workload(ns, "web.1", testenv.WithPort("http", 80))); !apierrors.IsInvalid(err) {
			t.Fatalf("a Workload named web.1: %v, want it refused", err)
		}
		before := plans(t, ns, "web")
		testenv.Create(t, env.Client, testenv.Workload(ns, "web-1", testenv.WithPort("http", 80)))
		alpha.deployment(t, ns, "web-1")
		beta.deployment(t, ns, "web-1")
		if got := where(plans(t, ns, "web-1")); !slices.Equal(got, []string{"web-1.1@beta", "web-1@alpha"}) {
			t.Fatalf("web-1's plans %v", got)
		}
		for name, p := range plans(t, ns, "web") {
			if p.Generation != before[name].Generation || p.Spec.WorkloadRef.Name != "web" {
				t.Fatalf("web's plan %s changed: generation %d → %d, workload %s", name, before[name].Generation, p.Generation, p.Spec.WorkloadRef.Name)
			}
		}
		ready(t, ns, "web", metav1.ConditionTrue, scorev1b1.ReasonSucceeded)
	})

	t.Run("one copy not ready: RuntimeDegraded; ready again: Succeeded", func(t *testing.T) {
		beta.serve(t, ns, "web", false)
		ready(t, ns, "web", metav1.ConditionTrue, scorev1b1.ReasonRuntimeDegraded)
		beta.serve(t, ns, "web", true)
		ready(t, ns, "web", metav1.ConditionTrue, scorev1b1.ReasonSucceeded)
	})

	t.Run("a cluster whose label goes loses its copy; the other is untouched", func(t *testing.T) {
		before := plans(t, ns, "web")["web"]
		deployment := alpha.deployment(t, ns, "web")
		relabel(t, "beta", nil)
		testenv.Eventually(t, 2*time.Minute, "the copy removed from beta", func() error {
			if err := beta.env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("the Deployment on beta: %v", err)
			}
			if got := where(plans(t, ns, "web")); !slices.Equal(got, []string{"web@alpha"}) {
				return fmt.Errorf("plans %v", got)
			}
			if got := instances(t, beta.env.Client, ns); len(got) != 0 {
				return fmt.Errorf("instances on beta %v", got)
			}
			var claims scorev1b1.ResourceClaimList
			if err := env.Client.List(ctx, &claims, client.InNamespace(ns)); err != nil {
				return err
			}
			if len(claims.Items) != 1 || strings.Contains(claims.Items[0].Name, ".") {
				return fmt.Errorf("%d claims", len(claims.Items))
			}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web.1"}, &scorev1b1.WorkloadExposure{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("the exposure web.1: %v", err)
			}
			return nil
		})
		ready(t, ns, "web", metav1.ConditionTrue, scorev1b1.ReasonSucceeded)
		if after := plans(t, ns, "web")["web"]; after.Generation != before.Generation {
			t.Fatalf("alpha's plan was written: generation %d → %d", before.Generation, after.Generation)
		}
		if after := alpha.deployment(t, ns, "web"); after.UID != deployment.UID || after.Generation != deployment.Generation {
			t.Fatalf("alpha's Deployment changed: %s/%d → %s/%d", deployment.UID, deployment.Generation, after.UID, after.Generation)
		}
	})

	t.Run("All: a newly registered matching cluster receives a copy", func(t *testing.T) {
		testenv.PutConfigMap(t, env.Client, controlPlane, "orchestrator-config", map[string]string{"config.yaml": config(digest, "All")})
		before := plans(t, ns, "web")["web"]
		gamma := register(t, "gamma", "10.0.0.3")
		gamma.deployment(t, ns, "web")
		testenv.Eventually(t, time.Minute, "gamma's copy and instance", func() error {
			if got := where(plans(t, ns, "web")); !slices.Equal(got, []string{"web.1@gamma", "web@alpha"}) {
				return fmt.Errorf("plans %v", got)
			}
			if got := instances(t, gamma.env.Client, ns); len(got) != 1 {
				return fmt.Errorf("instances on gamma %v", got)
			}
			return nil
		})
		ready(t, ns, "web", metav1.ConditionTrue, scorev1b1.ReasonRuntimeDegraded)
		gamma.serve(t, ns, "web", true)
		ready(t, ns, "web", metav1.ConditionTrue, scorev1b1.ReasonSucceeded)
		if after := plans(t, ns, "web")["web"]; after.Generation != before.Generation {
			t.Fatalf("alpha's plan was written: generation %d → %d", before.Generation, after.Generation)
		}
	})
}

// relabel sets a registration's cluster labels (the Secret's labels besides its type).
func relabel(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: controlPlane, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(s.DeepCopy())
	l := map[string]string{scorev1b1.LabelSecretType: s.Labels[scorev1b1.LabelSecretType]}
	for k, v := range labels {
		l[k] = v
	}
	s.Labels = l
	if err := env.Client.Patch(ctx, s, patch); err != nil {
		t.Fatal(err)
	}
}

// TestRolloutWaitsForEveryCopy rolls a config change out over a Workload with a copy on each of
// two members: the wave passes when both copies are healthy at the new revision, and one copy
// serving while the other is not — the Workload Ready with RuntimeDegraded — halts it at the
// progress deadline: the gate reads every copy's plan, not the first copy's and the
// Workload's Ready, which would pass it.
func TestRolloutWaitsForEveryCopy(t *testing.T) {
	east, west := registerAs(t, "east", "10.0.1.1", "rollout"), registerAs(t, "west", "10.0.1.2", "rollout")
	text, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "templates", "web-service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	digest := testenv.Digest(text)
	testenv.PutConfigMap(t, env.Client, controlPlane, "templates", map[string]string{"web.yaml": string(text)})
	// Each revision sets the replicas of the profile the test's Workload asks for: its
	// Deployments change, and no other Workload's (web-service stays as the test before left
	// it).
	revision := func(replicas int32) {
		values := fmt.Sprintf("{expose: {serviceType: LoadBalancer}, replicas: %d}", replicas)
		policy := `rollout: {waves: ["100%"], bakeTime: 2s, progressDeadline: 30s}`
		testenv.PutConfigMap(t, env.Client, controlPlane, "orchestrator-config", map[string]string{"config.yaml": configOf(policy,
			profile("web-service", digest, "All", "test", "{expose: {serviceType: LoadBalancer}}"), profile("edge-service", digest, "2", "rollout", values))})
	}
	revision(1)
	stop, err := inprocess.Start(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	// rollouts are the rollouts' names, in order.
	rollouts := func() []string {
		var list scorev1b1.ConfigRolloutList
		if err := env.Client.List(ctx, &list, client.InNamespace(controlPlane)); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range list.Items {
			out = append(out, r.Name)
		}
		slices.Sort(out)
		return out
	}
	// The first revision settles before the Workload exists (a run before this one in the same
	// API server left another revision behind: the change to this one is a rollout too).
	testenv.Eventually(t, time.Minute, "the first revision's rollout over", func() error {
		names := rollouts()
		if len(names) == 0 {
			return fmt.Errorf("no rollout yet")
		}
		r := &scorev1b1.ConfigRollout{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: controlPlane, Name: names[len(names)-1]}, r); err != nil {
			return err
		}
		if r.Status.Phase != scorev1b1.RolloutCompleted {
			return fmt.Errorf("%s %s: %s", r.Name, r.Status.Phase, r.Status.Message)
		}
		return nil
	})
	ns := testenv.Namespace(t, env.Client)
	w := testenv.Workload(ns, "web", testenv.WithPort("http", 80), testenv.WithAnnotation(scorev1b1.AnnotationProfile, "edge-service"))
	testenv.Create(t, env.Client, w)
	// Gone with the test, while the controllers and the members still run: a Workload of the
	// profile left behind would be in the next run's rollouts.
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, w)
		testenv.Eventually(t, time.Minute, "the Workload gone", func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), &scorev1b1.Workload{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there: %v", err)
			}
			return nil
		})
	})
	east.serve(t, ns, "web", true)
	west.serve(t, ns, "web", true)
	ready(t, ns, "web", metav1.ConditionTrue, scorev1b1.ReasonSucceeded)

	// rollOut changes the replicas and waits for the change's rollout to reach phase: both
	// copies' Deployments ask for the replicas once rendered from it, east's is served and
	// west's as told.
	rollOut := func(t *testing.T, replicas int32, westReady bool, phase string) *scorev1b1.ConfigRollout {
		t.Helper()
		before := rollouts()
		revision(replicas)
		for _, m := range []*member{east, west} {
			testenv.Eventually(t, 2*time.Minute, m.name+"'s Deployment at the new revision", func() error {
				if d := m.deployment(t, ns, "web"); ptr.Deref(d.Spec.Replicas, 1) != replicas {
					return fmt.Errorf("replicas %d", ptr.Deref(d.Spec.Replicas, 1))
				}
				return nil
			})
		}
		east.serve(t, ns, "web", true)
		west.serve(t, ns, "web", westReady)
		r := &scorev1b1.ConfigRollout{}
		testenv.Eventually(t, 2*time.Minute, "the change's rollout "+phase, func() error {
			now := rollouts()
			if len(now) == len(before) {
				return fmt.Errorf("no new rollout after %v", before)
			}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: controlPlane, Name: now[len(now)-1]}, r); err != nil {
				return err
			}
			if r.Status.Phase != phase {
				return fmt.Errorf("%s %s: %s", r.Name, r.Status.Phase, r.Status.Message)
			}
			return nil
		})
		return r
	}

	rollOut(t, 2, true, scorev1b1.RolloutCompleted)
	halted := rollOut(t, 3, false, scorev1b1.RolloutHalted)
	// Aborted with the test, as a person would (scorectl rollout abort): a halted rollout
	// left behind would hold the next run's Workloads.
	t.Cleanup(func() {
		r := &scorev1b1.ConfigRollout{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(halted), r); err == nil {
			patch := client.MergeFrom(r.DeepCopy())
			r.Spec.Aborted = true
			_ = env.Client.Patch(ctx, r, patch)
		}
	})
	if !strings.Contains(halted.Status.Message, ns+"/web") {
		t.Fatalf("halted without naming the Workload: %q", halted.Status.Message)
	}
	// Halted, the wave is pinned back: both copies rendered from the revision before.
	for _, m := range []*member{east, west} {
		testenv.Eventually(t, time.Minute, m.name+"'s Deployment back at the previous revision", func() error {
			if d := m.deployment(t, ns, "web"); ptr.Deref(d.Spec.Replicas, 1) != 2 {
				return fmt.Errorf("replicas %d", ptr.Deref(d.Spec.Replicas, 1))
			}
			return nil
		})
	}
}
