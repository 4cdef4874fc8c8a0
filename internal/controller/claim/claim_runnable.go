package claim

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/health"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioner"
	"github.com/score-orchestrator/score-orchestrator/internal/runnable"
)

// errRunFailed is a run that ended in failure; it is not retried.
var errRunFailed = errors.New("the run failed")

// stampRun is the runnable:// strategy. The definition's one manifest is stamped as a run named
// after its content and created when it does not exist yet: runs are immutable, so a run is
// never changed, an input change makes a new one and an unchanged input never runs again.
// Runs beyond the history limit are deleted. It returns the runs kept (the inventory), each
// with its health (the current run's from its outcome), and, once the current run
// succeeded, the outputs read from it. A failed run is an error naming it.
func (r *Reconciler) stampRun(ctx context.Context, c *scorev1b1.ResourceClaim, def orchconfig.Provisioner, id provisioner.Identity, manifests []map[string]any) (map[string]bool, []scorev1b1.AppliedObject, map[string]any, error) {
	if len(manifests) != 1 {
		return nil, nil, nil, fmt.Errorf("a runnable provisioner renders exactly one run, this one rendered %d objects", len(manifests))
	}
	desired, err := runnable.Stamp(manifests[0], id.Namespace, id.Hash())
	if err != nil {
		return nil, nil, nil, err
	}
	gvk := desired.GroupVersionKind()
	mapping, err := r.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s %s: the kind is not served: %w", desired.GetKind(), desired.GetName(), err)
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return nil, nil, nil, fmt.Errorf("%s %s: a run must be a namespaced object", desired.GetKind(), desired.GetName())
	}
	labels := desired.GetLabels()
	labels[provisioner.LabelInstance] = id.Hash()
	desired.SetLabels(labels)

	r.watcher.Ensure(ctx, gvk)
	current := &unstructured.Unstructured{}
	current.SetGroupVersionKind(gvk)
	switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), current); {
	case apierrors.IsNotFound(err):
		if err := r.Client.Create(ctx, desired, client.FieldOwner(FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, nil, nil, fmt.Errorf("starting run %s %s: %w", desired.GetKind(), desired.GetName(), err)
		}
		current = desired
	case err != nil:
		return nil, nil, nil, err
	}

	history, err := r.collectRuns(ctx, id.Namespace, id, current.GetName(), def.Runnable.HistoryLimit, gvk.GroupVersion().WithKind(gvk.Kind+"List"))
	if err != nil {
		return nil, nil, nil, err
	}
	outcome, message := runnable.Judge(current, runnable.SuccessCondition(def.Runnable.SuccessCondition, gvk.Kind))
	state := map[runnable.Outcome]string{runnable.Succeeded: health.Current, runnable.Running: health.InProgress, runnable.Failed: health.Failed}[outcome]
	keep := map[string]bool{objectKey(current.GetAPIVersion(), current.GetKind(), current.GetNamespace(), current.GetName()): true}
	applied := []scorev1b1.AppliedObject{{APIVersion: current.GetAPIVersion(), Kind: current.GetKind(), Namespace: current.GetNamespace(), Name: current.GetName(), Health: state, Message: message}}
	for _, h := range history {
		keep[objectKey(h.GetAPIVersion(), h.GetKind(), h.GetNamespace(), h.GetName())] = true
		applied = append(applied, scorev1b1.AppliedObject{APIVersion: h.GetAPIVersion(), Kind: h.GetKind(), Namespace: h.GetNamespace(), Name: h.GetName(), Health: health.Current, Message: "An earlier run, kept as history."})
	}

	switch outcome {
	case runnable.Failed:
		return keep, applied, nil, fmt.Errorf("%w: %s %s: %s", errRunFailed, current.GetKind(), current.GetName(), message)
	case runnable.Running:
		return keep, applied, nil, nil
	}
	outputs, err := runnable.Outputs(current, def.Runnable.Outputs)
	if err != nil {
		return keep, applied, nil, err
	}
	return keep, applied, outputs, nil
}

// collectRuns deletes the instance's runs beyond the history limit and returns the earlier
// runs it keeps.
func (r *Reconciler) collectRuns(ctx context.Context, namespace string, id provisioner.Identity, current string, limit int, listGVK schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(listGVK)
	if err := r.Client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{runnable.LabelRunOf: id.Hash()}); err != nil {
		return nil, fmt.Errorf("listing the runs: %w", err)
	}
	runs := make([]*unstructured.Unstructured, 0, len(list.Items))
	for i := range list.Items {
		runs = append(runs, &list.Items[i])
	}
	drop := map[string]bool{}
	for _, old := range runnable.Collect(runs, current, limit) {
		if err := r.Client.Delete(ctx, old, client.PropagationPolicy("Background")); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("deleting the earlier run %s: %w", old.GetName(), err)
		}
		drop[old.GetName()] = true
	}
	var kept []*unstructured.Unstructured
	for _, run := range runs {
		if run.GetName() != current && !drop[run.GetName()] {
			kept = append(kept, run)
		}
	}
	return kept, nil
}
