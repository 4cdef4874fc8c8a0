package blackhole

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/members"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/registration"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// register registers a member as `scorectl cluster add` does, reached at server ("": its own
// address).
func register(t *testing.T, name, server string, member *testenv.Env) {
	t.Helper()
	testenv.RegisterMember(t, env.Client, member.Config, registration.Registration{Name: name, Namespace: controlPlane, Server: server})
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: controlPlane, Name: name}})
	})
}

// reachable says whether the runtime publishes cluster as answering.
func reachable(name string) (bool, error) {
	st, err := published(name)
	return st.Reachable, err
}

// published is what the runtime publishes of cluster.
func published(name string) (clusters.Status, error) {
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: controlPlane, Name: clusters.StatusConfigMap}, cm); err != nil {
		return clusters.Status{}, err
	}
	st, ok := clusters.Decode(cm)[name]
	if !ok {
		return clusters.Status{}, fmt.Errorf("cluster %s not published", name)
	}
	return st, nil
}

// namespace is a hub namespace for a test's plans, with the web-service template.
func namespace(t *testing.T) string {
	t.Helper()
	text, err := os.ReadFile("../../../config/templates/web-service.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, env.Client)
	testenv.Create(t, env.Client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "templates"}, Data: map[string]string{"web.yaml": string(text)}})
	return ns
}

// place creates a Workload's plan (and its exposure) placed on cluster, its container
// running image.
func place(t *testing.T, ns, name, cluster, image string) *scorev1b1.WorkloadPlan {
	t.Helper()
	text, err := os.ReadFile("../../../config/templates/web-service.yaml")
	if err != nil {
		t.Fatal(err)
	}
	uid := ns + "-" + name
	p := &scorev1b1.WorkloadPlan{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: scorev1b1.WorkloadPlanSpec{
			WorkloadRef: scorev1b1.LocalWorkloadRef{Name: name, UID: uid}, ObservedWorkloadGeneration: 1,
			RuntimeClass: "kubernetes", BackendID: "k8s-web", Cluster: cluster,
			Template:   scorev1b1.TemplateRef{Kind: scorev1b1.TemplateManifests, Ref: "configmap://" + ns + "/templates/web.yaml", Digest: testenv.Digest(text)},
			Values:     values(image),
			Projection: scorev1b1.Projection{Containers: []scorev1b1.ContainerProjection{{Name: "main"}}},
		}}
	testenv.Create(t, env.Client, p, &scorev1b1.WorkloadExposure{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: scorev1b1.WorkloadExposureSpec{WorkloadRef: scorev1b1.WorkloadRef{Name: name, Namespace: ns, UID: uid}, RuntimeClass: "kubernetes", ObservedWorkloadGeneration: 1}})
	return p
}

// run changes the plan's container to run image.
func run(t *testing.T, p *scorev1b1.WorkloadPlan, image string) {
	t.Helper()
	current := &scorev1b1.WorkloadPlan{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), current); err != nil {
		t.Fatal(err)
	}
	current.Spec.Values = values(image)
	if err := env.Client.Update(ctx, current); err != nil {
		t.Fatal(err)
	}
}

func values(image string) *apiextensionsv1.JSON {
	return &apiextensionsv1.JSON{Raw: []byte(`{"containers":{"main":{"image":"` + image + `"}},"service":{"ports":{"http":{"port":80,"targetPort":8080,"protocol":"TCP"}}}}`)}
}

// applied says whether the plan's current generation is applied on its cluster, whose
// client is member, with image: its Deployment's UID.
func applied(p *scorev1b1.WorkloadPlan, member client.Client, image string) (types.UID, error) {
	current := &scorev1b1.WorkloadPlan{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), current); err != nil {
		return "", err
	}
	c := meta.FindStatusCondition(current.Status.Conditions, scorev1b1.PlanConditionApplied)
	if c == nil || c.Status != metav1.ConditionTrue || current.Status.ObservedGeneration != current.Generation {
		return "", fmt.Errorf("plan %s/%s not applied: %+v (generation %d, observed %d)", p.Namespace, p.Name, c, current.Generation, current.Status.ObservedGeneration)
	}
	d := &appsv1.Deployment{}
	if err := member.Get(ctx, client.ObjectKeyFromObject(p), d); err != nil {
		return "", err
	}
	if got := d.Spec.Template.Spec.Containers[0].Image; got != image {
		return "", fmt.Errorf("deployment %s/%s runs %s, want %s", p.Namespace, p.Name, got, image)
	}
	return d.UID, nil
}

