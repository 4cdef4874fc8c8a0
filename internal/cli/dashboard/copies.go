package dashboard

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/dashboardview"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
)

// copies reads, with the reader's rights, the plans and exposures of the Workload's other
// copies on several clusters (NAME.N, labelled with the Workload, of its UID), by slot; a
// reader who may not list them sees none.
func (s *Server) copies(ctx context.Context, w *scorev1b1.Workload, in *dashboardview.GraphInput) error {
	bySlot := map[int]*dashboardview.Copy{}
	at := func(slot int) *dashboardview.Copy {
		if bySlot[slot] == nil {
			bySlot[slot] = &dashboardview.Copy{}
		}
		return bySlot[slot]
	}
	of := client.MatchingLabels{scorev1b1.LabelWorkload: w.Name}
	if !in.PlanHidden {
		var plans scorev1b1.WorkloadPlanList
		if err := s.reader("workloadplans", w.Namespace).List(ctx, &plans, client.InNamespace(w.Namespace), of); client.IgnoreNotFound(err) != nil && !apierrors.IsForbidden(err) {
			return err
		}
		for i := range plans.Items {
			p := &plans.Items[i]
			if slot, ok := planner.CopySlot(w.Name, p.Name); ok && slot > 0 && p.Spec.WorkloadRef.UID == string(w.UID) {
				at(slot).Plan = p
			}
		}
	}
	if !in.ExposureHidden {
		var exposures scorev1b1.WorkloadExposureList
		if err := s.reader("workloadexposures", w.Namespace).List(ctx, &exposures, client.InNamespace(w.Namespace), of); client.IgnoreNotFound(err) != nil && !apierrors.IsForbidden(err) {
			return err
		}
		for i := range exposures.Items {
			e := &exposures.Items[i]
			if slot, ok := planner.CopySlot(w.Name, e.Name); ok && slot > 0 && e.Spec.WorkloadRef.UID == string(w.UID) {
				at(slot).Exposure = e
			}
		}
	}
	slots := make([]int, 0, len(bySlot))
	for slot := range bySlot {
		slots = append(slots, slot)
	}
	slices.Sort(slots)
	for _, slot := range slots {
		in.Copies = append(in.Copies, *bySlot[slot])
	}
	return nil
}
