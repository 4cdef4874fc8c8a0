package runtime

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// withCopies extends a map from an object to the plan named after its Workload with the
// plans of that Workload's other copies on several clusters (NAME.N, labelled with the
// Workload as every plan is): an outputs Secret or an EndpointSlice of the Workload concerns
// each copy.
func (r *Reconciler) withCopies(f handler.MapFunc) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		reqs := f(ctx, o)
		for _, req := range reqs {
			var plans scorev1b1.WorkloadPlanList
			if err := r.Client.List(ctx, &plans, client.InNamespace(req.Namespace), client.MatchingFields{indexWorkload: req.Name}); err != nil {
				continue
			}
			for i := range plans.Items {
				if p := &plans.Items[i]; p.Name != req.Name && p.Spec.WorkloadRef.Name == req.Name {
					reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(p)})
				}
			}
		}
		return reqs
	}
}
