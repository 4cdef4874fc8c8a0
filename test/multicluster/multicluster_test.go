// Package multicluster runs a hub and two member clusters on this machine, each a simulated
// cluster of its own (kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kwok), and
// takes a Workload through placement by label, remote apply and health, the endpoint on the
// Workload, outputs propagated to the member, a member's API server killed and restarted, a
// move when labels change, and deletion while a member is down, let go of with `scorectl
// cluster remove --abandon`. The controllers run in the test process against the hub.
package multicluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	memberpool "github.com/score-orchestrator/score-orchestrator/internal/fleet/members"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/registration"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/simcluster"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv/inprocess"
)

var (
	ctx      = context.Background()
	hub      client.Client
	members  = map[string]*member{}
	scorectl string
	hubKube  string
	hubCfg   *rest.Config
)

// member is a member cluster of the test.
type member struct {
	cluster *simcluster.Cluster
	c       client.Client
}

// config is the member's admin connection.
func (m *member) config(t *testing.T) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", m.cluster.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestMain(m *testing.M) {
	os.Exit(testenv.SimulatedMain(m, testenv.Simulated{Name: "score-mc", Install: true, Clusters: map[string]testenv.ClusterSpec{
		"hub": {Volumes: 4},
		// The members hold the Workload's database too.
		"eu": {Volumes: 3},
		"us": {Volumes: 2},
	}}, setup))
}

