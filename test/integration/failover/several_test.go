package failover

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/registration"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv/inprocess"
)

// registerCopies registers a member labelled env=copies, reached at server.
func registerCopies(t *testing.T, name, server string, member *testenv.Env) {
	t.Helper()
	testenv.RegisterMember(t, env.Client, member.Config, registration.Registration{Name: name, Namespace: controlPlane, Server: server, Labels: map[string]string{"env": "copies"}})
}

// put creates a ConfigMap of the control plane, or replaces its data (another test of the
// package may have created it).
func put(t *testing.T, name string, data map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: controlPlane, Name: name}, Data: data}
	err := env.Client.Create(ctx, cm)
	if apierrors.IsAlreadyExists(err) {
		err = env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)
		if err == nil {
			cm.Data = data
			err = env.Client.Update(ctx, cm)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// copiesReady waits until the Workload is Ready with every copy ready (Succeeded), each plan of
// want on its cluster, serving the members' Deployments meanwhile; it returns the plans.
func copiesReady(t *testing.T, ns, name string, want map[string]string, members ...*testenv.Env) map[string]*scorev1b1.WorkloadPlan {
	t.Helper()
	plans := map[string]*scorev1b1.WorkloadPlan{}
	testenv.Eventually(t, 3*time.Minute, fmt.Sprintf("%s Ready with its copies on %v", name, want), func() error {
		if err := serve(ns, members...); err != nil {
			return err
		}
		for plan, cluster := range want {
			p := &scorev1b1.WorkloadPlan{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: plan}, p); err != nil {
				return err
			}
			if p.Spec.Cluster != cluster {
				return fmt.Errorf("plan %s is on cluster %q", plan, p.Spec.Cluster)
			}
			plans[plan] = p
		}
		w := &scorev1b1.Workload{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
			return err
		}
		if c := testenv.Condition(w, scorev1b1.ConditionReady); c.Status != metav1.ConditionTrue || c.Reason != string(scorev1b1.ReasonSucceeded) {
			return fmt.Errorf("ready %s: %s %s", c.Status, c.Reason, c.Message)
		}
		return nil
	})
	return plans
}

