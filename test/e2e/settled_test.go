package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// The controllers' reconcilers, as controller-runtime's metrics name them (configrollout: the
// rollout's, whose one request is the fleet).
var reconcilers = []string{"workload", "resourceclaim", "workloadplan", "configrollout"}

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
	want := map[string]int{"workload": len(workloads.Items), "resourceclaim": len(claims.Items), "workloadplan": len(plans.Items), "configrollout": 1}
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

// waitSettled waits until nothing in the cluster is still on its way, so that a restart can be
// expected to write nothing: every Workload has a status for its generation; a Ready one has its
// claims Bound, its plan Projected and healthy and every endpoint it publishes reachable; one
// that is not Ready is refused (a failed dependency or input, an object another Workload owns)
// or waits for another Workload that will not come (the corpus apps leave both).
func waitSettled(t *testing.T) {
	t.Helper()
	testenv.Eventually(t, time.Minute, "everything settled", func() error {
		var workloads scorev1b1.WorkloadList
		if err := c.List(ctx, &workloads); err != nil {
			return err
		}
		for i := range workloads.Items {
			if err := settled(&workloads.Items[i]); err != nil {
				return fmt.Errorf("%s/%s: %w", workloads.Items[i].Namespace, workloads.Items[i].Name, err)
			}
		}
		return nil
	})
}

func settled(w *scorev1b1.Workload) error {
	ready := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
	if ready == nil || ready.ObservedGeneration != w.Generation || !w.DeletionTimestamp.IsZero() {
		return fmt.Errorf("no status for its generation yet")
	}
	var claims scorev1b1.ResourceClaimList
	if err := c.List(ctx, &claims, client.InNamespace(w.Namespace), client.MatchingLabels{scorev1b1.LabelWorkload: w.Name}); err != nil {
		return err
	}
	if ready.Status != metav1.ConditionTrue {
		switch scorev1b1.Reason(ready.Reason) {
		case scorev1b1.ReasonClaimFailed, scorev1b1.ReasonSpecInvalid, scorev1b1.ReasonPolicyViolation, scorev1b1.ReasonPermissionDenied, scorev1b1.ReasonQuotaExceeded:
			return nil // refused: it stays so until its input or the platform changes
		}
		for _, cl := range claims.Items {
			if strings.HasPrefix(cl.Status.Message, "Waiting for workload") {
				return nil
			}
		}
		return fmt.Errorf("%s: %s", ready.Reason, ready.Message)
	}
	for _, cl := range claims.Items {
		if cl.Status.Phase != scorev1b1.ClaimPhaseBound {
			return fmt.Errorf("claim %s %s", cl.Name, cl.Status.Phase)
		}
	}
	p := &scorev1b1.WorkloadPlan{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), p); err != nil {
		return err
	}
	if healthy := meta.FindStatusCondition(p.Status.Conditions, scorev1b1.PlanConditionHealthy); p.Status.Phase != scorev1b1.PlanPhaseProjected || healthy == nil || healthy.Status != metav1.ConditionTrue {
		return fmt.Errorf("plan %s", p.Status.Phase)
	}
	e := &scorev1b1.WorkloadExposure{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), e); err != nil {
		return err
	}
	for _, x := range e.Status.Exposures {
		if x.Reachable == nil || !*x.Reachable {
			return fmt.Errorf("%s not reachable yet", x.URL)
		}
	}
	return nil
}
