package orchestrator

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/shard"
	"github.com/score-orchestrator/score-orchestrator/internal/status/workloaddecision"
)

// childLabels are the labels of the claims, plan and exposure created for w: its name, and
// its shard, so that they follow it.
func childLabels(w *scorev1b1.Workload) map[string]string {
	l, _ := shard.Follow(map[string]string{scorev1b1.LabelWorkload: w.Name}, w.Labels)
	return l
}

// handOver hands the Workload's objects to its shard: each observed object the decision names
// gets its new labels, in order, in place (the pass's later writes start from the version this
// one produced). Nothing is recreated: the same objects change hands, and the new shard's
// provisioner and runtime find them applied.
func (r *Reconciler) handOver(ctx context.Context, s *scope, relabel []workloaddecision.Relabel) error {
	for _, rl := range relabel {
		var o client.Object = rl.Object
		before := o.DeepCopyObject().(client.Object)
		o.SetLabels(rl.Labels)
		ctrl.LoggerFrom(ctx).Info("Handing an object to the Workload's shard", "kind", fmt.Sprintf("%T", o), "name", o.GetName(), "shard", s.Workload.Labels[scorev1b1.LabelShard])
		if err := r.Client.Patch(ctx, o, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("handing %s to the Workload's shard: %w", o.GetName(), err)
		}
	}
	return nil
}
