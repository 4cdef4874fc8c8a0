package provisioner

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/metadata"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"sigs.k8s.io/controller-runtime/pkg/cache"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/urgency"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/workers"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/members"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/apply"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/caches"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/inventory"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisionercmd"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/templates"
)

// indexInstance indexes claims by the identity hash of the instance they claim.
const indexInstance = "score.dev/instance"

// indexResource indexes claims by the objects of their inventory (inventory.Key).
const indexResource = "score.dev/resource"

// indexInstanceNamespace indexes claims by the namespace of their instance, when the platform
// shares it from another namespace than the claim's.
const indexInstanceNamespace = "score.dev/instance-namespace"

// Options configure the provisioner.
type Options struct {
	// Concurrency is the most claims provisioned at once.
	Concurrency int
	// Workers moves the number provisioned at once up to Concurrency; nil: fixed at it.
	Workers *workers.Adaptive
	// EnableCmd allows cmd:// provisioners; CmdLimits bound each run.
	EnableCmd bool
	CmdLimits provisionercmd.Limits
	// APINamespace is where http+api:// credentials Secrets live: the control plane's.
	APINamespace string
	// ProgressHold is how long a claim Binding keeps what was written while its objects only
	// progress; 0 writes every step.
	ProgressHold time.Duration
	// Shard selects the claims this instance provisions (their Workload's score.dev/shard);
	// nil: every claim.
	Shard labels.Selector
}

// Setup adds the provisioner to mgr: store is the process's config, charts where helm://
// charts come from.
func Setup(mgr ctrl.Manager, store *configsource.Store, charts *templates.Source, opts Options) error {
	r := &Reconciler{Client: mgr.GetClient(), Config: store, Recorder: mgr.GetEventRecorder("score-provisioner"),
		EnableCmd: opts.EnableCmd, CmdLimits: opts.CmdLimits, APINamespace: opts.APINamespace, Charts: charts, Concurrency: opts.Concurrency, Workers: opts.Workers, Shard: opts.Shard, ProgressHold: opts.ProgressHold}
	r.revisions = &configsource.Revisions{APIReader: mgr.GetAPIReader(), Namespace: opts.APINamespace, Store: store}
	return r.SetupWithManager(mgr)
}

// SetupWithManager watches claims, the outputs Secrets they own, the config store (a new config
// requeues every claim), and, as they are first applied, each kind of provisioned object, so
// that health changes and deletions bring their claims back. Nothing is polled.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := indexClaims(mgr); err != nil {
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

// indexClaims indexes claims by instance, by the objects they provisioned, by the namespace
// their instance is shared from, and by the clusters they provisioned on.
func indexClaims(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &scorev1b1.ResourceClaim{}, indexInstance, func(o client.Object) []string {
		c := o.(*scorev1b1.ResourceClaim)
		return []string{claimIdentity(c).Hash()}
	}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &scorev1b1.ResourceClaim{}, indexResource, func(o client.Object) []string {
		c := o.(*scorev1b1.ResourceClaim)
		keys := make([]string, 0, len(c.Status.Resources))
		for _, r := range c.Status.Resources {
			keys = append(keys, inventory.Key(r))
		}
		return keys
	}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &scorev1b1.ResourceClaim{}, indexInstanceNamespace, sharedFrom); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &scorev1b1.ResourceClaim{}, indexCluster, claimClusters); err != nil {
		return err
	}
	return nil
}

