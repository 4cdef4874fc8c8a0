// Package provisioner is the provisioner controller: the one writer of ResourceClaim.status. It
// finds the provisioner definition that serves a claim, runs it with the instance's stable
// state, applies the manifests server-side, judges their health with kstatus, and publishes
// the outputs: non-secret ones in status, secret ones in a Secret the claim owns.
package provisioner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/ownwrites"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/statuspatch"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/workers"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/members"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/apply"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/caches"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisionercmd"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/templates"
	"github.com/score-orchestrator/score-orchestrator/internal/shard"
	"github.com/score-orchestrator/score-orchestrator/internal/status/claimdecision"
)

// The provisioner's permissions: it writes claim status and finalizers, the state and
// outputs Secrets, and the kinds the development catalog's definitions create.
//
// +kubebuilder:rbac:groups=score.dev,resources=resourceclaims,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=score.dev,resources=resourceclaims/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=score.dev,resources=resourceclaims/finalizers,verbs=update
// +kubebuilder:rbac:groups=score.dev,resources=workloads,verbs=get;list;watch
// +kubebuilder:rbac:groups=score.dev,resources=workloadplans,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets;services;persistentvolumeclaims,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=statefulsets;deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles ResourceClaims.
type Reconciler struct {
	Client   client.Client
	Config   *configsource.Store
	Recorder recorder.EventRecorder
	// EnableCmd allows cmd:// provisioners, which run binaries inside the controller. Off by
	// default.
	EnableCmd bool
	// CmdLimits bound each cmd:// run; zero fields take provisionercmd.DefaultLimits.
	CmdLimits provisionercmd.Limits
	// APINamespace is where http+api:// credentials Secrets live: the controller's own
	// namespace, never a claim's.
	APINamespace string
	// HTTPClient makes http+api:// requests; nil is a client with a 30s timeout.
	HTTPClient *http.Client
	// Clock tells http+api:// progress the time; nil is the real clock.
	Clock clock.PassiveClock
	// Charts fetches the charts of helm:// provisioners by digest, verified and cached.
	Charts *templates.Source
	// Concurrency is the most claims reconciled at once.
	Concurrency int
	// Workers moves the number reconciled at once up to Concurrency, with the API server's
	// room; nil: Concurrency, fixed.
	Workers *workers.Adaptive
	// ProgressHold is how long a claim Binding keeps what was written while its objects only
	// progress (claimdecision.Observed.ProgressHold); 0 writes every step.
	ProgressHold time.Duration
	// Shard selects the claims this instance provisions; nil: every claim. The cache holds
	// every claim still: whether an instance has other consumers is a question about all of
	// them.
	Shard labels.Selector

	applier *apply.Applier
	// secrets reads Secrets: the manager's cache holds only the outputs Secrets, the API
	// server answers for the rest (referenced and credentials Secrets, the shared state);
	// state Secrets are read with readState.
	secrets caches.CacheFirst
	// raced are the state Secrets to read from the API server on their next pass (readState).
	raced stateRaces
	// readers remembers, per config, which definitions can read other Workloads' ports.
	readers workloadReaders
	// phases times each claim's phases for the metrics.
	phases phaseClock
	// written tells a cached claim older than this controller's last status write.
	written ownwrites.Tracker
	// revisions reads the kept config revisions a rollout provisions claims from (nil: the
	// current config only).
	revisions *configsource.Revisions
	// members are the registered member clusters; clusterChanged brings back the claims of
	// one that started or stopped answering.
	members        *members.Pool
	clusterChanged chan event.GenericEvent
	// key signs the state Secrets the provisioner writes (provisioner_statekey.go).
	key stateKey
	// refused watch the objects no instance made that claims are refused for, and bring the
	// claims back when they go.
	refused *refusals
}