// unreachable says whether the plan reports its cluster not answering, its inventory kept.
func unreachable(p *scorev1b1.WorkloadPlan) error {
	current := &scorev1b1.WorkloadPlan{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), current); err != nil {
		return err
	}
	c := meta.FindStatusCondition(current.Status.Conditions, scorev1b1.PlanConditionApplied)
	if c == nil || c.Reason != scorev1b1.PlanReasonClusterUnreachable || current.Status.Reason != scorev1b1.ReasonNetworkUnavailable {
		return fmt.Errorf("plan %s/%s: %+v, %s", p.Namespace, p.Name, c, current.Status.Reason)
	}
	if len(current.Status.Objects) != 2 {
		return fmt.Errorf("plan %s/%s lost its inventory: %+v", p.Namespace, p.Name, current.Status.Objects)
	}
	return nil
}

// deployments counts the Deployments of ours in a namespace of a member.
func deployments(t *testing.T, member client.Client, ns string) int {
	t.Helper()
	var list appsv1.DeploymentList
	if err := member.List(ctx, &list, client.InNamespace(ns), client.HasLabels{scorev1b1.LabelWorkload}); err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// A member whose network drops packets (member B behind a proxy that goes dark: it accepts and
// reads, forwards nothing, closes nothing) costs the other member nothing. With B dark and its
// Workloads changed — passes that go to B — Workloads roll out to member A, new namespaces
// there included, on a runtime of two workers, while B's connections are still held and long
// before any request to B could time out (ten minutes here): the probe's verdict ends what was
// in flight to B, and no worker contacts B after it. B's Workloads say their cluster does not
// answer and keep their inventory; lit again, B's Workloads are brought back by the probe and
// applied — the same objects, updated in place, none twice — and nothing was deleted on A or B.
func TestBlackholedMemberCostsTheOthersNothing(t *testing.T) {
	memberA, memberB := testenv.StartForTest(t), testenv.StartForTest(t)
	dark, server := newProxy(t, memberB.Config.Host)
	register(t, "a", "", memberA)
	register(t, "b", server, memberB)
	testenv.Eventually(t, time.Minute, "both members answer the runtime's probe", func() error {
		for _, name := range []string{"a", "b"} {
			if ok, err := reachable(name); err != nil || !ok {
				return fmt.Errorf("cluster %s reachable %v: %v", name, ok, err)
			}
		}
		return nil
	})

	// Workloads on both: one on A, three on B.
	nsA, nsB := namespace(t), namespace(t)
	onA := []*scorev1b1.WorkloadPlan{place(t, nsA, "web", "a", "nginx")}
	var onB []*scorev1b1.WorkloadPlan
	for i := range 3 {
		onB = append(onB, place(t, nsB, fmt.Sprintf("web-%d", i), "b", "nginx"))
	}
	uids := map[string]types.UID{}
	testenv.Eventually(t, time.Minute, "every Workload applied on its member", func() error {
		for _, p := range onA {
			uid, err := applied(p, memberA.Client, "nginx")
			if err != nil {
				return err
			}
			uids[p.Namespace+"/"+p.Name] = uid
		}
		for _, p := range onB {
			uid, err := applied(p, memberB.Client, "nginx")
			if err != nil {
				return err
			}
			uids[p.Namespace+"/"+p.Name] = uid
		}
		return nil
	})

	// B goes dark; its Workloads change, so the runtime's passes go to B.
	dark.SetDark(true)
	darkened := time.Now()
	for _, p := range onB {
		run(t, p, "nginx:2")
	}
	// Meanwhile new Workloads roll out to A, each in a namespace new there, and one to B in
	// a namespace new there.
	for range 6 {
		onA = append(onA, place(t, namespace(t), "web", "a", "nginx"))
	}
	later := place(t, namespace(t), "web", "b", "nginx:2")
	// The A side waits on no request to B: it is done while the connections to B are still
	// held, before the client gives up on any of them — no request to B timed out (ten
	// minutes here) and HTTP/2's health check (a ping after 30 s without a frame, the
	// connection closed 15 s later) has not closed one.
	testenv.Eventually(t, 2*time.Minute, "every Workload on A applied while B is dark", func() error {
		for _, p := range onA {
			if _, err := applied(p, memberA.Client, "nginx"); err != nil {
				return err
			}
		}
		return nil
	})
	t.Logf("the Workloads on A applied %s after B went dark; %d connections held, %d given up on", time.Since(darkened).Round(time.Millisecond), dark.Holding(), dark.AbandonedWhileDark())
	if n := dark.AbandonedWhileDark(); n > 0 {
		t.Fatalf("the Workloads on A waited until %d connections to B were given up on", n)
	}
	if held := dark.Holding(); held == 0 {
		t.Fatal("nothing was sent to B while it was dark: the test did not test a silent member")
	}
	testenv.Eventually(t, time.Minute, "B's Workloads say their cluster does not answer, their inventory kept", func() error {
		if ok, err := reachable("b"); err != nil || ok {
			return fmt.Errorf("cluster b published reachable %v: %v", ok, err)
		}
		for _, p := range onB {
			if err := unreachable(p); err != nil {
				return err
			}
		}
		current := &scorev1b1.WorkloadPlan{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(later), current); err != nil {
			return err
		}
		if current.Status.Reason != scorev1b1.ReasonNetworkUnavailable {
			return fmt.Errorf("the Workload placed on B while dark: %s %s", current.Status.Reason, current.Status.Message)
		}
		return nil
	})
	if ok, err := reachable("a"); err != nil || !ok {
		t.Fatalf("cluster a published reachable %v while b is dark: %v", ok, err)
	}

	// B lit again: its Workloads are brought back by the probe and updated in place, the one
	// placed meanwhile applied in its new namespace there.
	dark.SetDark(false)
	testenv.Eventually(t, time.Minute, "B's Workloads applied again once it answers", func() error {
		if _, err := applied(later, memberB.Client, "nginx:2"); err != nil {
			return err
		}
		for _, p := range onB {
			uid, err := applied(p, memberB.Client, "nginx:2")
			if err != nil {
				return err
			}
			if want := uids[p.Namespace+"/"+p.Name]; uid != want {
				return fmt.Errorf("deployment %s/%s was replaced: uid %s, was %s", p.Namespace, p.Name, uid, want)
			}
		}
		return nil
	})
	if n := deployments(t, memberB.Client, nsB); n != len(onB) {
		t.Fatalf("%d deployments of ours in %s on B, want %d", n, nsB, len(onB))
	}
	for _, p := range onA {
		uid, err := applied(p, memberA.Client, "nginx")
		if err != nil {
			t.Fatal(err)
		}
		if want, ok := uids[p.Namespace+"/"+p.Name]; ok && uid != want {
			t.Fatalf("deployment %s/%s on A was replaced", p.Namespace, p.Name)
		}
		if n := deployments(t, memberA.Client, p.Namespace); n != 1 {
			t.Fatalf("%d deployments of ours in %s on A, want 1", n, p.Namespace)
		}
		if n := deployments(t, memberB.Client, p.Namespace); n != 0 {
			t.Fatalf("%d deployments of A's Workload %s on B", n, p.Namespace)
		}
	}

	// The watches of a namespace new on A, synced off the workers, bring its plan back: a
	// Deployment deleted there is recreated.
	last := onA[len(onA)-1]
	gone, err := applied(last, memberA.Client, "nginx")
	if err != nil {
		t.Fatal(err)
	}
	if err := memberA.Client.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: last.Namespace, Name: last.Name}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the deleted Deployment recreated on A", func() error {
		uid, err := applied(last, memberA.Client, "nginx")
		if err == nil && uid == gone {
			return fmt.Errorf("not recreated yet")
		}
		return err
	})
}

