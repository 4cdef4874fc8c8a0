package rollout

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// TestReadyThroughARolloutOfADependency: a config
// rollout that changes the provisioner definition of a Ready Workload's dependency moves its
// claim to the new revision (a new spec, a new generation) and then writes its plan again (the
// revision it is rendered from). What the Workload runs keeps serving meanwhile — the
// instance keeps its outputs until the provisioner has applied the new definition, the
// runtime's previous version until it has applied the new plan — so the Workload stays Ready
// throughout, and says nothing: no ClaimPending, then RuntimeProvisioning, then Ready again
// (a status and an event each) for a Workload that never stopped serving.
func TestReadyThroughARolloutOfADependency(t *testing.T) {
	const steady = "steady"
	testenv.Create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: steady}})
	w := testenv.Workload(steady, "app", testenv.WithPort("http", 80), testenv.WithVar("CACHE_HOST", "${resources.cache.host}"),
		testenv.WithResource("cache", "redis"))
	testenv.Create(t, c, w)
	key := client.ObjectKeyFromObject(w)
	// Ready, and no rollout under way: the change below is the only one.
	before := latestRollout(t, "", "completed", 3*time.Minute, phase(scorev1b1.RolloutCompleted))
	start := &scorev1b1.Workload{}
	testenv.Eventually(t, 3*time.Minute, "app Ready", func() error {
		if err := c.Get(ctx, key, start); err != nil {
			return err
		}
		if r := meta.FindStatusCondition(start.Status.Conditions, scorev1b1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue || r.ObservedGeneration != start.Generation {
			return fmt.Errorf("not Ready: %+v", r)
		}
		return nil
	})
	claim := cacheClaim(t, steady)
	plan := &scorev1b1.WorkloadPlan{}
	if err := c.Get(ctx, key, plan); err != nil {
		t.Fatal(err)
	}
	if claim.Spec.ConfigRevision != before.Spec.To || plan.Spec.ConfigRevision != before.Spec.To {
		t.Fatalf("claim from %s, plan from %s; want the fleet's %s", claim.Spec.ConfigRevision, plan.Spec.ConfigRevision, before.Spec.To)
	}

	// Everything the Workload says from here on.
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	workloads, err := wc.Watch(ctx, &scorev1b1.WorkloadList{}, client.InNamespace(steady))
	if err != nil {
		t.Fatal(err)
	}
	defer workloads.Stop()
	events := workloadEvents(t, steady)

	// The platform changes the redis definition (a label on its Service): a rollout takes it
	// to the Workload's claim.
	editConfig(t, func(doc map[string]any) {
		redis := provisionerDef(doc, "template://score-dev/redis")
		m := redis["manifests"].(string)
		at := strings.Index(m, "kind: Service")
		at += strings.Index(m[at:], "labels: {") + len("labels: {")
		redis["manifests"] = m[:at] + "steady: through, " + m[at:]
	})
	done := latestRollout(t, before.Name, "completed", 3*time.Minute, phase(scorev1b1.RolloutCompleted))

	// The positive control: the claim was provisioned again from the new revision, and the
	// plan written again from it.
	testenv.Eventually(t, time.Minute, "the claim provisioned from the new revision, the plan rendered from it", func() error {
		cl := cacheClaim(t, steady)
		if cl.Spec.ConfigRevision != done.Spec.To || cl.Status.ConfigRevision != done.Spec.To || cl.Status.ObservedGeneration != cl.Generation || cl.Status.Phase != scorev1b1.ClaimPhaseBound {
			return fmt.Errorf("claim names %.19s, provisioned from %.19s, %s (generation %d, observed %d)", cl.Spec.ConfigRevision, cl.Status.ConfigRevision, cl.Status.Phase, cl.Generation, cl.Status.ObservedGeneration)
		}
		p := &scorev1b1.WorkloadPlan{}
		if err := c.Get(ctx, key, p); err != nil {
			return err
		}
		if p.Spec.ConfigRevision != done.Spec.To || p.Generation == plan.Generation || p.Status.ObservedGeneration != p.Generation || p.Status.Phase != scorev1b1.PlanPhaseProjected {
			return fmt.Errorf("plan from %.19s, %s (generation %d, observed %d)", p.Spec.ConfigRevision, p.Status.Phase, p.Generation, p.Status.ObservedGeneration)
		}
		return nil
	})
	final := &scorev1b1.Workload{}
	testenv.Eventually(t, time.Minute, "app Ready after the rollout, its dependency Bound", func() error {
		if err := c.Get(ctx, key, final); err != nil {
			return err
		}
		if cc := meta.FindStatusCondition(final.Status.Conditions, scorev1b1.ConditionClaimsReady); cc == nil || cc.Message != "All dependencies are ready." {
			return fmt.Errorf("claims ready %+v", cc)
		}
		if r := meta.FindStatusCondition(final.Status.Conditions, scorev1b1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue {
			return fmt.Errorf("not Ready: %+v", r)
		}
		return nil
	})

	// What the Workload said meanwhile, up to that version: Ready every time.
	seen := testenv.ReadyThroughout(t, workloads, start.ResourceVersion, final.ResourceVersion, "the rollout went through")
	t.Logf("the Workload's Ready through the rollout: %v", seen)
	if n := workloadEvents(t, steady); n != events {
		t.Errorf("%d events on the Workload during the rollout; want none", n-events)
	}
}

// cacheClaim is the namespace's one redis claim.
func cacheClaim(t *testing.T, namespace string) *scorev1b1.ResourceClaim {
	t.Helper()
	var list scorev1b1.ResourceClaimList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("%d claims in %s, want 1", len(list.Items), namespace)
	}
	return &list.Items[0]
}

// workloadEvents counts the events regarding a Workload of the namespace.
func workloadEvents(t *testing.T, namespace string) int {
	t.Helper()
	var list eventsv1.EventList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.Regarding.Kind == "Workload" {
			n++
		}
	}
	return n
}