// newController builds the resourceclaim controller and its watches: claims, their outputs
// Secrets, the Workloads whose ports templates may see, the config, namespaces' labels, member
// clusters answering or not, and plans leaving a cluster.
func (r *Reconciler) newController(mgr ctrl.Manager) (controller.Controller, error) {
	concurrency := r.Concurrency
	if concurrency < 1 {
		concurrency = 4
	}
	r.clusterChanged = make(chan event.GenericEvent)
	return ctrl.NewControllerManagedBy(mgr).
		Named("resourceclaim").
		For(&scorev1b1.ResourceClaim{}).
		// A changed or deleted claim goes ahead of the backlog.
		Watches(&scorev1b1.ResourceClaim{}, urgency.Raise(&handler.EnqueueRequestForObject{}), builder.WithPredicates(urgency.Updates(urgency.Changed))).
		// A shared instance follows its oldest claim's revision (configOf): when a claim
		// names another, the other claims of its instance are provisioned again.
		Watches(&scorev1b1.ResourceClaim{}, handler.EnqueueRequestsFromMapFunc(r.sharers), builder.WithPredicates(revisionChanged)).
		Owns(&corev1.Secret{}).
		// Templates may see every Workload's ports (.WorkloadServices): a spec change of any
		// Workload requeues the claims of its namespace that can. Unchanged results write nothing.
		Watches(&scorev1b1.Workload{}, handler.EnqueueRequestsFromMapFunc(r.claimsInNamespace), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(r.Config.Subscribe(), handler.EnqueueRequestsFromMapFunc(r.allClaims))).
		// A namespace's labels decide whether its claims may share across namespaces, and which
		// host names they may claim.
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.claimsOfNamespace), builder.WithPredicates(predicate.LabelChangedPredicate{}), builder.OnlyMetadata).
		// A member cluster that starts or stops answering brings back the claims placed there.
		WatchesRawSource(source.Channel(r.clusterChanged, &handler.EnqueueRequestForObject{})).
		// A plan that leaves a cluster lets a moved claim release its instance there.
		Watches(&scorev1b1.WorkloadPlan{}, handler.EnqueueRequestsFromMapFunc(r.claimsOfPlan), builder.WithPredicates(clustersChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency, NewQueue: workers.Queue("resourceclaim", concurrency, r.Workers, urgency.FairQueue)}).
		Build(r)
}

// setupApply makes the hub's applier, its watches started by c, the reads of the outputs
// Secrets, and, with the manager, the tracking of refused kinds and the state's signing key.
func (r *Reconciler) setupApply(mgr ctrl.Manager, c controller.Controller) error {
	// Provisioned objects carry their instance's label; the cache holds those only.
	provisioned, err := caches.NewScopedCache(mgr, scorev1b1.LabelInstance)
	if err != nil {
		return err
	}
	// An object the cache does not hold is created with a create-only apply, not read first
	// (CreateUnseen): provisioned objects carry their instance's label from their creation,
	// and their names its identity, so one that exists and is not in the cache is rare (the
	// cache a moment behind, or someone else's), and only then read.
	r.applier = &apply.Applier{Client: r.Client, FieldManager: scorev1b1.FieldManagerProvisioner, Judge: r.Config.Judge, Allowed: r.Config.KindAllowed, CreateUnseen: true,
		Watcher: &apply.Watcher{Controller: c, Cache: provisioned, Handler: handler.EnqueueRequestsFromMapFunc(r.claimsOfObject)}}
	r.secrets = caches.CacheFirst{Cache: r.Client, APIServer: mgr.GetAPIReader()}
	md, err := metadata.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return err
	}
	r.refused = &refusals{md: md, mapper: mgr.GetRESTMapper(), wake: r.clusterChanged}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		r.refused.start(ctx)
		// The state's signing key made before any claim is provisioned: a state Secret older
		// than it is read as an earlier version's (provisioner_statekey.go).
		if _, err := r.signingKey(ctx); err != nil && r.APINamespace != "" {
			ctrl.LoggerFrom(ctx).Error(err, "Reading the state's signing key; retried on the first state read")
		}
		return nil
	}))
}

