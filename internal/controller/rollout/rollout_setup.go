package rollout

import (
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
)

// Options configure the rollout controller.
type Options struct {
	// Namespace is the control plane's: the rollouts and the kept revisions are there.
	Namespace string
	// Region is where the orchestrators run, for backends restricted to regions: which
	// Workloads a change affects depends on it.
	Region string
}

// DefaultOptions are the documented defaults.
func DefaultOptions() Options { return Options{Namespace: "score-system"} }

// Setup adds the rollout controller to mgr; store is the process's config. It reads every
// Workload and plan, whatever shard owns them: mgr's cache must hold them all.
func Setup(mgr ctrl.Manager, store *configsource.Store, opts Options) error {
	r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: store, Recorder: mgr.GetEventRecorder("score-rollout"),
		Namespace: opts.Namespace, Region: opts.Region,
		revisions: &configsource.Revisions{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Namespace: opts.Namespace, Store: store}}
	return r.SetupWithManager(mgr)
}

// indexWorkloadUID indexes plans by the UID of the Workload they belong to: a wave's gate reads
// each Workload's plans, one per copy on several clusters.
const indexWorkloadUID = "rollout.score.dev/workload-uid"

// fleetKey is the controller's one request: the fleet.
var fleetKey = reconcile.Request{NamespacedName: client.ObjectKey{Name: "fleet"}}

// SetupWithManager watches the rollouts, the config store, and what a wave's gate reads: the
// Workloads' Ready and the plans' revisions, progress and objects. Its timers are the bake time
// and the progress deadline; nothing is polled.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &scorev1b1.WorkloadPlan{}, indexWorkloadUID, func(o client.Object) []string {
		return []string{o.(*scorev1b1.WorkloadPlan).Spec.WorkloadRef.UID}
	}); err != nil {
		return err
	}
	fleet := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{fleetKey} })
	readyChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*scorev1b1.Workload), e.ObjectNew.(*scorev1b1.Workload)
		return !reflect.DeepEqual(meta.FindStatusCondition(o.Status.Conditions, scorev1b1.ConditionReady), meta.FindStatusCondition(n.Status.Conditions, scorev1b1.ConditionReady))
	}}
	planChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*scorev1b1.WorkloadPlan), e.ObjectNew.(*scorev1b1.WorkloadPlan)
		return o.Spec.ConfigRevision != n.Spec.ConfigRevision || o.Status.ObservedGeneration != n.Status.ObservedGeneration ||
			!reflect.DeepEqual(o.Status.Objects, n.Status.Objects) || // what a gate expression reads
			!reflect.DeepEqual(meta.FindStatusCondition(o.Status.Conditions, scorev1b1.PlanConditionHealthy), meta.FindStatusCondition(n.Status.Conditions, scorev1b1.PlanConditionHealthy))
	}}
	return ctrl.NewControllerManagedBy(mgr).
		Named("configrollout").
		WatchesRawSource(source.Kind[client.Object](mgr.GetCache(), &scorev1b1.ConfigRollout{}, fleet)).
		WatchesRawSource(source.Channel(r.Config.Subscribe(), fleet)).
		Watches(&scorev1b1.Workload{}, fleet, builder.WithPredicates(readyChanged)).
		Watches(&scorev1b1.WorkloadPlan{}, fleet, builder.WithPredicates(planChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(r)
}
