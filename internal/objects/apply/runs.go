package apply

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/runnable"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/inventory"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/prepare"
)

// KeepRuns keeps a run's history. A run is an immutable object named after its inputs and
// labelled scorev1b1.LabelRunOf (a batch Job of the runtime, a build of the provisioner):
// the earlier runs with the same label that belong to the marks' owner stay, up to limit (the
// current run included; 0 is runnable.DefaultHistoryLimit), and older ones are deleted. It
// returns the kept earlier runs as inventory entries, Current: they are history.
func (a *Applier) KeepRuns(ctx context.Context, run *unstructured.Unstructured, limit int, marks prepare.Marks) ([]scorev1b1.AppliedObject, error) {
	of := run.GetLabels()[scorev1b1.LabelRunOf]
	if of == "" {
		return nil, nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(run.GroupVersionKind().GroupVersion().WithKind(run.GetKind() + "List"))
	if err := a.Client.List(ctx, list, client.InNamespace(run.GetNamespace()), client.MatchingLabels{scorev1b1.LabelRunOf: of}); err != nil {
		return nil, fmt.Errorf("listing the earlier runs: %w", err)
	}
	runs := make([]*unstructured.Unstructured, 0, len(list.Items))
	for i := range list.Items {
		if marks.Ours(&list.Items[i]) {
			runs = append(runs, &list.Items[i])
		}
	}
	dropped := map[string]bool{}
	for _, old := range runnable.Collect(runs, run.GetName(), limit) {
		if _, err := a.Delete(ctx, inventory.Applied(old, "", "")); err != nil {
			return nil, fmt.Errorf("deleting the earlier run: %w", err)
		}
		dropped[old.GetName()] = true
	}
	var history []scorev1b1.AppliedObject
	for _, old := range runs {
		if old.GetName() != run.GetName() && !dropped[old.GetName()] {
			history = append(history, inventory.Applied(old, scorev1b1.HealthCurrent, "An earlier run, kept as history."))
		}
	}
	return history, nil
}