// Copies fail over one by one: a Workload with a copy on ca and one on cb (clusters: 2, Ordered,
// of three members) loses ca; once ca has been silent for failover.after, ca's copy (the
// Workload's own plan, web) moves to cc with Placed and FailedOver on its plan, its dependency
// provisioned anew there, and cb's copy (web.1) is not written: its plan keeps its generation,
// its Deployment its UID. ca answering again is cleared of the moved copy's objects, and
// nothing moves back.
func TestSeveralClustersFailoverOfASilentMember(t *testing.T) {
	memberA, memberB, memberC := testenv.StartForTest(t), testenv.StartForTest(t), testenv.StartForTest(t)
	darkA, serverA := newProxy(t, memberA.Config.Host)
	_, serverB := newProxy(t, memberB.Config.Host)
	_, serverC := newProxy(t, memberC.Config.Host)
	registerCopies(t, "ca", serverA, memberA)
	registerCopies(t, "cb", serverB, memberB)
	registerCopies(t, "cc", serverC, memberC)
	text, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "templates", "web-service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	put(t, "templates", map[string]string{"web.yaml": string(text)})
	put(t, "orchestrator-config", map[string]string{"config.yaml": config(testenv.Digest(text))})
	stop, err := inprocess.Start(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	answering(t, "ca", true)
	answering(t, "cb", true)
	upC := answering(t, "cc", true)

	ns := testenv.Namespace(t, env.Client)
	web := testenv.Workload(ns, "web", testenv.WithPort("http", 80), testenv.WithResource("cache", "kv-delete"), testenv.WithVar("CACHE", "${resources.cache.host}"))
	web.Labels = map[string]string{"copies": "yes"}
	testenv.Create(t, env.Client, web)
	before := copiesReady(t, ns, "web", map[string]string{"web": "ca", "web.1": "cb"}, memberA, memberB)
	onB := uids(t, memberB, &appsv1.DeploymentList{}, client.InNamespace(ns))
	kvOnB := uids(t, memberB, &corev1.ConfigMapList{}, client.InNamespace(ns), client.HasLabels{"kv"})
	if len(onB) != 1 || len(kvOnB) != 1 || on(t, memberC, &appsv1.DeploymentList{}, client.InNamespace(ns)) != 0 {
		t.Fatalf("on cb: deployments %v, instances %v; want one each, and nothing on cc", onB, kvOnB)
	}

	// cc is a failover target once it has answered for the hold-down.
	testenv.Eventually(t, time.Minute, "cc answering for the hold-down", func() error {
		if time.Until(upC.Add(holdDown)) > 0 {
			return fmt.Errorf("cc has answered for %s", time.Since(upC).Round(time.Second))
		}
		return nil
	})
	darkA.SetDark(true)
	lost := answering(t, "ca", false)
	after1 := copiesReady(t, ns, "web", map[string]string{"web": "cc", "web.1": "cb"}, memberB, memberC)
	e := failedOver(t, ns, "web", "ca", "cc")
	if moved := e.EventTime.Sub(lost); moved < after {
		t.Fatalf("failed over %s after ca stopped answering, before failover.after (%s)", moved, after)
	}
	t.Logf("ca's copy failed over %s after ca stopped answering (failover.after %s)", e.EventTime.Sub(lost), after)
	if n := len(events(t, ns, "WorkloadPlan", "web", "Placed")); n != 1 {
		t.Fatalf("%d Placed events on web", n)
	}
	if n := on(t, memberC, &appsv1.DeploymentList{}, client.InNamespace(ns)) + on(t, memberC, &corev1.ConfigMapList{}, client.InNamespace(ns), client.HasLabels{"kv"}); n != 2 {
		t.Fatalf("%d deployments and instances on cc, want the copy's Deployment and a new instance", n)
	}
	// cb's copy: not written, nothing on cb touched.
	if g, was := after1["web.1"].Generation, before["web.1"].Generation; g != was {
		t.Fatalf("web.1's plan: generation %d, was %d", g, was)
	}
	for _, reason := range []string{"Placed", "FailedOver"} {
		if n := len(events(t, ns, "WorkloadPlan", "web.1", reason)); n != 0 {
			t.Fatalf("%d %s events on web.1", n, reason)
		}
	}
	if got := uids(t, memberB, &appsv1.DeploymentList{}, client.InNamespace(ns)); !sameUIDs(got, onB) {
		t.Fatalf("deployments on cb: %v, were %v", got, onB)
	}
	if got := uids(t, memberB, &corev1.ConfigMapList{}, client.InNamespace(ns), client.HasLabels{"kv"}); !sameUIDs(got, kvOnB) {
		t.Fatalf("instances on cb: %v, were %v", got, kvOnB)
	}

	// ca answers again: the moved copy's objects there are deleted; nothing moves back.
	darkA.SetDark(false)
	answering(t, "ca", true)
	testenv.Eventually(t, time.Minute, "the moved copy's objects deleted from ca", func() error {
		if n := on(t, memberA, &appsv1.DeploymentList{}, client.InNamespace(ns)); n > 0 {
			return fmt.Errorf("%d deployments on ca", n)
		}
		p := &scorev1b1.WorkloadPlan{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, p); err != nil {
			return err
		}
		if got := clusters.Of(p.Status.Objects); len(got) != 1 || got[0] != "cc" {
			return fmt.Errorf("web's plan holds objects on %v", got)
		}
		return nil
	})
	testenv.RequestReconcile(t, env.Client, ns, "web")
	copiesReady(t, ns, "web", map[string]string{"web": "cc", "web.1": "cb"}, memberB, memberC)
}
