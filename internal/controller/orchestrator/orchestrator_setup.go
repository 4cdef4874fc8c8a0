package orchestrator

import (
	"context"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
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
	"github.com/score-orchestrator/score-orchestrator/internal/controller/previewpolicy"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/urgency"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/workers"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/members"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/placement"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/caches"
	"github.com/score-orchestrator/score-orchestrator/internal/status/workloaddecision"
)

// Options configure the orchestrator.
type Options struct {
	// Region is where this orchestrator runs, for backends restricted to regions.
	Region string
	// Concurrency is the most Workloads reconciled at once.
	Concurrency int
	// Workers moves the number reconciled at once up to Concurrency; nil: fixed at it.
	Workers *workers.Adaptive
	// Shard selects the Workloads this instance orchestrates (score.dev/shard); nil: every
	// Workload.
	Shard labels.Selector
	// Namespace is the control plane's: the runtime publishes the member clusters' status
	// there (clusters.StatusConfigMap), which placement reads.
	Namespace string
	// ProgressHold is how long a Workload status that only reports progress waits for the
	// next step, so that both are written once (docs/lifecycle.md); 0 writes every step.
	ProgressHold time.Duration
	// TraceKeep is how long an answered WorkloadTrace is kept for its asker; 0 is
	// why.KeepAnswered (a minute). Tests shorten it.
	TraceKeep time.Duration
}

// DefaultOptions are an orchestrator set up on its own: four workers, fixed. The control
// plane's defaults (controlplane.DefaultOptions) make them adaptive, up to a higher cap.
func DefaultOptions() Options {
	return Options{Concurrency: 4, Namespace: "score-system", ProgressHold: workloaddecision.DefaultProgressHold}
}

// Setup adds the orchestrator to mgr, with its answerer of WorkloadTraces; store is the
// process's config.
func Setup(mgr ctrl.Manager, store *configsource.Store, opts Options) error {
	r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: store, Recorder: mgr.GetEventRecorder("score-orchestrator"),
		Region: opts.Region, Concurrency: opts.Concurrency, Workers: opts.Workers, Shard: opts.Shard, Namespace: opts.Namespace, ProgressHold: opts.ProgressHold}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	t := &Tracer{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: store, Region: opts.Region, Shard: opts.Shard, Namespace: opts.Namespace, Keep: opts.TraceKeep, clusters: r.clusters}
	return t.SetupWithManager(mgr)
}

// traceWorkers answer WorkloadTraces: one, so that a namespace's bound is exact (each request
// is judged after the answers before it). Answering is a few cached reads and one write, and
// the requests wait behind each other, never behind Workloads.
const traceWorkers = 1

// SetupWithManager watches WorkloadTraces as they are created (an update is the Tracer's own
// answer, whose removal it schedules itself) and the config store: unanswered requests wait
// for the first config. It reads the claims, plans and exposures through the index the
// Workload controller adds (Reconciler.SetupWithManager first). Nothing is polled; an answered
// request comes back once, when it is due for removal.
func (t *Tracer) SetupWithManager(mgr ctrl.Manager) error {
	if t.APIReader == nil {
		t.APIReader = t.Client
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("workloadtrace").
		For(&scorev1b1.WorkloadTrace{}, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(event.UpdateEvent) bool { return false },
			DeleteFunc: func(event.DeleteEvent) bool { return false },
		})).
		WatchesRawSource(source.Channel(t.Config.Subscribe(), handler.EnqueueRequestsFromMapFunc(t.unanswered))).
		WithOptions(controller.Options{MaxConcurrentReconciles: traceWorkers}).
		Complete(t)
}

