package orchestrator

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/status/workloaddecision"
)

// A Workload on several clusters: the plans and exposures of its copies beyond slot 0
// (named NAME.N, planner.CopyName), read with the Workload's, and the removal of a copy no
// longer placed (workloaddecision's copies.go decides).

// observeCopies reads, as cached, the plans of the Workload's copies beyond slot 0 that it
// controls and the exposures of their names.
func (r *Reconciler) observeCopies(ctx context.Context, s *scope) error {
	w := s.Workload
	var plans scorev1b1.WorkloadPlanList
	if err := r.Client.List(ctx, &plans, client.InNamespace(w.Namespace), client.MatchingFields{indexWorkload: w.Name}); err != nil {
		return fmt.Errorf("listing the plans: %w", err)
	}
	for i := range plans.Items {
		p := &plans.Items[i]
		if slot, ok := planner.CopySlot(w.Name, p.Name); ok && slot > 0 && metav1.IsControlledBy(p, w) {
			s.Copies.Plans = append(s.Copies.Plans, p)
			r.memory.seen(w.UID, workloaddecision.Ref{Kind: workloaddecision.KindPlan, Name: p.Name})
		}
	}
	var exposures scorev1b1.WorkloadExposureList
	if err := r.Client.List(ctx, &exposures, client.InNamespace(w.Namespace), client.MatchingFields{indexWorkload: w.Name}); err != nil {
		return fmt.Errorf("listing the exposures: %w", err)
	}
	for i := range exposures.Items {
		e := &exposures.Items[i]
		if slot, ok := planner.CopySlot(w.Name, e.Name); ok && slot > 0 {
			s.Copies.Exposures = append(s.Copies.Exposures, e)
			r.memory.seen(w.UID, workloaddecision.Ref{Kind: workloaddecision.KindExposure, Name: e.Name})
		}
	}
	return nil
}

// copyWritten records the outcome of a write to a copy's plan or exposure.
func (s *scope) copyWritten(kind, name string, w *workloaddecision.Written) {
	if s.Copies.Written == nil {
		s.Copies.Written = map[workloaddecision.Ref]*workloaddecision.Written{}
	}
	s.Copies.Written[workloaddecision.Ref{Kind: kind, Name: name}] = w
}

// deleteCopies deletes the plans and exposures of copies no longer placed, in order, and
// records each one's answer; the first error stops it.
func (r *Reconciler) deleteCopies(ctx context.Context, s *scope, objs []workloaddecision.Object) {
	if s.Copies.Deleted == nil {
		s.Copies.Deleted = map[workloaddecision.Ref]error{}
	}
	for _, o := range objs {
		ref := workloaddecision.Ref{Kind: workloaddecision.KindExposure, Name: o.GetName()}
		if _, ok := o.(*scorev1b1.WorkloadPlan); ok {
			ref.Kind = workloaddecision.KindPlan
		}
		ctrl.LoggerFrom(ctx).Info("Removing a copy no longer placed", "kind", ref.Kind, "name", ref.Name)
		err := client.IgnoreNotFound(r.Client.Delete(ctx, o.(client.Object)))
		s.Copies.Deleted[ref] = err
		if err != nil {
			return
		}
	}
}

// claimBase is the name of a claim in the Workload's first copy: a copy's claim is CLAIM.N.
func claimBase(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		if _, ok := planner.CopySlot(name[:i], name); ok {
			return name[:i]
		}
	}
	return name
}
