package runtime

import (
	"context"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/urgency"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/workers"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/members"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/apply"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/caches"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/templates"
)

// indexWorkloadUID indexes plans by their Workload's UID: a cluster-scoped object the runtime
// applied carries no owner reference, only that UID.
const indexWorkloadUID = "score.dev/workload-uid"

// indexWorkload indexes plans by the Workload they are labelled with (its copies' plans
// included), indexService EndpointSlices by their Service: a pass or an event reads its
// Workload's, not its namespace's (a listing by label reads every object of the namespace).
const (
	indexWorkload = "runtime.score.dev/workload"
	indexService  = "runtime.score.dev/service"
)

// indexInstance indexes plans by the instances their claims stand for: a route a dependency
// provisioned carries its instance's label, not the plan's.
const indexInstance = "score.dev/instance"

// Options configure the runtime.
type Options struct {
	// Concurrency is the most plans rendered and applied at once.
	Concurrency int
	// Workers moves the number applied at once up to Concurrency; nil: fixed at it.
	Workers *workers.Adaptive
	// Shard selects the plans this instance applies (their Workload's score.dev/shard);
	// nil: every plan.
	Shard labels.Selector
	// ProgressHold is how long a plan keeps what was written while its objects only
	// progress, and its exposure's first status waits for their health; 0 writes every step.
	ProgressHold time.Duration
	// Namespace is the control plane's: the member clusters' registrations are there, and
	// the runtime publishes their status there. Empty applies on the hub only.
	Namespace string
}

// Setup adds the runtime to mgr: store is the process's config, tpls where templates come
// from.
func Setup(mgr ctrl.Manager, store *configsource.Store, tpls *templates.Source, opts Options) error {
	r := &Reconciler{Client: mgr.GetClient(), Templates: tpls, Config: store, Secrets: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("score-runtime"), Concurrency: opts.Concurrency, Workers: opts.Workers, Shard: opts.Shard, Namespace: opts.Namespace, ProgressHold: opts.ProgressHold}
	return r.SetupWithManager(mgr)
}

// SetupWithManager watches plans, the exposures the runtime publishes to, EndpointSlices (for
// reachability) and, from the first time each kind is applied, the applied objects — so that
// drift, deletion and health changes bring their plan back. Nothing is polled.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := indexPlans(mgr); err != nil {
		return err
	}
	c, err := r.newController(mgr)
	if err != nil {
		return err
	}
	if err := r.setupApply(mgr, c); err != nil {
		return err
	}
	return r.setupMembers(mgr, c)
}

// indexPlans indexes plans by their Workload's UID, by cluster, by Workload and by the
// instances they claim, and EndpointSlices by Service.
func indexPlans(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &scorev1b1.WorkloadPlan{}, indexWorkloadUID, func(o client.Object) []string {
		return []string{o.(*scorev1b1.WorkloadPlan).Spec.WorkloadRef.UID}
	}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &scorev1b1.WorkloadPlan{}, indexCluster, func(o client.Object) []string {
		return planClusters(o.(*scorev1b1.WorkloadPlan))
	}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &scorev1b1.WorkloadPlan{}, indexWorkload, caches.ByLabel(scorev1b1.LabelWorkload)); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &discoveryv1.EndpointSlice{}, indexService, caches.ByLabel(discoveryv1.LabelServiceName)); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &scorev1b1.WorkloadPlan{}, indexInstance, func(o client.Object) []string {
		var out []string
		for _, c := range o.(*scorev1b1.WorkloadPlan).Spec.Claims {
			if c.Instance != "" {
				out = append(out, c.Instance)
			}
		}
		return out
	}); err != nil {
		return err
	}
	return nil
}

