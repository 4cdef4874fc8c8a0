package failover

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/registration"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv/inprocess"
)

// The failover's times: a member silent for after loses its Workloads, to a member that has
// answered for holdDown.
const (
	after    = 4 * time.Second
	holdDown = 20 * time.Second
)

// config is a web-service profile with two backends on the env=test clusters, Ordered (a before
// b): k8s-failover for the Workloads labelled failover=yes, which fails over, and k8s-stay for
// the others, which does not; and k8s-copies for the Workloads labelled copies=yes, a copy on 2
// of the env=copies clusters, which fails over (copies_test.go). kv-delete and kv-retain are
// dependencies whose instance is a ConfigMap next to the consumer, deprovisioned by Delete and
// Retain.
func config(templateDigest string) string {
	return fmt.Sprintf(`apiVersion: score.dev/v1b1
kind: OrchestratorConfig
profiles:
  - name: web-service
    backends:
      - backendId: k8s-failover
        runtimeClass: kubernetes
        priority: 10
        version: 1.0.0
        template: {kind: manifests, ref: "configmap://score-system/templates/web.yaml", digest: %[1]q}
        constraints: {selectors: [{matchLabels: {failover: "yes"}}]}
        placement:
          clusterSelector: {matchLabels: {env: test}}
          policy: Ordered
          failover: {after: %[2]s, holdDown: %[3]s}
      - backendId: k8s-copies
        runtimeClass: kubernetes
        priority: 20
        version: 1.0.0
        template: {kind: manifests, ref: "configmap://score-system/templates/web.yaml", digest: %[1]q}
        constraints: {selectors: [{matchLabels: {copies: "yes"}}]}
        placement:
          clusterSelector: {matchLabels: {env: copies}}
          policy: Ordered
          clusters: "2"
          failover: {after: %[2]s, holdDown: %[3]s}
      - backendId: k8s-stay
        runtimeClass: kubernetes
        priority: 1
        version: 1.0.0
        template: {kind: manifests, ref: "configmap://score-system/templates/web.yaml", digest: %[1]q}
        placement:
          clusterSelector: {matchLabels: {env: test}}
          policy: Ordered
defaults:
  profile: web-service
provisioners:
  - uri: template://test/kv-delete
    type: kv-delete
    deprovisionPolicy: Delete
    init: |
      name: kvd-{{ substr 0 8 .Guid }}
    outputs: |
      host: {{ .Init.name }}.{{ .Namespace }}
    expected_outputs: [host]
    manifests: |
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: {{ .Init.name }}, labels: {kv: delete}}
  - uri: template://test/kv-retain
    type: kv-retain
    deprovisionPolicy: Retain
    init: |
      name: kvr-{{ substr 0 8 .Guid }}
    outputs: |
      host: {{ .Init.name }}.{{ .Namespace }}
    expected_outputs: [host]
    manifests: |
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: {{ .Init.name }}, labels: {kv: retain}}
`, templateDigest, after, holdDown)
}

// register registers a member labelled env=test, reached at server, as `scorectl cluster add`
// does.
func register(t *testing.T, name, server string, member *testenv.Env) {
	t.Helper()
	testenv.RegisterMember(t, env.Client, member.Config, registration.Registration{Name: name, Namespace: controlPlane, Server: server, Labels: map[string]string{"env": "test"}})
}

// published is a cluster's status as the runtime publishes it.
func published(name string) (clusters.Status, error) {
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: controlPlane, Name: clusters.StatusConfigMap}, cm); err != nil {
		return clusters.Status{}, err
	}
	st, ok := clusters.Decode(cm)[name]
	if !ok || st.Since == nil {
		return st, fmt.Errorf("cluster %s not published with a time: %+v", name, st)
	}
	return st, nil
}

// answering waits until the runtime publishes cluster as answering (or not), and returns since
// when.
func answering(t *testing.T, name string, want bool) time.Time {
	t.Helper()
	var since time.Time
	testenv.Eventually(t, time.Minute, fmt.Sprintf("cluster %s published reachable=%v", name, want), func() error {
		st, err := published(name)
		if err != nil {
			return err
		}
		if st.Reachable != want {
			return fmt.Errorf("reachable %v: %s", st.Reachable, st.Message)
		}
		since = st.Since.Time
		return nil
	})
	return since
}