// setupMembers makes the pool of member clusters' connections, and, with a control-plane
// namespace where registrations live, an applier on each member, its watches started by c.
func (r *Reconciler) setupMembers(mgr ctrl.Manager, c controller.Controller) error {
	r.members = &members.Pool{Name: "cluster-provisioner", Namespace: r.APINamespace, Hub: r.Client, HubReader: mgr.GetAPIReader(), HubConfig: mgr.GetConfig(),
		Scope: scorev1b1.LabelInstance, Changed: r.bringBack}
	if r.APINamespace == "" {
		return nil // no control-plane namespace, no registrations: the hub only
	}
	r.members.NewApplier = func(cluster, namespace string, cl client.Client, ca cache.Cache) *apply.Applier {
		// A new watch there syncs off the workers, and brings back the namespace's claims.
		synced := func(ctx context.Context) { r.bringBackIn(ctx, cluster, namespace) }
		return &apply.Applier{Client: cl, FieldManager: scorev1b1.FieldManagerProvisioner, Judge: r.Config.Judge, Allowed: r.Config.KindAllowed, CreateUnseen: true,
			Watcher: &apply.Watcher{Controller: c, Cache: ca, Handler: r.claimsOfObjectOn(cluster), Synced: synced}}
	}
	return r.members.Setup(mgr)
}

// claimsOfPlan maps a plan to its Workload's claims.
func (r *Reconciler) claimsOfPlan(ctx context.Context, o client.Object) []reconcile.Request {
	p := o.(*scorev1b1.WorkloadPlan)
	return r.listClaims(ctx, client.InNamespace(p.Namespace), client.MatchingLabels{scorev1b1.LabelWorkload: p.Spec.WorkloadRef.Name})
}

// clustersChanged passes a plan whose clusters (where it is placed, where it holds objects)
// changed: what a moved claim waits for.
var clustersChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	DeleteFunc: func(e event.DeleteEvent) bool {
		return slices.ContainsFunc(clusters.OfPlan(e.Object.(*scorev1b1.WorkloadPlan)), func(c string) bool { return c != "" })
	},
	UpdateFunc: func(e event.UpdateEvent) bool {
		return !slices.Equal(clusters.OfPlan(e.ObjectOld.(*scorev1b1.WorkloadPlan)), clusters.OfPlan(e.ObjectNew.(*scorev1b1.WorkloadPlan)))
	},
}

// sharedFrom is the index value of indexInstanceNamespace: the namespace a claim's instance is
// shared from, when not the claim's own.
func sharedFrom(o client.Object) []string {
	c := o.(*scorev1b1.ResourceClaim)
	if ns := c.Status.InstanceNamespace; ns != "" && ns != c.Namespace {
		return []string{ns}
	}
	return nil
}

// claimsOfObject maps a provisioned object to the claims of the instance it is labelled with
// and to every claim that lists it: an object several instances produce carries the label of
// one of them only.
func (r *Reconciler) claimsOfObject(ctx context.Context, o client.Object) []reconcile.Request {
	return r.claimsOf(ctx, o, "")
}

// claimsOf maps a provisioned object on cluster ("" the hub) to its claims.
func (r *Reconciler) claimsOf(ctx context.Context, o client.Object, cluster string) []reconcile.Request {
	hash := o.GetLabels()[scorev1b1.LabelInstance]
	if hash == "" {
		return nil
	}
	gvk := o.GetObjectKind().GroupVersionKind()
	// Cluster-wide: an instance shared across namespaces has consumers in several.
	byLabel := r.listClaims(ctx, client.MatchingFields{indexInstance: hash})
	byInventory := r.listClaims(ctx, client.MatchingFields{indexResource: inventory.Key(scorev1b1.AppliedObject{Cluster: cluster, APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()})})
	seen := map[reconcile.Request]bool{}
	out := make([]reconcile.Request, 0, len(byLabel)+len(byInventory))
	for _, req := range append(byLabel, byInventory...) {
		if !seen[req] {
			seen[req] = true
			out = append(out, req)
		}
	}
	return out
}