// newController builds the workloadplan controller and its watches: plans, their exposures,
// EndpointSlices, the outputs Secrets, member clusters answering or not, and the config.
func (r *Reconciler) newController(mgr ctrl.Manager) (controller.Controller, error) {
	concurrency := r.Concurrency
	if concurrency < 1 {
		concurrency = 4
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("workloadplan").
		For(&scorev1b1.WorkloadPlan{}).
		// A changed plan (a developer's change, a rotated output) goes ahead of the backlog.
		Watches(&scorev1b1.WorkloadPlan{}, urgency.Raise(&handler.EnqueueRequestForObject{}), builder.WithPredicates(urgency.Updates(urgency.Changed))).
		Watches(&scorev1b1.WorkloadExposure{}, handler.EnqueueRequestsFromMapFunc(samePlan)).
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(r.withCopies(planOfService))).
		// A claim's outputs Secret rewritten (rotation) or replaced changes the pods'
		// secrets revision. Metadata only: the runtime caches no secret values.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.withCopies(planOfOutputs)), builder.OnlyMetadata).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency, NewQueue: workers.Queue("workloadplan", concurrency, r.Workers, urgency.FairQueue)})
	r.clusterChanged = make(chan event.GenericEvent)
	// A member cluster that starts or stops answering brings back the plans placed there.
	b = b.WatchesRawSource(source.Channel(r.clusterChanged, &handler.EnqueueRequestForObject{}))
	if r.Config != nil {
		// New health rules re-judge every plan's objects.
		b = b.WatchesRawSource(source.Channel(r.Config.Subscribe(), handler.EnqueueRequestsFromMapFunc(r.allPlans)))
	}
	return b.Build(r)
}

// setupApply makes the hub's applier and the watch of the routes dependencies provisioned,
// both started by c.
func (r *Reconciler) setupApply(mgr ctrl.Manager, c controller.Controller) error {
	// Applied objects carry the Workload's label, the routes the plan's dependencies
	// provisioned their instance's; each cache holds those only.
	applied, err := caches.NewScopedCache(mgr, scorev1b1.LabelWorkload)
	if err != nil {
		return err
	}
	provisioned, err := caches.NewScopedCache(mgr, scorev1b1.LabelInstance)
	if err != nil {
		return err
	}
	owner := releaseBlocked{EventHandler: handler.EnqueueRequestsFromMapFunc(r.planOfApplied), blocked: &r.blocked}
	r.applier = &apply.Applier{Client: r.Client, FieldManager: scorev1b1.FieldManagerRuntime, Judge: r.Config.Judge, Allowed: r.Config.KindAllowed,
		Watcher: &apply.Watcher{Controller: c, Cache: applied, Handler: owner}}
	r.routes = &apply.Watcher{Controller: c, Cache: provisioned, Handler: owner}
	return nil
}

// setupMembers makes the pool of member clusters' connections, and, with a control-plane
// namespace where registrations live, gives it an applier and a watch of the routes on each
// member, started by c.
func (r *Reconciler) setupMembers(mgr ctrl.Manager, c controller.Controller) error {
	r.members = &members.Pool{Name: "cluster", Namespace: r.Namespace, Hub: r.Client, HubReader: mgr.GetAPIReader(), HubConfig: mgr.GetConfig(),
		Scope: scorev1b1.LabelWorkload, Changed: r.bringBack, Publish: true}
	if r.Namespace == "" {
		return nil
	}
	// On a member no owner reference crosses clusters: the Workload's UID finds the plan.
	remote := releaseBlocked{EventHandler: handler.EnqueueRequestsFromMapFunc(r.byWorkloadUID), blocked: &r.blocked}
	r.members.NewApplier = func(cluster, namespace string, cl client.Client, ca cache.Cache) *apply.Applier {
		// A new watch there syncs off the workers, and brings back the namespace's plans.
		synced := func(ctx context.Context) { r.bringBackIn(ctx, cluster, namespace) }
		return &apply.Applier{Client: cl, FieldManager: scorev1b1.FieldManagerRuntime, Judge: r.Config.Judge, Allowed: r.Config.KindAllowed,
			Watcher: &apply.Watcher{Controller: c, Cache: ca, Handler: remote, Synced: synced}}
	}
	// The routes a dependency provisioned on a member carry its instance's label, as on the
	// hub: the plans that claim the instance.
	r.members.RoutesScope = scorev1b1.LabelInstance
	r.members.Routes = func(cluster, namespace string, ca cache.Cache) *apply.Watcher {
		synced := func(ctx context.Context) { r.bringBackIn(ctx, cluster, namespace) }
		return &apply.Watcher{Controller: c, Cache: ca, Handler: handler.EnqueueRequestsFromMapFunc(r.planOfApplied), Synced: synced}
	}
	return r.members.Setup(mgr)
}

