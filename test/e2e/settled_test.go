package e2e

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testenv"
)

// The controllers' reconcilers, as controller-runtime's metrics name them.
var reconcilers = []string{"workload", "resourceclaim", "workloadplan"}

// reconciled sums controller_runtime_reconcile_total per controller over this process's life
// (every manager of the process shares the registry).
func reconciled(t *testing.T) map[string]float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// waitFullPass waits until each controller has completed at least one pass over every object it
// serves since since (a snapshot of reconciled): a restarted controller reconciles everything
// once, and only after that does "it wrote nothing" say anything.
func waitFullPass(t *testing.T, since map[string]float64) {
	t.Helper()
	var workloads scorev1b1.WorkloadList
	var claims scorev1b1.ResourceClaimList
	var plans scorev1b1.WorkloadPlanList
	for _, l := range []client.ObjectList{&workloads, &claims, &plans} {
		if err := c.List(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int{"workload": len(workloads.Items), "resourceclaim": len(claims.Items), "workloadplan": len(plans.Items)}
	testenv.Eventually(t, time.Minute, "every controller through every object once", func() error {
		now := reconciled(t)
		for _, name := range reconcilers {
			if done := int(now[name] - since[name]); done < want[name] {
				return fmt.Errorf("%s: %d of %d objects reconciled", name, done, want[name])
			}
		}
		return nil
	})
}

// waitSettled waits until nothing in ns is still on its way: every Workload Ready for its
// generation, every plan Projected and healthy, every claim Bound, every published endpoint
// reachable. Only then can a restart be expected to write nothing.
func waitSettled(t *testing.T, ns string) {
	t.Helper()
	testenv.Eventually(t, time.Minute, "everything in "+ns+" settled", func() error {
		var workloads scorev1b1.WorkloadList
		if err := c.List(ctx, &workloads, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, w := range workloads.Items {
			if ready := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady); ready == nil || ready.Status != metav1.ConditionTrue || w.Status.ObservedGeneration != w.Generation {
				return fmt.Errorf("workload %s not Ready", w.Name)
			}
		}
		var plans scorev1b1.WorkloadPlanList
		if err := c.List(ctx, &plans, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, p := range plans.Items {
			if healthy := meta.FindStatusCondition(p.Status.Conditions, scorev1b1.PlanConditionHealthy); p.Status.Phase != scorev1b1.PlanPhaseProjected || healthy == nil || healthy.Status != metav1.ConditionTrue {
				return fmt.Errorf("plan %s %s", p.Name, p.Status.Phase)
			}
		}
		var claims scorev1b1.ResourceClaimList
		if err := c.List(ctx, &claims, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, cl := range claims.Items {
			if cl.Status.Phase != scorev1b1.ClaimPhaseBound {
				return fmt.Errorf("claim %s %s", cl.Name, cl.Status.Phase)
			}
		}
		var exposures scorev1b1.WorkloadExposureList
		if err := c.List(ctx, &exposures, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range exposures.Items {
			for _, x := range e.Status.Exposures {
				if x.Reachable == nil || !*x.Reachable {
					return fmt.Errorf("exposure %s: %s not reachable yet", e.Name, x.URL)
				}
			}
		}
		return nil
	})
}