// unanswered lists the WorkloadTraces without an answer.
func (t *Tracer) unanswered(ctx context.Context, _ client.Object) []reconcile.Request {
	var list scorev1b1.WorkloadTraceList
	if err := t.Client.List(ctx, &list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the WorkloadTraces after a config change")
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if meta.FindStatusCondition(list.Items[i].Status.Conditions, scorev1b1.TraceConditionAnswered) == nil {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// indexWorkload indexes the claims, plans and exposures by the Workload they are labelled
// with (scorev1b1.LabelWorkload): a pass reads its Workload's, not its namespace's — a
// listing by label reads every object of the namespace, O(N) a pass for N Workloads there.
const indexWorkload = "orchestrator.score.dev/workload"

// indexedByWorkload are the kinds indexWorkload indexes.
func indexedByWorkload() []client.Object {
	return []client.Object{&scorev1b1.ResourceClaim{}, &scorev1b1.WorkloadPlan{}, &scorev1b1.WorkloadExposure{}}
}

// workloadLabel is an object's indexWorkload: the Workload it is labelled with.
var workloadLabel = caches.ByLabel(scorev1b1.LabelWorkload)

// SetupWithManager watches Workloads (spec, labels, annotations and deletion, not status), the
// claims, plans and exposures they own, the deletion of retained claims, the preview namespaces
// (internal/planning/preview), namespaces' labels (probeHosts) and the config store: a new
// valid config requeues every Workload. Nothing is polled. A Workload's spec change and the
// updates that answer it, or report a claim's failure, go ahead of the backlog (urgency).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	deletionStarted := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
	}}
	workloadChanged := predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}, deletionStarted)
	owner := handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &scorev1b1.Workload{}, handler.OnlyControllerOwner())
	if err := indexOwned(mgr); err != nil {
		return err
	}
	concurrency := r.Concurrency
	if concurrency < 1 {
		concurrency = 4
	}
	status, err := members.NewStatusCache(mgr, r.Namespace)
	if err != nil {
		return err
	}
	r.clusters = status
	r.revisions = r.rolloutRevisions()
	b := ctrl.NewControllerManagedBy(mgr).
		Named("workload").
		For(&scorev1b1.Workload{}, builder.WithPredicates(workloadChanged)).
		Owns(&scorev1b1.ResourceClaim{}).
		// A retained claim belongs to no Workload; when a Workload of the same name releases
		// it, its deletion (delayed by the provisioner's finalizer) must bring that Workload
		// back to create the fresh claim.
		Watches(&scorev1b1.ResourceClaim{}, handler.EnqueueRequestsFromMapFunc(unownedClaimWorkload), builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false },
			UpdateFunc: func(event.UpdateEvent) bool { return false },
		})).
		Owns(&scorev1b1.WorkloadPlan{}).
		Owns(&scorev1b1.WorkloadExposure{}).
		Watches(&scorev1b1.Workload{}, urgency.Raise(&handler.EnqueueRequestForObject{}), builder.WithPredicates(urgency.Updates(urgency.Changed))).
		// A Workload that is gone is forgotten (one without dependencies has no finalizer, so
		// no pass of the orchestrator sees its deletion).
		Watches(&scorev1b1.Workload{}, handler.Funcs{DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.memory.forget(e.Object.GetUID())
			r.readiness.forget(e.Object.GetUID())
		}}).
		Watches(&scorev1b1.ResourceClaim{}, urgency.Raise(owner), builder.WithPredicates(urgency.Updates(answers))).
		Watches(&scorev1b1.WorkloadPlan{}, urgency.Raise(owner), builder.WithPredicates(urgency.Updates(answers))).
		Watches(&scorev1b1.WorkloadExposure{}, urgency.Raise(owner), builder.WithPredicates(urgency.Updates(answers))).
		WatchesRawSource(source.Channel(r.Config.Subscribe(), handler.EnqueueRequestsFromMapFunc(r.allWorkloads))).
		// A rollout that starts, moves to its next wave, halts, completes or is aborted changes
		// the revision Workloads are rendered from: every instance watches the fleet's rollouts,
		// whatever its shard.
		Watches(&scorev1b1.ConfigRollout{}, handler.EnqueueRequestsFromMapFunc(r.allWorkloads), builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				o, n := e.ObjectOld.(*scorev1b1.ConfigRollout), e.ObjectNew.(*scorev1b1.ConfigRollout)
				return o.Status.Phase != n.Status.Phase || o.Status.Wave != n.Status.Wave || o.Spec.Aborted != n.Spec.Aborted || !maps.Equal(o.Spec.Pins, n.Spec.Pins)
			}})).
		// A cluster registered, relabelled or let go of may change where Workloads belong;
		// whether one answers only when a backend fails over (clustersChanged).
		WatchesRawSource(source.Kind[client.Object](status, &corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.allWorkloads), predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool { return r.clustersChanged(e.ObjectOld, e.ObjectNew) }})).
		// A preview namespace created, deleted or relabelled may admit or refuse another
		// preview under the platform's limit.
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.previewWorkloads), builder.WithPredicates(previewChanged), builder.OnlyMetadata).
		// A namespace relabelled may be admitted to probe hosts (probeHosts) or to volumes by name
		// (namedVolumes), or no longer; an instance's volumes changed may name a volume a
		// Workload mounts by name (orchestrator_volumes.go).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.relabelledNamespaceWorkloads), builder.WithPredicates(labelsChanged), builder.OnlyMetadata).
		Watches(&scorev1b1.ResourceClaim{}, handler.EnqueueRequestsFromMapFunc(r.instanceVolumeWorkloads), builder.WithPredicates(instanceVolumesChanged))
	// The admission policy that binds previews to their makers installed, changed or removed
	// admits or refuses every preview.
	b = previewpolicy.Watch(b, r.previewWorkloads)
	return b.
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency, NewQueue: workers.Queue("workload", concurrency, r.Workers, urgency.FairQueue)}).
		Complete(r)
}