// A member whose API server answers its probe but not its requests — its etcd stopped: the
// version is served, no read or write that reaches storage is — is let back in after more
// answered probes each time its requests fail again (1, 2, 4, ...), not by every probe: the
// runtime publishes it as not answering, saying why and how many probes it waits for.
func TestMemberAnsweringOnlyItsProbeIsHeldBack(t *testing.T) {
	// Requests to this member give up after 3 s (the package's ten minutes are for the
	// black hole): each time it is let back in, the next apply costs that much.
	timeout := members.RequestTimeout
	members.RequestTimeout = 3 * time.Second
	t.Cleanup(func() { members.RequestTimeout = timeout })
	member := testenv.StartForTest(t)
	register(t, "half", "", member)
	testenv.Eventually(t, time.Minute, "the member answers the runtime's probe", func() error {
		if ok, err := reachable("half"); err != nil || !ok {
			return fmt.Errorf("reachable %v: %v", ok, err)
		}
		return nil
	})
	p := place(t, namespace(t), "web", "half", "nginx")
	testenv.Eventually(t, time.Minute, "the plan applied on the member", func() error {
		_, err := applied(p, member.Client, "nginx")
		return err
	})

	if err := member.StopEtcd(); err != nil {
		t.Fatal(err)
	}
	run(t, p, "nginx:2")
	// The apply gets no answer (a suspicion), the next probe answers and lets it back in
	// (one probe after the first suspicion), the apply again gets none: from the second
	// suspicion on, it waits for 2, then 4 probes answered in a row, published as such.
	for _, want := range []string{"after 2 answered probes in a row", "after 4 answered probes in a row"} {
		testenv.Eventually(t, time.Minute, "published as held back "+want, func() error {
			st, err := published("half")
			if err != nil {
				return err
			}
			if st.Reachable || !strings.Contains(st.Message, "It answers its probe, but not the requests") || !strings.Contains(st.Message, want) {
				return fmt.Errorf("%+v", st)
			}
			return nil
		})
	}
	if err := unreachable(p); err != nil {
		t.Fatal(err)
	}
}
