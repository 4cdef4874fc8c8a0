package orchestrator

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/shard"
)

// childLabels are the labels of the claims, plan and exposure created for w: its name, and
// its shard, so that they follow it.
func childLabels(w *scorev1b1.Workload) map[string]string {
	l, _ := shard.Follow(map[string]string{scorev1b1.LabelWorkload: w.Name}, w.Labels)
	return l
}

// followShard hands the Workload's objects to its shard: the exposure, the claims it
// controls and the plan are labelled with the Workload's score.dev/shard (or lose the
// label), in that order, so that the runtime of the new shard finds the exposure when it
// finds the plan. Nothing is recreated: the same objects change hands, and the new shard's
// provisioner and runtime find them applied. Unchanged labels write nothing.
func (r *Reconciler) followShard(ctx context.Context, s *scope) error {
	w := s.workload
	var objs []client.Object
	if s.exposure != nil && s.exposure.Spec.WorkloadRef.UID == string(w.UID) {
		objs = append(objs, s.exposure)
	}
	for _, c := range s.owned() {
		objs = append(objs, c)
	}
	if s.plan != nil {
		objs = append(objs, s.plan)
	}
	for _, o := range objs {
		before := o.DeepCopyObject().(client.Object)
		l, changed := shard.Follow(o.GetLabels(), w.Labels)
		if !changed {
			continue
		}
		o.SetLabels(l)
		ctrl.LoggerFrom(ctx).Info("Handing an object to the Workload's shard", "kind", fmt.Sprintf("%T", o), "name", o.GetName(), "shard", w.Labels[scorev1b1.LabelShard])
		if err := r.Client.Patch(ctx, o, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("handing %s to the Workload's shard: %w", o.GetName(), err)
		}
	}
	return nil
}
