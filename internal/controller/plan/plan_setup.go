package plan

import (
	"context"

	discoveryv1 "k8s.io/api/discovery/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/objectwatch"
)

// SetupWithManager watches plans, the exposures the runtime publishes to, EndpointSlices (for
// reachability) and, from the first time each kind is applied, the applied objects — so that
// drift, deletion and health changes bring their plan back. Nothing is polled.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	concurrency := r.Concurrency
	if concurrency < 1 {
		concurrency = 4
	}
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("workloadplan").
		For(&scorev1b1.WorkloadPlan{}).
		Watches(&scorev1b1.WorkloadExposure{}, handler.EnqueueRequestsFromMapFunc(samePlan)).
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(planOfService)).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Build(r)
	if err != nil {
		return err
	}
	owner := handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &scorev1b1.WorkloadPlan{}, handler.OnlyControllerOwner())
	r.watcher = &objectwatch.Watcher{Controller: c, Cache: mgr.GetCache(), Handler: owner}
	return nil
}

// samePlan maps a Workload's exposure to its plan (both carry the Workload's name).
func samePlan(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
}

// planOfService maps an EndpointSlice to the plan of the Workload its Service belongs to.
func planOfService(_ context.Context, o client.Object) []reconcile.Request {
	wl := o.GetLabels()[scorev1b1.LabelWorkload]
	if wl == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: wl}}}
}