// claimsInNamespace maps a Workload's spec change to the claims of its namespace that can
// see it. Only the claims whose definition can read other Workloads' ports are requeued (and the
// Workload's own): every Workload created in a namespace of N claims requeued all N, each
// pass reading its state and live objects from the API server again, so N Workloads created
// one by one cost O(N²) passes (make bench).
func (r *Reconciler) claimsInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	var own, shared scorev1b1.ResourceClaimList
	// Read only, and listed on every Workload event: no deep copy of every claim. The claims
	// whose instance the platform shares from this namespace see its Workloads too.
	if err := r.Client.List(ctx, &own, client.InNamespace(o.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	if err := r.Client.List(ctx, &shared, client.MatchingFields{indexInstanceNamespace: o.GetNamespace()}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	sees := r.readers.of(r.Config)
	out := make([]reconcile.Request, 0, len(own.Items))
	for _, list := range []*scorev1b1.ResourceClaimList{&own, &shared} {
		for i := range list.Items {
			c := &list.Items[i]
			if (c.Namespace != o.GetNamespace() || c.Spec.WorkloadRef.Name != o.GetName()) && !sees(c.Status.Provisioner) {
				continue
			}
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
		}
	}
	return out
}

// workloadReaders remembers seesWorkloads for each definition of one config: the mapping runs
// for every Workload event against every claim of the namespace, and matching templates each
// time made a restart over 1,000 Workloads miss its 2-minute cache sync (make bench).
type workloadReaders struct {
	mu       sync.Mutex
	revision string
	loaded   bool
	sees     map[string]bool
}

// of returns seesWorkloads for the store's current config.
func (w *workloadReaders) of(store *configsource.Store) func(uri string) bool {
	var defs []orchconfig.Provisioner
	revision := ""
	loaded, ok := store.Get()
	if ok {
		defs, revision = loaded.Config.Provisioners, loaded.Revision
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sees == nil || w.loaded != ok || w.revision != revision {
		w.sees, w.loaded, w.revision = map[string]bool{}, ok, revision
		for _, d := range defs {
			if _, seen := w.sees[d.URI]; !seen {
				w.sees[d.URI] = seesWorkloads(defs, d.URI)
			}
		}
	}
	sees := w.sees
	return func(uri string) bool {
		if v, ok := sees[uri]; ok {
			return v
		}
		return true // not provisioned yet, another strategy, or no longer in the config
	}
}

// wholeData matches a template that hands its whole data on (toJson ., {{ . }}), and so may
// read .WorkloadServices without naming it.
var wholeData = regexp.MustCompile(`(toJson|toYaml|toPrettyJson|toRawJson|include\s+"[^"]*")\s+\$?\.\s*[)}|-]|\{\{-?\s*\$?\.\s*-?\}\}`)

// seesWorkloads reports whether the definition a claim was provisioned by (its status names
// it) may read other Workloads' ports: a template:// definition whose templates name
// .WorkloadServices or hand on their whole data. Anything else — not provisioned yet, a
// definition no longer in the config, a strategy that receives the whole data (cmd, helm,
// http+api, runnable) — may, and is requeued.
func seesWorkloads(defs []orchconfig.Provisioner, uri string) bool {
	if !strings.HasPrefix(uri, "template://") {
		return true
	}
	for _, d := range defs {
		if d.URI != uri {
			continue
		}
		for _, tpl := range []string{d.Init, d.State, d.Shared, d.Outputs, d.Manifests} {
			if strings.Contains(tpl, "WorkloadServices") || wholeData.MatchString(tpl) {
				return true
			}
		}
		return false
	}
	return true
}

// claimsOfNamespace maps a Namespace to its claims.
func (r *Reconciler) claimsOfNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	return r.listClaims(ctx, client.InNamespace(o.GetName()))
}

// allClaims maps a config change to every claim.
func (r *Reconciler) allClaims(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.listClaims(ctx)
}

func (r *Reconciler) listClaims(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	var list scorev1b1.ResourceClaimList
	if err := r.Client.List(ctx, &list, opts...); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, c := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
	}
	return out
}