// serve plays the members' controllers: every Deployment of ns on them is given the status of
// one whose replicas are all available.
func serve(ns string, members ...*testenv.Env) error {
	for _, m := range members {
		var list appsv1.DeploymentList
		if err := m.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		for i := range list.Items {
			d := &list.Items[i]
			if d.Status.ObservedGeneration == d.Generation && d.Status.AvailableReplicas >= 1 {
				continue
			}
			d.Status = testenv.DeploymentStatus(d, 1)
			if err := m.Client.Status().Update(ctx, d); err != nil && !apierrors.IsConflict(err) {
				return err
			}
		}
	}
	return nil
}

// readyOn waits until the Workload is Ready with its plan on cluster, serving the members'
// Deployments meanwhile, and returns the plan.
func readyOn(t *testing.T, ns, name, cluster string, members ...*testenv.Env) *scorev1b1.WorkloadPlan {
	t.Helper()
	p := &scorev1b1.WorkloadPlan{}
	testenv.Eventually(t, 3*time.Minute, fmt.Sprintf("%s Ready on cluster %s", name, cluster), func() error {
		if err := serve(ns, members...); err != nil {
			return err
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return err
		}
		if p.Spec.Cluster != cluster {
			return fmt.Errorf("the plan is on cluster %q", p.Spec.Cluster)
		}
		w := &scorev1b1.Workload{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
			return err
		}
		if c := testenv.Condition(w, scorev1b1.ConditionReady); c.Status != metav1.ConditionTrue {
			return fmt.Errorf("ready %s: %s %s", c.Status, c.Reason, c.Message)
		}
		return nil
	})
	return p
}