// planOfApplied maps an applied object to its plan: the controller owner of a namespaced one,
// the plan of the Workload whose UID a cluster-scoped one carries, and the plans that claim the
// instance a provisioned route is labelled with.
func (r *Reconciler) planOfApplied(ctx context.Context, o client.Object) []reconcile.Request {
	if owner := metav1.GetControllerOf(o); owner != nil {
		if owner.Kind != "WorkloadPlan" || !strings.HasPrefix(owner.APIVersion, scorev1b1.GroupVersion.Group+"/") {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: owner.Name}}}
	}
	var plans scorev1b1.WorkloadPlanList
	switch uid, instance := o.GetAnnotations()[scorev1b1.AnnotationWorkloadUID], o.GetLabels()[scorev1b1.LabelInstance]; {
	case uid != "" && o.GetNamespace() == "":
		if err := r.Client.List(ctx, &plans, client.MatchingFields{indexWorkloadUID: uid}); err != nil {
			return nil
		}
	case instance != "":
		// A route a dependency provisioned: the plans of the Workloads that claim it.
		if err := r.Client.List(ctx, &plans, client.InNamespace(o.GetNamespace()), client.MatchingFields{indexInstance: instance}); err != nil {
			return nil
		}
	default:
		return nil
	}
	out := make([]reconcile.Request, 0, len(plans.Items))
	for i := range plans.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&plans.Items[i])})
	}
	return out
}

// blocked remembers the plans refused because an object they render belongs to another
// Workload, by that object, so that its deletion brings them back (a watch, not a poll). It
// lives in memory, and is re-derived: after a restart every plan is reconciled anyway, a
// refused plan is entered again on every refusal, and a plan that applies is dropped (clear).
type blocked struct {
	mu    sync.Mutex
	plans map[string]map[types.NamespacedName]bool
}

func blockingKey(gk schema.GroupKind, namespace, name string) string {
	return gk.String() + "/" + namespace + "/" + name
}

func (b *blocked) add(object string, plan types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.plans == nil {
		b.plans = map[string]map[types.NamespacedName]bool{}
	}
	if b.plans[object] == nil {
		b.plans[object] = map[types.NamespacedName]bool{}
	}
	b.plans[object][plan] = true
}

// take returns and forgets the plans object blocks.
func (b *blocked) take(object string) []types.NamespacedName {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []types.NamespacedName
	for p := range b.plans[object] {
		out = append(out, p)
	}
	delete(b.plans, object)
	return out
}

// clear forgets a plan that is no longer refused (it applied, or is gone).
func (b *blocked) clear(plan types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for object, plans := range b.plans {
		if plans[plan] {
			delete(plans, plan)
			if len(plans) == 0 {
				delete(b.plans, object)
			}
		}
	}
}

// releaseBlocked is the applied objects' handler: their owner plan, and on deletion the
// plans the object blocked.
type releaseBlocked struct {
	handler.EventHandler
	blocked *blocked
}

// Delete enqueues the owner and the plans the deleted object blocked.
func (h releaseBlocked) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.EventHandler.Delete(ctx, e, q)
	gvk := e.Object.GetObjectKind().GroupVersionKind()
	for _, p := range h.blocked.take(blockingKey(gvk.GroupKind(), e.Object.GetNamespace(), e.Object.GetName())) {
		q.Add(reconcile.Request{NamespacedName: p})
	}
}

// allPlans maps a config change to every plan.
func (r *Reconciler) allPlans(ctx context.Context, _ client.Object) []reconcile.Request {
	var list scorev1b1.WorkloadPlanList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, p := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
	}
	return out
}

// planOfOutputs maps a claim's outputs Secret to the plan of the Workload it belongs to.
func planOfOutputs(_ context.Context, o client.Object) []reconcile.Request {
	owner := metav1.GetControllerOf(o)
	wl := o.GetLabels()[scorev1b1.LabelWorkload]
	if owner == nil || owner.Kind != "ResourceClaim" || wl == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: wl}}}
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