// setup keeps the clusters' connections, places the web services on members, keeps redis on
// the hub and starts the controllers against the hub.
func setup(env *testenv.SimulatedEnv) (func(), error) {
	var err error
	if scorectl, err = testenv.BuildCommand(env.State, "scorectl"); err != nil {
		return nil, err
	}
	h := env.Clusters["hub"]
	hub, hubKube, hubCfg = h.Client, h.Kubeconfig(), h.Config
	for _, name := range []string{"eu", "us"} {
		members[name] = &member{cluster: env.Clusters[name].Cluster, c: env.Clusters[name].Client}
	}
	// Every web-service backend places on the clusters labelled env=prod, the first by name.
	if _, err := devenv.PlaceBackends(ctx, hub, "web-service", map[string]any{"clusterSelector": map[string]any{"matchLabels": map[string]any{"env": "prod"}}, "policy": "Ordered"}); err != nil {
		return nil, fmt.Errorf("placing web services on members: %w", err)
	}
	// The redis definition keeps its instances on the hub, wherever their Workload runs.
	if err := devenv.EditConfig(ctx, hub, func(doc map[string]any) error {
		for _, p := range doc["provisioners"].([]any) {
			if def := p.(map[string]any); def["type"] == "redis" {
				def["location"] = "Hub"
			}
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("keeping redis on the hub: %w", err)
	}
	// A member that stops answering is noticed within seconds here.
	memberpool.ProbeInterval = 2 * time.Second
	if err := startControllers(hubCfg); err != nil {
		return nil, err
	}
	restartControllers = func() error {
		stopControllers()
		return startControllers(hubCfg)
	}
	return func() { stopControllers() }, nil
}

var (
	stopControllers    func()
	restartControllers func() error
)

// startControllers runs the three controllers in one manager against the hub, until
// stopControllers.
func startControllers(hubConfig *rest.Config) error {
	stop, err := inprocess.Start(hubConfig)
	if err != nil {
		return err
	}
	stopControllers = stop
	return nil
}

// cli runs scorectl against the hub.
func cli(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(scorectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+hubKube)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, err := cli(t, args...)
	if err != nil {
		t.Fatalf("scorectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// relabel sets a registration's cluster labels, as `kubectl label secret` would.
func relabel(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	s := &corev1.Secret{}
	if err := hub.Get(ctx, client.ObjectKey{Namespace: "score-system", Name: name}, s); err != nil {
		t.Fatal(err)
	}
	labels[scorev1b1.LabelSecretType] = scorev1b1.SecretTypeCluster
	s.Labels = labels
	if err := hub.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
}

func plan(t *testing.T, ns, name string) *scorev1b1.WorkloadPlan {
	t.Helper()
	p := &scorev1b1.WorkloadPlan{}
	if err := hub.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// claim returns the Workload's one claim.
func claim(t *testing.T, ns string) *scorev1b1.ResourceClaim {
	t.Helper()
	var claims scorev1b1.ResourceClaimList
	if err := hub.List(ctx, &claims, client.InNamespace(ns)); err != nil || len(claims.Items) != 1 {
		t.Fatalf("claims on the hub: %d, %v", len(claims.Items), err)
	}
	return &claims.Items[0]
}

// databaseOn lists the postgres StatefulSets of the namespace on a cluster.
func databaseOn(t *testing.T, c client.Client, ns string) []appsv1.StatefulSet {
	t.Helper()
	var list appsv1.StatefulSetList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/name": "postgres"}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// auditMember checks what the controllers left on a member in a namespace, as the chaos run's
// audit does on one cluster: one claim per Workload's key; every object of ours there (the
// Workload or the instance label) listed by a live plan or claim on that cluster — nothing
// orphaned, nothing twice — and every entry listed there present — nothing lost. It returns
// what it found wrong.
func auditMember(t *testing.T, m *member, cluster, ns string) []string {
	t.Helper()
	var problems []string
	var plans scorev1b1.WorkloadPlanList
	var claims scorev1b1.ResourceClaimList
	if err := hub.List(ctx, &plans, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := hub.List(ctx, &claims, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	keys := map[string]string{}
	for _, c := range claims.Items {
		k := c.Spec.WorkloadRef.Name + "/" + c.Spec.Key
		if other, dup := keys[k]; dup {
			problems = append(problems, fmt.Sprintf("two claims for %s: %s and %s", k, other, c.Name))
		}
		keys[k] = c.Name
		for _, o := range c.Status.Resources {
			if o.Cluster == cluster {
				listed[o.Kind+" "+o.Name] = true
			}
		}
	}
	for _, p := range plans.Items {
		for _, o := range p.Status.Objects {
			if o.Cluster == cluster {
				listed[o.Kind+" "+o.Name] = true
			}
		}
	}
	found := map[string]bool{}
	for _, list := range []client.ObjectList{&appsv1.DeploymentList{}, &appsv1.StatefulSetList{}, &corev1.ServiceList{}, &corev1.SecretList{}, &corev1.ConfigMapList{}, &networkingv1.NetworkPolicyList{}} {
		for _, label := range []string{scorev1b1.LabelWorkload, scorev1b1.LabelInstance} {
			if err := m.c.List(ctx, list, client.InNamespace(ns), client.HasLabels{label}); err != nil {
				t.Fatal(err)
			}
			items, err := meta.ExtractList(list)
			if err != nil {
				t.Fatal(err)
			}
			for _, item := range items {
				o := item.(client.Object)
				id := kindOf(o) + " " + o.GetName()
				found[id] = true
				if !listed[id] {
					problems = append(problems, fmt.Sprintf("%s on %s: ours (%s), and no plan or claim lists it", id, cluster, label))
				}
			}
		}
	}
	for id := range listed {
		if !found[id] {
			problems = append(problems, fmt.Sprintf("%s is listed on %s and is not there", id, cluster))
		}
	}
	if len(found) == 0 {
		t.Fatalf("nothing of ours on %s in %s: the audit looked at nothing", cluster, ns)
	}
	t.Logf("audited %d objects on %s in %s", len(found), cluster, ns)
	return problems
}

// kindOf is the kind of a typed object.
func kindOf(o client.Object) string {
	gvks, _, err := testenv.Scheme().ObjectKinds(o)
	if err != nil || len(gvks) == 0 {
		return fmt.Sprintf("%T", o)
	}
	return gvks[0].Kind
}

// availableOn waits until the Workload's Deployment is Available on the member.
func availableOn(t *testing.T, m *member, ns, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	testenv.Eventually(t, 3*time.Minute, "Deployment "+name+" available on "+m.cluster.Name, func() error {
		if err := m.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return err
		}
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("not available: %+v", d.Status.Conditions)
	})
	return d
}

// settled waits until the Deployment's generation has not changed for five seconds (the
// rollout an earlier step caused is over), and returns it.
func settled(t *testing.T, m *member, key client.ObjectKey) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	var last int64
	var since time.Time
	testenv.Eventually(t, 2*time.Minute, "the Deployment settled", func() error {
		if err := m.c.Get(ctx, key, d); err != nil {
			return err
		}
		if d.Generation != last {
			last, since = d.Generation, time.Now()
		}
		if time.Since(since) < 5*time.Second {
			return fmt.Errorf("generation %d since %s", d.Generation, since.Format(time.TimeOnly))
		}
		return nil
	})
	return d
}

func ready(t *testing.T, key client.ObjectKey, timeout time.Duration) *scorev1b1.Workload {
	t.Helper()
	w := &scorev1b1.Workload{}
	testenv.Eventually(t, timeout, key.String()+" Ready", func() error {
		if err := hub.Get(ctx, key, w); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != w.Generation {
			return fmt.Errorf("not Ready: %+v", c)
		}
		return nil
	})
	return w
}

func TestPlacement(t *testing.T) {
	// Register the members as a platform engineer would.
	for name, labels := range map[string][]string{"eu": {"--label", "env=prod", "--label", "region=eu"}, "us": {"--label", "region=us"}} {
		out := mustCLI(t, append([]string{"cluster", "add", name, "--kubeconfig", members[name].cluster.Kubeconfig(), "--hub-kubeconfig", hubKube}, labels...)...)
		t.Log(strings.TrimSpace(out))
	}
	testenv.Eventually(t, time.Minute, "both members reachable", func() error {
		out, err := cli(t, "cluster", "list")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if (strings.HasPrefix(line, "eu ") || strings.HasPrefix(line, "us ")) && !strings.Contains(line, " yes ") {
				return fmt.Errorf("not reachable yet:\n%s", out)
			}
		}
		if !strings.Contains(out, "region=eu") || !strings.Contains(out, "v1.37") {
			return fmt.Errorf("the list lacks labels or versions:\n%s", out)
		}
		return nil
	})

	ns := "team-a"
	// Its Pod Security labels go with it to the member (warn only: nothing refused here).
	testenv.Create(t, hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"pod-security.kubernetes.io/warn": "baseline"}}})
	web := testenv.Workload(ns, "web", testenv.WithPort("http", 80), testenv.WithResource("db", "postgres"))
	testenv.Create(t, hub, web)
	key := client.ObjectKeyFromObject(web)
	eu, us := members["eu"], members["us"]

	t.Run("placed by label, applied and healthy there, its endpoint on the Workload", func(t *testing.T) {
		w := ready(t, key, 4*time.Minute)
		p := plan(t, ns, "web")
		if p.Spec.Cluster != "eu" {
			t.Fatalf("placed on %q, want eu (env=prod)", p.Spec.Cluster)
		}
		availableOn(t, eu, ns, "web")
		for _, o := range p.Status.Objects {
			if o.Cluster != "eu" {
				t.Errorf("inventory entry %s %s is on %q", o.Kind, o.Name, o.Cluster)
			}
		}
		if err := hub.Get(ctx, key, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			t.Errorf("a Deployment web on the hub: %v", err)
		}
		if err := us.c.Get(ctx, key, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			t.Errorf("a Deployment web on us: %v", err)
		}
		if w.Status.Endpoint == nil || *w.Status.Endpoint == "" {
			t.Fatalf("no endpoint on the Workload: %+v", w.Status)
		}
		d := &appsv1.Deployment{}
		if err := eu.c.Get(ctx, key, d); err != nil {
			t.Fatal(err)
		}
		if len(d.OwnerReferences) != 0 || d.Annotations[scorev1b1.AnnotationWorkloadUID] != string(w.UID) {
			t.Fatalf("the member's Deployment: owners %v, annotations %v", d.OwnerReferences, d.Annotations)
		}
		// Its database next to it: provisioned on eu, none on the hub or on us.
		c := claim(t, ns)
		if c.Status.InstanceCluster != "eu" || len(c.Status.Resources) == 0 {
			t.Fatalf("the claim's instance is on %q with %d objects", c.Status.InstanceCluster, len(c.Status.Resources))
		}
		for _, o := range c.Status.Resources {
			if o.Cluster != "eu" {
				t.Errorf("the claim's %s %s is on %q", o.Kind, o.Name, o.Cluster)
			}
		}
		if n := len(databaseOn(t, eu.c, ns)); n != 1 {
			t.Errorf("%d databases on eu, want 1", n)
		}
		if n := len(databaseOn(t, hub, ns)) + len(databaseOn(t, us.c, ns)); n != 0 {
			t.Errorf("%d databases on the hub or us", n)
		}
		why := mustCLI(t, "why", "web", "-n", ns)
		if !strings.Contains(why, "Placement: clusters matching env=prod") || !strings.Contains(why, "✓ eu") || !strings.Contains(why, "✗ us") {
			t.Fatalf("why:\n%s", why)
		}
	})

	t.Run("the outputs Secret is propagated and kept in step", func(t *testing.T) {
		p := plan(t, ns, "web")
		secretName := p.Spec.Claims[0].SecretName
		hubSecret := &corev1.Secret{}
		if err := hub.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, hubSecret); err != nil {
			t.Fatal(err)
		}
		sameData := func(want map[string][]byte) func() error {
			return func() error {
				s := &corev1.Secret{}
				if err := eu.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, s); err != nil {
					return err
				}
				if len(s.Data) != len(want) {
					return fmt.Errorf("%d keys on the member, %d on the hub", len(s.Data), len(want))
				}
				for k, v := range want {
					if !bytes.Equal(s.Data[k], v) {
						return fmt.Errorf("key %s differs", k)
					}
				}
				return nil
			}
		}
		testenv.Eventually(t, time.Minute, "the outputs on eu", sameData(hubSecret.Data))
		revision := func() string {
			d := &appsv1.Deployment{}
			if err := eu.c.Get(ctx, key, d); err != nil {
				t.Fatal(err)
			}
			return d.Spec.Template.Labels[scorev1b1.LabelSecretsRevision]
		}
		rolledFrom := revision()
		// New outputs, as a provisioner that rotates a password publishes them: the password
		// changed in the instance's state on the hub, then a reconcile requested (the state is
		// the provisioner's memory, not a watched input), signed with `scorectl state sign` (the
		// provisioner reads only state it signed, or the platform did). The provisioner renders the outputs
		// from it; they reach the member and roll the pods there. (A value written into the
		// outputs Secret itself is drift the provisioner puts back. The simulated database has
		// no data to re-key: this is not how a real database's password is rotated.)
		states := &corev1.SecretList{}
		if err := hub.List(ctx, states, client.InNamespace(ns), client.MatchingLabels{scorev1b1.LabelInstance: claim(t, ns).Status.Instance}); err != nil || len(states.Items) != 1 {
			t.Fatalf("the instance's state Secret on the hub: %d found, %v", len(states.Items), err)
		}
		state := map[string]any{}
		if err := json.Unmarshal(states.Items[0].Data["state.json"], &state); err != nil || state["password"] == nil {
			t.Fatalf("the state %s: %v, password set: %t", states.Items[0].Name, err, state["password"] != nil)
		}
		state["password"] = "rotated-by-the-platform"
		raw, err := json.Marshal(state)
		if err != nil {
			t.Fatal(err)
		}
		states.Items[0].Data["state.json"] = raw
		if err := hub.Update(ctx, &states.Items[0]); err != nil {
			t.Fatal(err)
		}
		// The provisioner reads only state it signed: the platform signs its change.
		mustCLI(t, "state", "sign", states.Items[0].Name, "-n", ns)
		mustCLI(t, "reconcile", "web", "-n", ns)
		testenv.Eventually(t, time.Minute, "the rotated outputs on the hub", func() error {
			if err := hub.Get(ctx, client.ObjectKeyFromObject(hubSecret), hubSecret); err != nil {
				return err
			}
			if string(hubSecret.Data["password"]) != "rotated-by-the-platform" {
				return errors.New("the password is not the rotated one yet")
			}
			return nil
		})
		testenv.Eventually(t, time.Minute, "the rotated outputs on eu", sameData(hubSecret.Data))
		testenv.Eventually(t, time.Minute, "the pods on eu rolled", func() error {
			if now := revision(); now == rolledFrom {
				return fmt.Errorf("secrets revision still %q", now)
			}
			return nil
		})
		ready(t, key, 2*time.Minute)
	})

	t.Run("credentials rotated by cluster add again: the old token refused, reconnected without a restart", func(t *testing.T) {
		// The registration gets a new token; the one it held is revoked on eu once the new
		// one is on the hub.
		old := registrationToken(t, "eu")
		mustCLI(t, "cluster", "add", "eu", "--kubeconfig", eu.cluster.Kubeconfig(), "--hub-kubeconfig", hubKube, "--label", "env=prod", "--label", "region=eu")
		if registrationToken(t, "eu") == old {
			t.Fatal("cluster add again kept the token")
		}
		refusedBy(t, eu, old)
		// A change of the Workload reaches eu through the new credentials, its database's
		// objects are judged there still, and nothing restarted.
		// (Read again on a conflict: the controllers may still be writing the Workload's
		// status after the previous step's rollout.)
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			w := &scorev1b1.Workload{}
			if err := hub.Get(ctx, key, w); err != nil {
				return err
			}
			testenv.WithVar("ROTATED", "yes")(w)
			return hub.Update(ctx, w)
		}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 2*time.Minute, "the change on eu", func() error {
			d := &appsv1.Deployment{}
			if err := eu.c.Get(ctx, key, d); err != nil {
				return err
			}
			for _, e := range d.Spec.Template.Spec.Containers[0].Env {
				if e.Name == "ROTATED" {
					return nil
				}
			}
			return errors.New("not yet")
		})
		ready(t, key, 2*time.Minute)
		if c := claim(t, ns); c.Status.Phase != scorev1b1.ClaimPhaseBound {
			t.Fatalf("the claim after the rotation: %s %s", c.Status.Phase, c.Status.Message)
		}
	})

	t.Run("the controllers' identity on a member reaches only the namespaces placed into", func(t *testing.T) {
		// The Workload's namespace on eu: created by the controllers, labelled so, with the
		// hub namespace's Pod Security labels.
		nsOnEU := &corev1.Namespace{}
		if err := eu.c.Get(ctx, client.ObjectKey{Name: ns}, nsOnEU); err != nil {
			t.Fatal(err)
		}
		if nsOnEU.Labels[clusters.LabelPlaced] != "true" || nsOnEU.Labels["pod-security.kubernetes.io/warn"] != "baseline" {
			t.Fatalf("the namespace on eu is labelled %v", nsOnEU.Labels)
		}
		// As the identity (impersonated by eu's administrator): nothing outside.
		cfg := eu.config(t)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + registration.MemberNamespace + ":" + registration.MemberServiceAccount}
		identity, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		if err := identity.List(ctx, &corev1.SecretList{}, client.InNamespace("kube-system")); !apierrors.IsForbidden(err) {
			t.Errorf("the identity lists the Secrets of kube-system: %v", err)
		}
		d := availableOn(t, eu, ns, "web").DeepCopy()
		d.ObjectMeta = metav1.ObjectMeta{Namespace: "default", Name: "miner"}
		if err := identity.Create(ctx, d); !apierrors.IsForbidden(err) {
			t.Errorf("the identity creates a Deployment in default: %v", err)
		}
		if err := identity.Get(ctx, client.ObjectKey{Namespace: ns, Name: plan(t, ns, "web").Spec.Claims[0].SecretName}, &corev1.Secret{}); err != nil {
			t.Errorf("the identity cannot read the outputs where it placed: %v", err)
		}
	})

	t.Run("a namespace on the member the platform did not label is refused, then placed into once labelled", func(t *testing.T) {
		cns := "team-c"
		testenv.Create(t, eu.c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cns}})
		testenv.Create(t, hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cns}})
		w := testenv.Workload(cns, "web", testenv.WithPort("http", 80))
		testenv.Create(t, hub, w)
		wkey := client.ObjectKeyFromObject(w)
		testenv.WaitForCondition(t, hub, wkey, scorev1b1.ConditionReady, metav1.ConditionFalse, scorev1b1.ReasonPermissionDenied)
		if m := plan(t, cns, "web").Status.Message; !strings.Contains(m, clusters.LabelPlaced) {
			t.Fatalf("the plan does not say why: %q", m)
		}
		if err := eu.c.Get(ctx, wkey, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			t.Fatalf("a Deployment in the unlabelled namespace on eu: %v", err)
		}
		unlabelled := &corev1.Namespace{}
		if err := eu.c.Get(ctx, client.ObjectKey{Name: cns}, unlabelled); err != nil {
			t.Fatal(err)
		}
		unlabelled.Labels[clusters.LabelPlaced] = "true"
		if err := eu.c.Update(ctx, unlabelled); err != nil {
			t.Fatal(err)
		}
		ready(t, wkey, 3*time.Minute)
		if err := hub.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
		testenv.WaitGone(t, hub, &scorev1b1.WorkloadPlan{ObjectMeta: metav1.ObjectMeta{Namespace: cns, Name: "web"}})
	})

	t.Run("mid-rollout, the member's API server and the controllers killed: nothing lost, nothing twice", func(t *testing.T) {
		// Two Workloads sharing one database (one instance on eu) and one whose cache stays on
		// the hub (location: Hub), rolled out while eu's API server is down and the
		// controllers restart.
		bns := "team-b"
		testenv.Create(t, hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bns}})
		batch := []*scorev1b1.Workload{
			testenv.Workload(bns, "orders", testenv.WithPort("http", 80), testenv.WithResource("db", "postgres", testenv.ResourceID("orders"))),
			testenv.Workload(bns, "billing", testenv.WithPort("http", 80), testenv.WithResource("db", "postgres", testenv.ResourceID("orders"))),
			testenv.Workload(bns, "front", testenv.WithPort("http", 80), testenv.WithResource("cache", "redis")),
		}
		for _, w := range batch {
			testenv.Create(t, hub, w)
		}
		testenv.Eventually(t, 2*time.Minute, "the rollout under way on eu", func() error {
			var list appsv1.StatefulSetList
			if err := eu.c.List(ctx, &list, client.InNamespace(bns)); err != nil || len(list.Items) == 0 {
				return fmt.Errorf("no database on eu yet: %v", err)
			}
			return nil
		})
		start, err := eu.cluster.Component("kube-apiserver").Kill()
		if err != nil {
			t.Fatal(err)
		}
		if err := restartControllers(); err != nil {
			_, _ = start()
			t.Fatal(err)
		}
		testenv.Eventually(t, time.Minute, "eu published unreachable", func() error {
			cm := &corev1.ConfigMap{}
			if err := hub.Get(ctx, client.ObjectKey{Namespace: "score-system", Name: clusters.StatusConfigMap}, cm); err != nil {
				return err
			}
			if clusters.Decode(cm)["eu"].Reachable {
				return errors.New("still reachable")
			}
			return nil
		})
		if _, err := start(); err != nil {
			t.Fatal(err)
		}
		for _, w := range batch {
			ready(t, client.ObjectKeyFromObject(w), 4*time.Minute)
		}
		for _, p := range auditMember(t, eu, "eu", bns) {
			t.Error(p)
		}
		// The cache is on the hub, its outputs on eu next to their consumer.
		cache := &scorev1b1.ResourceClaim{}
		if err := hub.Get(ctx, client.ObjectKey{Namespace: bns, Name: planner.ClaimName("front", "cache", "redis")}, cache); err != nil {
			t.Fatal(err)
		}
		if cache.Status.InstanceCluster != "" || len(cache.Status.Resources) == 0 || cache.Status.SecretRef == nil {
			t.Fatalf("the hub's cache: on %q, %d objects, outputs %v", cache.Status.InstanceCluster, len(cache.Status.Resources), cache.Status.SecretRef)
		}
		var caches appsv1.StatefulSetList
		if err := hub.List(ctx, &caches, client.InNamespace(bns)); err != nil || len(caches.Items) != 1 {
			t.Fatalf("%d StatefulSets on the hub, want the cache's: %v", len(caches.Items), err)
		}
		if err := eu.c.Get(ctx, client.ObjectKey{Namespace: bns, Name: cache.Status.SecretRef.Name}, &corev1.Secret{}); err != nil {
			t.Fatalf("the cache's outputs on eu: %v", err)
		}
		// The audit can fail: an object of ours that nothing lists is found.
		planted := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: bns, Name: "planted-orphan", Labels: map[string]string{scorev1b1.LabelInstance: "0123456789abcdef"}}}
		testenv.Create(t, eu.c, planted)
		if found := strings.Join(auditMember(t, eu, "eu", bns), "\n"); !strings.Contains(found, "Secret planted-orphan on eu") {
			t.Errorf("the audit missed the planted orphan; it found: %q", found)
		}
		if err := eu.c.Delete(ctx, planted); err != nil {
			t.Fatal(err)
		}
		var databases appsv1.StatefulSetList
		if err := eu.c.List(ctx, &databases, client.InNamespace(bns)); err != nil || len(databases.Items) != 1 {
			t.Fatalf("%d databases on eu for one shared id, %v", len(databases.Items), err)
		}
		for _, w := range batch {
			if err := hub.Delete(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
		testenv.Eventually(t, 2*time.Minute, "the batch deleted, on the hub and on eu", func() error {
			var plans scorev1b1.WorkloadPlanList
			var claims scorev1b1.ResourceClaimList
			var deployments appsv1.DeploymentList
			var databases appsv1.StatefulSetList
			for _, l := range []struct {
				c    client.Client
				list client.ObjectList
			}{{hub, &plans}, {hub, &claims}, {eu.c, &deployments}, {eu.c, &databases}} {
				if err := l.c.List(ctx, l.list, client.InNamespace(bns)); err != nil {
					return err
				}
			}
			if n := len(plans.Items) + len(claims.Items) + len(deployments.Items) + len(databases.Items); n != 0 {
				return fmt.Errorf("%d plans, %d claims, %d Deployments and %d StatefulSets left", len(plans.Items), len(claims.Items), len(deployments.Items), len(databases.Items))
			}
			return nil
		})
	})

	t.Run("a member's API server killed and restarted: said, nothing lost, nothing rewritten", func(t *testing.T) {
		before := settled(t, eu, key)
		start, err := eu.cluster.Component("kube-apiserver").Kill()
		if err != nil {
			t.Fatal(err)
		}
		restarted := false
		defer func() {
			if !restarted {
				_, _ = start()
			}
		}()
		testenv.Eventually(t, time.Minute, "the Workload says its runtime does not answer", func() error {
			w := &scorev1b1.Workload{}
			if err := hub.Get(ctx, key, w); err != nil {
				return err
			}
			c := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
			if c == nil || c.Reason != string(scorev1b1.ReasonNetworkUnavailable) || strings.Contains(c.Message, "eu") {
				return fmt.Errorf("Ready: %+v", c)
			}
			return nil
		})
		p := plan(t, ns, "web")
		if c := meta.FindStatusCondition(p.Status.Conditions, scorev1b1.PlanConditionApplied); c == nil || c.Reason != scorev1b1.PlanReasonClusterUnreachable {
			t.Fatalf("the plan's Applied condition: %+v", c)
		}
		if len(p.Status.Objects) == 0 {
			t.Fatal("the plan's inventory was emptied")
		}
		if c := claim(t, ns); c.Status.Phase != scorev1b1.ClaimPhaseBound || len(c.Status.Resources) == 0 {
			t.Fatalf("the claim while eu is down: %s, %d objects: %s", c.Status.Phase, len(c.Status.Resources), c.Status.Message)
		}
		if _, err := start(); err != nil {
			t.Fatal(err)
		}
		restarted = true
		ready(t, key, 2*time.Minute)
		after := &appsv1.Deployment{}
		testenv.Eventually(t, time.Minute, "the member answers", func() error { return eu.c.Get(ctx, key, after) })
		if after.UID != before.UID || after.Generation != before.Generation {
			t.Fatalf("the Deployment on eu was replaced or rewritten: uid %s→%s, generation %d→%d\ntemplate before %v %v\nafter %v %v", before.UID, after.UID, before.Generation, after.Generation,
				before.Spec.Template.Labels, before.Spec.Template.Annotations, after.Spec.Template.Labels, after.Spec.Template.Annotations)
		}
	})

	t.Run("a restart of the controllers moves nothing and rewrites nothing", func(t *testing.T) {
		before := settled(t, eu, key)
		// The runtime reconnects to both members and probes them, one after the other, while
		// the orchestrator places from what it publishes: a registration not probed yet must
		// never read as gone.
		wc, err := client.NewWithWatch(hubCfg, client.Options{Scheme: testenv.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		watch, err := wc.Watch(wctx, &corev1.ConfigMapList{}, client.InNamespace("score-system"), client.MatchingFields{"metadata.name": clusters.StatusConfigMap})
		if err != nil {
			t.Fatal(err)
		}
		if err := restartControllers(); err != nil {
			t.Fatal(err)
		}
		for ev := range watch.ResultChan() {
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok {
				if st := clusters.Decode(cm); len(st) != 2 {
					t.Fatalf("the clusters published during a restart: %v", cm.Data)
				}
			}
		}
		ready(t, key, time.Minute)
		if c := plan(t, ns, "web").Spec.Cluster; c != "eu" {
			t.Fatalf("moved to %q by a restart", c)
		}
		after := &appsv1.Deployment{}
		if err := eu.c.Get(ctx, key, after); err != nil || after.Generation != before.Generation {
			t.Fatalf("the Deployment on eu after a restart: generation %d→%d, %v", before.Generation, after.Generation, err)
		}
	})

	// A tenant moves its own Workload off a member with its profile annotation. Its claim
	// releases the member's instance, whose objects the claim that stays still uses and are
	// kept; the release must not count them as deleted, or the instance's state there goes and
	// the consumer that stays draws new credentials the running database does not accept.
	t.Run("one consumer of a shared instance moves away: the instance and its state stay for the other", func(t *testing.T) {
		const shared = "team-shared"
		testenv.Create(t, hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shared}})
		for _, name := range []string{"stays", "leaves"} {
			testenv.Create(t, hub, testenv.Workload(shared, name, testenv.WithPort("http", 80), testenv.WithResource("db", "postgres", testenv.ResourceID("orders"))))
		}
		for _, name := range []string{"stays", "leaves"} {
			ready(t, client.ObjectKey{Namespace: shared, Name: name}, 4*time.Minute)
		}
		claimOf := func(workload string) *scorev1b1.ResourceClaim {
			t.Helper()
			var claims scorev1b1.ResourceClaimList
			if err := hub.List(ctx, &claims, client.InNamespace(shared), client.MatchingLabels{scorev1b1.LabelWorkload: workload}); err != nil || len(claims.Items) != 1 {
				t.Fatalf("the claims of %s: %d, %v", workload, len(claims.Items), err)
			}
			return &claims.Items[0]
		}
		stays := claimOf("stays")
		if stays.Status.InstanceCluster != "eu" || claimOf("leaves").Status.Instance != stays.Status.Instance {
			t.Fatalf("not one instance on eu: %q on %q, %q", stays.Status.Instance, stays.Status.InstanceCluster, claimOf("leaves").Status.Instance)
		}
		stateOf := func() *corev1.Secret {
			t.Helper()
			var list corev1.SecretList
			if err := hub.List(ctx, &list, client.InNamespace(shared), client.MatchingLabels{scorev1b1.LabelInstance: stays.Status.Instance}); err != nil || len(list.Items) != 1 {
				t.Fatalf("the instance's state: %d Secrets, %v", len(list.Items), err)
			}
			return &list.Items[0]
		}
		state := stateOf()
		outputs := &corev1.Secret{}
		if err := hub.Get(ctx, client.ObjectKey{Namespace: shared, Name: stays.Status.SecretRef.Name}, outputs); err != nil {
			t.Fatal(err)
		}

		// The tenant, bound to score-workload-editor only, takes its Workload to a profile that
		// runs on the hub.
		testenv.Create(t, hub, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: shared, Name: "tenant-edits-workloads"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "score-workload-editor"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "tenant"}}})
		as := rest.CopyConfig(hubCfg)
		as.Impersonate = rest.ImpersonationConfig{UserName: "tenant", Groups: []string{"system:authenticated"}}
		tenant, err := client.New(as, client.Options{Scheme: testenv.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		leaves := &scorev1b1.Workload{}
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := tenant.Get(ctx, client.ObjectKey{Namespace: shared, Name: "leaves"}, leaves); err != nil {
				return err
			}
			leaves.Annotations = map[string]string{scorev1b1.AnnotationProfile: "stateful-service"}
			return tenant.Update(ctx, leaves)
		}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 3*time.Minute, "the leaving Workload's claim off eu, its old instance released", func() error {
			c := claimOf("leaves")
			if c.Status.InstanceCluster != "" || c.Status.Phase != scorev1b1.ClaimPhaseBound {
				return fmt.Errorf("its claim: %s on %q", c.Status.Phase, c.Status.InstanceCluster)
			}
			for _, o := range c.Status.Resources {
				if o.Cluster == "eu" {
					return fmt.Errorf("it still lists %s %s on eu", o.Kind, o.Name)
				}
			}
			return nil
		})
		ready(t, client.ObjectKey{Namespace: shared, Name: "leaves"}, 3*time.Minute)
		// A later pass of the claim that stays, which would draw new credentials had its
		// state gone.
		mustCLI(t, "reconcile", "stays", "-n", shared)
		if after := stateOf(); after.UID != state.UID || after.ResourceVersion != state.ResourceVersion {
			t.Fatalf("the instance's state on eu was replaced or rewritten: %s@%s → %s@%s", state.UID, state.ResourceVersion, after.UID, after.ResourceVersion)
		}
		afterOutputs := &corev1.Secret{}
		if err := hub.Get(ctx, client.ObjectKeyFromObject(outputs), afterOutputs); err != nil || afterOutputs.ResourceVersion != outputs.ResourceVersion {
			t.Fatalf("the staying consumer's credentials were rewritten: %v", err)
		}
		if n := len(databaseOn(t, eu.c, shared)); n != 1 {
			t.Fatalf("%d databases of the shared instance on eu, want 1", n)
		}
		ready(t, client.ObjectKey{Namespace: shared, Name: "stays"}, time.Minute)
		for _, name := range []string{"stays", "leaves"} {
			if err := hub.Delete(ctx, &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: shared, Name: name}}); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("a move when labels change: created on the new cluster, then deleted from the old", func(t *testing.T) {
		relabel(t, "eu", map[string]string{"region": "eu"})
		relabel(t, "us", map[string]string{"region": "us", "env": "prod"})
		testenv.Eventually(t, time.Minute, "the plan placed on us", func() error {
			if c := plan(t, ns, "web").Spec.Cluster; c != "us" {
				return fmt.Errorf("on %q", c)
			}
			return nil
		})
		availableOn(t, us, ns, "web")
		ready(t, key, 3*time.Minute)
		testenv.Eventually(t, time.Minute, "the objects on eu deleted", func() error {
			if err := eu.c.Get(ctx, key, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("the Deployment on eu: %v", err)
			}
			for _, o := range plan(t, ns, "web").Status.Objects {
				if o.Cluster != "us" {
					return fmt.Errorf("inventory still lists %s %s on %q", o.Kind, o.Name, o.Cluster)
				}
			}
			return nil
		})
		var secrets corev1.SecretList
		if err := eu.c.List(ctx, &secrets, client.InNamespace(ns), client.MatchingLabels{scorev1b1.LabelWorkload: "web"}); err != nil || len(secrets.Items) != 0 {
			t.Fatalf("outputs left on eu: %d, %v", len(secrets.Items), err)
		}
		// The database moved with it (a new instance on us: the claim's policy is Delete), and
		// the one on eu went once the Workload had left eu.
		testenv.Eventually(t, 2*time.Minute, "the database on us, none on eu", func() error {
			c := claim(t, ns)
			for _, o := range c.Status.Resources {
				if o.Cluster != "us" {
					return fmt.Errorf("the claim still lists %s %s on %q", o.Kind, o.Name, o.Cluster)
				}
			}
			if c.Status.InstanceCluster != "us" || c.Status.Phase != scorev1b1.ClaimPhaseBound {
				return fmt.Errorf("the claim: %s on %q", c.Status.Phase, c.Status.InstanceCluster)
			}
			if n, m := len(databaseOn(t, us.c, ns)), len(databaseOn(t, eu.c, ns)); n != 1 || m != 0 {
				return fmt.Errorf("%d databases on us, %d on eu", n, m)
			}
			return nil
		})
	})

	t.Run("deleting with the member down waits, and a cluster let go of releases it", func(t *testing.T) {
		start, err := us.cluster.Component("kube-apiserver").Kill()
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _, _ = start() }()
		if err := hub.Delete(ctx, web); err != nil {
			t.Fatal(err)
		}
		// The database goes first (the plan goes with the Workload, after its claims): its
		// claim says what deletion waits for.
		testenv.Eventually(t, 2*time.Minute, "the claim says what deletion waits for", func() error {
			if c := claim(t, ns); !strings.Contains(c.Status.Message, "Deprovisioning waits for cluster us to answer") {
				return fmt.Errorf("the claim: %s", c.Status.Message)
			}
			return nil
		})
		if out, err := cli(t, "cluster", "remove", "us"); err == nil || !strings.Contains(out, "1 workloads run on cluster us") {
			t.Fatalf("removing a cluster with a Workload on it: %v\n%s", err, out)
		}
		mustCLI(t, "cluster", "remove", "us", "--abandon")
		testenv.Eventually(t, time.Minute, "the plan released", func() error {
			switch err := hub.Get(ctx, key, &scorev1b1.WorkloadPlan{}); {
			case apierrors.IsNotFound(err):
				return nil
			case err != nil:
				return err
			}
			return errors.New("still there")
		})
		testenv.Eventually(t, time.Minute, "the claim released", func() error {
			var claims scorev1b1.ResourceClaimList
			if err := hub.List(ctx, &claims, client.InNamespace(ns)); err != nil || len(claims.Items) != 0 {
				return fmt.Errorf("%d claims, %v", len(claims.Items), err)
			}
			return nil
		})
		cm := &corev1.ConfigMap{}
		if err := hub.Get(ctx, client.ObjectKey{Namespace: "score-system", Name: clusters.StatusConfigMap}, cm); err != nil {
			t.Fatal(err)
		}
		if _, ok := clusters.Decode(cm)["us"]; ok {
			t.Fatalf("us still published: %v", cm.Data)
		}
	})

	t.Run("cluster remove revokes the registration's token on the member", func(t *testing.T) {
		token := registrationToken(t, "eu")
		if out := mustCLI(t, "cluster", "remove", "eu"); !strings.Contains(out, "its token revoked") {
			t.Fatalf("cluster remove eu: %s", out)
		}
		refusedBy(t, eu, token)
	})
}

// registrationToken is the token a registration holds on the hub.
func registrationToken(t *testing.T, name string) string {
	t.Helper()
	s := &corev1.Secret{}
	if err := hub.Get(ctx, client.ObjectKey{Namespace: "score-system", Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return string(s.Data[clusters.KeyToken])
}

// refusedBy waits until the member refuses token: authentication fails (401), as against a
// refusal of rights (403).
func refusedBy(t *testing.T, m *member, token string) {
	t.Helper()
	cfg := rest.AnonymousClientConfig(m.config(t))
	cfg.BearerToken = token
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the member refuses the old token", func() error {
		if err := c.Get(ctx, client.ObjectKey{Name: registration.MemberNamespace}, &corev1.Namespace{}); !apierrors.IsUnauthorized(err) {
			return fmt.Errorf("the member answered %v", err)
		}
		return nil
	})
}