// events are the events of reason on the object of kind and name in ns, oldest first.
func events(t *testing.T, ns, kind, name, reason string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// failedOver waits for the plan's FailedOver event from one cluster to another, and returns it.
func failedOver(t *testing.T, ns, name, from, to string) eventsv1.Event {
	t.Helper()
	want := fmt.Sprintf("from cluster %s to cluster %s", from, to)
	var found eventsv1.Event
	testenv.Eventually(t, time.Minute, "a FailedOver event "+want, func() error {
		for _, e := range events(t, ns, "WorkloadPlan", name, "FailedOver") {
			if strings.Contains(e.Note, want) {
				found = e
				return nil
			}
		}
		return fmt.Errorf("none says %q", want)
	})
	return found
}

// uids are the UIDs of the objects of a list on a member, by name.
func uids(t *testing.T, m *testenv.Env, list client.ObjectList, opts ...client.ListOption) map[string]types.UID {
	t.Helper()
	if err := m.Client.List(ctx, list, opts...); err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range items {
		mo := o.(client.Object)
		out[mo.GetName()] = mo.GetUID()
	}
	return out
}

// on counts the objects of a list on a member.
func on(t *testing.T, m *testenv.Env, list client.ObjectList, opts ...client.ListOption) int {
	t.Helper()
	return len(uids(t, m, list, opts...))
}

// coexistence is the count and sum of score_runtime_move_coexistence_seconds.
func coexistence(t *testing.T) (uint64, float64) {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "score_runtime_move_coexistence_seconds" {
			h := f.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	return 0, 0
}

// A Workload whose backend fails over leaves a member that has not answered for
// failover.after for the other matching member, its dependencies provisioned anew there; the
// FailedOver event names both. A Workload whose backend does not fail over waits. When the
// lost member answers again, what the moved Workload left there is deleted — its Delete
// dependency's instance too, its Retain one kept — and nothing on the new side is touched, nor
// does the Workload move back. The member that came back receives the Workload only once it
// has answered for failover.holdDown.
func TestMemberFailoverOfASilentMember(t *testing.T) {
	memberA, memberB := testenv.StartForTest(t), testenv.StartForTest(t)
	darkA, serverA := newProxy(t, memberA.Config.Host)
	darkB, serverB := newProxy(t, memberB.Config.Host)
	register(t, "a", serverA, memberA)
	register(t, "b", serverB, memberB)
	text, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "templates", "web-service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	testenv.Create(t, env.Client,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: controlPlane, Name: "templates"}, Data: map[string]string{"web.yaml": string(text)}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: controlPlane, Name: "orchestrator-config"}, Data: map[string]string{"config.yaml": config(testenv.Digest(text))}})
	stop, err := inprocess.Start(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	answering(t, "a", true)
	upB := answering(t, "b", true)

	ns := testenv.Namespace(t, env.Client)
	moving := testenv.Workload(ns, "moving", testenv.WithPort("http", 80),
		testenv.WithResource("cache", "kv-delete"), testenv.WithResource("db", "kv-retain"),
		testenv.WithVar("CACHE", "${resources.cache.host}"), testenv.WithVar("DB", "${resources.db.host}"))
	moving.Labels = map[string]string{"failover": "yes"}
	staying := testenv.Workload(ns, "staying", testenv.WithPort("http", 80))
	testenv.Create(t, env.Client, moving, staying)
	readyOn(t, ns, "moving", "a", memberA)
	readyOn(t, ns, "staying", "a", memberA)
	ofMoving := client.MatchingLabels{scorev1b1.LabelWorkload: "moving"}
	deleteKV, retainKV := client.MatchingLabels{"kv": "delete"}, client.MatchingLabels{"kv": "retain"}
	onA := uids(t, memberA, &appsv1.DeploymentList{}, client.InNamespace(ns))
	retainedOnA := uids(t, memberA, &corev1.ConfigMapList{}, client.InNamespace(ns), retainKV)
	if len(onA) != 2 || on(t, memberA, &corev1.ConfigMapList{}, client.InNamespace(ns), deleteKV) != 1 || len(retainedOnA) != 1 {
		t.Fatalf("on a: deployments %v, instances %v", onA, retainedOnA)
	}
	if n := on(t, memberB, &appsv1.DeploymentList{}, client.InNamespace(ns)); n != 0 {
		t.Fatalf("%d deployments on b before any failover", n)
	}

	var onB map[string]types.UID
	t.Run("a member silent for failover.after: the Workload is placed on the other, its dependencies provisioned anew there, FailedOver naming both", func(t *testing.T) {
		// b is a failover target once it has answered for the hold-down: from then on, only
		// failover.after decides when the Workload leaves a.
		testenv.Eventually(t, time.Minute, "b answering for the hold-down", func() error {
			if time.Until(upB.Add(holdDown)) > 0 {
				return fmt.Errorf("b has answered for %s", time.Since(upB).Round(time.Second))
			}
			return nil
		})
		darkA.SetDark(true)
		lost := answering(t, "a", false)
		readyOn(t, ns, "moving", "b", memberB)
		e := failedOver(t, ns, "moving", "a", "b")
		if moved := e.EventTime.Sub(lost); moved < after {
			t.Fatalf("failed over %s after a stopped answering, before failover.after (%s)", moved, after)
		}
		t.Logf("failed over %s after a stopped answering (failover.after %s)", e.EventTime.Sub(lost), after)
		if n := len(events(t, ns, "WorkloadPlan", "moving", "Placed")); n != 1 {
			t.Fatalf("%d Placed events", n)
		}
		onB = uids(t, memberB, &appsv1.DeploymentList{}, client.InNamespace(ns))
		if len(onB) != 1 || on(t, memberB, &corev1.ConfigMapList{}, client.InNamespace(ns), deleteKV) != 1 || on(t, memberB, &corev1.ConfigMapList{}, client.InNamespace(ns), retainKV) != 1 {
			t.Fatalf("on b: deployments %v, and one instance of each dependency wanted", onB)
		}
		// Nothing was deleted on the member that does not answer; the plan still lists it.
		if got := uids(t, memberA, &appsv1.DeploymentList{}, client.InNamespace(ns)); len(got) != 2 {
			t.Fatalf("deployments on a while it is silent: %v", got)
		}
		p := &scorev1b1.WorkloadPlan{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "moving"}, p); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(clusters.Of(p.Status.Objects), ","), "a") {
			t.Fatalf("the plan let go of its objects on a: %+v", p.Status.Objects)
		}
	})

	t.Run("without failover a Workload waits for its member", func(t *testing.T) {
		// Checked after the other Workload failed over: failover.after has passed for it too.
		p := &scorev1b1.WorkloadPlan{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "staying"}, p); err != nil {
			t.Fatal(err)
		}
		c := meta.FindStatusCondition(p.Status.Conditions, scorev1b1.PlanConditionApplied)
		if p.Spec.Cluster != "a" || c == nil || c.Reason != scorev1b1.PlanReasonClusterUnreachable {
			t.Fatalf("the plan: cluster %q, %+v", p.Spec.Cluster, c)
		}
		if n := len(events(t, ns, "WorkloadPlan", "staying", "Placed")); n != 0 {
			t.Fatalf("%d Placed events", n)
		}
	})

	var back time.Time
	t.Run("the member answers again: the moved Workload's objects there are deleted, its Retain dependency kept, nothing on the new side touched", func(t *testing.T) {
		count, _ := coexistence(t)
		kvOnB := uids(t, memberB, &corev1.ConfigMapList{}, client.InNamespace(ns), client.HasLabels{"kv"})
		darkA.SetDark(false)
		back = answering(t, "a", true)
		testenv.Eventually(t, time.Minute, "the moved Workload's objects deleted from a", func() error {
			for what, list := range map[string]client.ObjectList{"deployments": &appsv1.DeploymentList{}, "services": &corev1.ServiceList{}, "secrets": &corev1.SecretList{}} {
				if n := on(t, memberA, list, client.InNamespace(ns), ofMoving); n > 0 {
					return fmt.Errorf("%d %s of the Workload on a", n, what)
				}
			}
			if n := on(t, memberA, &corev1.ConfigMapList{}, client.InNamespace(ns), deleteKV); n > 0 {
				return fmt.Errorf("the Delete dependency's instance is still on a")
			}
			p := &scorev1b1.WorkloadPlan{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "moving"}, p); err != nil {
				return err
			}
			if got := clusters.Of(p.Status.Objects); len(got) != 1 || got[0] != "b" {
				return fmt.Errorf("the plan holds objects on %v", got)
			}
			return nil
		})
		if got := uids(t, memberA, &corev1.ConfigMapList{}, client.InNamespace(ns), retainKV); len(got) != 1 || got[firstKey(retainedOnA)] != retainedOnA[firstKey(retainedOnA)] {
			t.Fatalf("the Retain dependency's instance on a: %v, was %v", got, retainedOnA)
		}
		testenv.Eventually(t, time.Minute, "a Retained event on the Retain dependency's claim", func() error {
			var list eventsv1.EventList
			if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
				return err
			}
			for _, e := range list.Items {
				if e.Regarding.Kind == "ResourceClaim" && e.Reason == "Retained" && strings.Contains(e.Note, "cluster a") {
					return nil
				}
			}
			return fmt.Errorf("none")
		})
		if got := uids(t, memberB, &appsv1.DeploymentList{}, client.InNamespace(ns)); !sameUIDs(got, onB) {
			t.Fatalf("deployments on b: %v, were %v", got, onB)
		}
		if got := uids(t, memberB, &corev1.ConfigMapList{}, client.InNamespace(ns), client.HasLabels{"kv"}); !sameUIDs(got, kvOnB) {
			t.Fatalf("instances on b: %v, were %v", got, kvOnB)
		}
		if got := uids(t, memberA, &appsv1.DeploymentList{}, client.InNamespace(ns)); len(got) != 1 || got["staying"] != onA["staying"] {
			t.Fatalf("deployments on a: %v; the Workload without failover's was %s", got, onA["staying"])
		}
		readyOn(t, ns, "staying", "a", memberA)
		// No move back: a pass after a answers again keeps the Workload where it runs.
		testenv.RequestReconcile(t, env.Client, ns, "moving")
		readyOn(t, ns, "moving", "b", memberB)
		if after, sum := coexistence(t); after <= count || sum <= 0 {
			t.Fatalf("score_runtime_move_coexistence_seconds: %d samples (was %d), sum %.1f", after, count, sum)
		}
	})

	t.Run("hold-down: the member that came back receives no Workload until it has answered for failover.holdDown", func(t *testing.T) {
		darkB.SetDark(true)
		lost := answering(t, "b", false)
		if lost.Add(after).After(back.Add(holdDown)) {
			t.Skipf("b stopped answering %s after a came back: the hold-down (%s) would end before failover.after (%s) anyway", lost.Sub(back), holdDown, after)
		}
		readyOn(t, ns, "moving", "a", memberA)
		e := failedOver(t, ns, "moving", "b", "a")
		if e.EventTime.Time.Before(back.Add(holdDown)) {
			t.Fatalf("failed over to a %s after it came back, within the hold-down (%s)", e.EventTime.Sub(back), holdDown)
		}
		t.Logf("b silent at %s; failed over to a %s after a came back (hold-down %s)", lost.Sub(back), e.EventTime.Sub(back), holdDown)
	})
}

func firstKey(m map[string]types.UID) string {
	for k := range m {
		return k
	}
	return ""
}

func sameUIDs(a, b map[string]types.UID) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