// Reconcile brings one claim one step closer to Bound, or releases it when deleted.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	c := &scorev1b1.ResourceClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		if apierrors.IsNotFound(err) {
			r.phases.forget(req.NamespacedName)
			r.refused.set(req.NamespacedName, nil)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !shard.Owns(r.Shard, c) {
		// Another shard's (its Workload's): that shard's provisioner answers for it.
		r.phases.forget(req.NamespacedName)
		r.written.Forget(c.UID)
		return ctrl.Result{}, nil
	}
	if r.written.Stale(c) {
		return ctrl.Result{}, nil
	}
	patch := statuspatch.Begin(c)
	before := patch.Before().(*scorev1b1.ResourceClaim)
	defer func() {
		if !c.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(c, scorev1b1.ClaimFinalizer) {
			r.phases.forget(req.NamespacedName)
			r.written.Forget(c.UID)
			return
		}
		wrote, err := patch.Finish(ctx, r.Client, &r.written)
		if err != nil {
			retErr = errors.Join(retErr, err)
			return
		}
		if wrote && (before.Status.Phase != c.Status.Phase || before.Status.Reason != c.Status.Reason) {
			ctrl.LoggerFrom(ctx).Info("Phase changed", "phase", c.Status.Phase, "reason", c.Status.Reason, "provisioner", c.Status.Provisioner, "objects", len(c.Status.Resources))
		}
		r.phases.observe(c, before.Status.Phase, r.clock().Now())
	}()

	if !c.DeletionTimestamp.IsZero() {
		r.refused.set(req.NamespacedName, nil)
		return r.release(ctx, c)
	}
	// Until the config source has made its first attempt, nothing is decided: the store's
	// notification brings every claim back.
	if !r.Config.Settled() {
		return ctrl.Result{}, nil
	}
	// The orchestrator creates claims with the finalizer; a claim made otherwise gets it here,
	// before anything is provisioned.
	if controllerutil.AddFinalizer(c, scorev1b1.ClaimFinalizer) {
		if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding the finalizer: %w", err)
		}
		patch.Rebase()
	}
	return r.provision(ctx, c)
}

// provision takes the claim one step. It reads what the pass needs (observe), asks
// claimdecision.From for the claim's status and what to do next, does that — record a shared
// instance in the sharing ledger, run the provisioner, publish, retire a moved instance — and
// asks again with what it did, until the
// decision is Done. Each action is done at most once: what it did, in Observed, moves the
// decision on.
func (r *Reconciler) provision(ctx context.Context, c *scorev1b1.ResourceClaim) (ctrl.Result, error) {
	p, err := r.observe(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := claimdecision.From(p.Observed)
	for d.Next != claimdecision.Done {
		// The actions see the status decided so far: where the instance is now, for their
		// events and identities.
		c.Status = d.Status
		switch d.Next {
		case claimdecision.Record:
			p.Recorded = &claimdecision.Recorded{Err: r.record(ctx, c, p)}
		case claimdecision.Provision:
			p.Run = r.run(ctx, p)
		case claimdecision.Publish:
			p.Published = r.publish(ctx, c, p, d.Prune)
		case claimdecision.Retire:
			held, err := r.retire(ctx, c, d.Elsewhere)
			p.Retired = &claimdecision.Retired{Held: held, Err: err}
		}
		d = claimdecision.From(p.Observed)
	}
	r.refused.set(client.ObjectKeyFromObject(c), refusedFor(p))
	c.Status = d.Status
	return ctrl.Result{RequeueAfter: d.RequeueAfter}, d.Retry
}

// env is what provisioning runs may reach: the chart source, the external APIs of http+api://
// definitions, and the command runner when command provisioners are enabled.
func (r *Reconciler) env() provisioning.Env {
	env := provisioning.Env{Chart: func(ctx context.Context, ref scorev1b1.TemplateRef) ([]byte, error) {
		if r.Charts == nil {
			return nil, errors.New("no chart source is configured")
		}
		chart, err := r.Charts.Get(ctx, ref)
		return chart.Data, err
	}, API: r.apiClient().Step}
	if r.EnableCmd {
		env.Command = provisionercmd.Runner(r.CmdLimits)
	}
	return env
}

// readReferencedSecret reads, with get, a Secret a provisioner's outputs refer to: whose it is
// (its labels and owners, which provisioning.Run judges before it uses the value) and the
// key's value.
func readReferencedSecret(ctx context.Context, get func(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error, namespace string, ref provisioning.SecretRef) (provisioning.ReferencedSecret, error) {
	s := &corev1.Secret{}
	if err := get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, s); err != nil {
		return provisioning.ReferencedSecret{}, fmt.Errorf("secret %s referenced by an output: %w", ref.Name, err)
	}
	out := provisioning.ReferencedSecret{Labels: s.Labels}
	for _, o := range s.OwnerReferences {
		out.Owners = append(out.Owners, string(o.UID))
	}
	v, ok := s.Data[ref.Key]
	out.Value, out.HasKey = string(v), ok
	return out, nil
}