// indexOwned indexes claims, plans and exposures by their Workload, and claims by the namespace
// of their instance.
func indexOwned(mgr ctrl.Manager) error {
	for _, obj := range indexedByWorkload() {
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), obj, indexWorkload, workloadLabel); err != nil {
			return err
		}
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &scorev1b1.ResourceClaim{}, indexInstanceNamespace, instanceNamespace); err != nil {
		return err
	}
	return nil
}

// rolloutRevisions are the revisions a rollout gives Workloads, read back from where the
// rollout controller keeps them; this instance never writes them.
func (r *Reconciler) rolloutRevisions() *configsource.Revisions {
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	return &configsource.Revisions{Client: r.Client, APIReader: reader, Namespace: r.Namespace, Store: r.Config}
}

// placeable are the clusters a published status offers placement: names, labels and since
// when each has (not) answered.
func placeable(o client.Object) []placement.Cluster {
	cm, _ := o.(*corev1.ConfigMap)
	return clusters.Placeable(clusters.Decode(cm))
}

// answers holds for an update of a claim, plan or exposure that the Workload's status waits
// for: the answer to a changed spec (a status that observed a generation after the first), or
// a failure to report. The first rollout of a new Workload is not urgent: it is the backlog.
func answers(old, new client.Object) bool {
	after := func(o, n int64) bool { return n > 1 && n != o }
	switch n := new.(type) {
	case *scorev1b1.ResourceClaim:
		o := old.(*scorev1b1.ResourceClaim)
		return after(o.Status.ObservedGeneration, n.Status.ObservedGeneration) ||
			n.Status.Phase == scorev1b1.ClaimPhaseFailed && o.Status.Phase != scorev1b1.ClaimPhaseFailed
	case *scorev1b1.WorkloadPlan:
		o := old.(*scorev1b1.WorkloadPlan)
		return after(o.Status.ObservedGeneration, n.Status.ObservedGeneration) ||
			n.Status.Phase == scorev1b1.PlanPhaseFailed && o.Status.Phase != scorev1b1.PlanPhaseFailed
	case *scorev1b1.WorkloadExposure:
		return after(old.(*scorev1b1.WorkloadExposure).Status.ObservedWorkloadGeneration, n.Status.ObservedWorkloadGeneration)
	}
	return false
}

// unownedClaimWorkload maps a claim no Workload controls to the Workload its spec names.
func unownedClaimWorkload(_ context.Context, o client.Object) []reconcile.Request {
	c, ok := o.(*scorev1b1.ResourceClaim)
	if !ok || metav1.GetControllerOf(c) != nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: c.Spec.WorkloadRef.Name}}}
}

// allWorkloads lists every Workload: a config change can affect any of them.
func (r *Reconciler) allWorkloads(ctx context.Context, _ client.Object) []reconcile.Request {
	var list scorev1b1.WorkloadList
	if err := r.Client.List(ctx, &list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing workloads after a config change")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, w := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&w)})
	}
	return reqs
}
