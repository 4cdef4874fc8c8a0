// Package orchestrator is the orchestrator's Workload reconciler: the one writer of
// Workload.status. It observes the Workload, the Orchestrator Config and the claims, plan
// and exposure it owns, calls the pure packages (planner, selection, mirror,
// workloadstatus) to decide, applies the decided writes, and patches the status once, only
// when it changed.
package orchestrator

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/apierror"
	"github.com/score-orchestrator/score-orchestrator/internal/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/statuspatch"
	"github.com/score-orchestrator/score-orchestrator/internal/shard"
	"github.com/score-orchestrator/score-orchestrator/internal/workloadstatus"
)

// The orchestrator's permissions: it writes Workload status and finalizers, and the spec of
// claims, plans and exposures; it never writes their status.
//
// +kubebuilder:rbac:groups=score.dev,resources=workloads,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=score.dev,resources=workloads/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=score.dev,resources=workloads/finalizers,verbs=update
// +kubebuilder:rbac:groups=score.dev,resources=resourceclaims;workloadplans;workloadexposures,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles Workloads.
type Reconciler struct {
	Client client.Client
	// APIReader reads from the API server, past the cache: whether an object created a while
	// ago that the cache still does not show exists (default: Client).
	APIReader client.Reader
	Config    *configsource.Store
	Recorder  recorder.EventRecorder
	// Region is where this orchestrator runs, for backends restricted to regions.
	Region string
	// Concurrency is the number of Workloads reconciled at once.
	Concurrency int
	// Shard selects the Workloads this instance orchestrates; nil: every Workload.
	Shard labels.Selector
	// Namespace is the control plane's, where the member clusters' status is published.
	Namespace string
	// clusters caches that status.
	clusters client.Reader
	// revisions are the admitted config revisions the rollout controller keeps, read for the
	// revision a rollout gives a Workload.
	revisions *configsource.Revisions
	// Now is the clock; tests inject one.
	Now func() time.Time

	memory    memory
	readiness readiness
}

// scope is one pass over one Workload. Fields are filled by the stage named beside them.
type scope struct {
	workload *scorev1b1.Workload
	before   *scorev1b1.Workload // as read, for the status comparison
	patch    *statuspatch.Patch  // the pass's status write, from before

	// observe
	claims    []scorev1b1.ResourceClaim // labelled for this Workload, ours or retained
	plan      *scorev1b1.WorkloadPlan
	exposure  *scorev1b1.WorkloadExposure
	denied    scorev1b1.Reason // a write to the plan or exposure the API server refused
	decided   bool             // the status below is complete and may be written
	conds     workloadstatus.Conditions
	summaries []scorev1b1.ClaimSummary
	endpoint  *string
	// namespaceDeleting: the namespace refuses new objects, events included.
	namespaceDeleting bool
	// handledRequest is the reconcile request this pass passed on to the claims and plan.
	handledRequest string
}

// Reconcile brings one Workload one step closer to its desired state.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	// 1. Get the Workload; a deleted one needs nothing.
	w := &scorev1b1.Workload{}
	if err := r.Client.Get(ctx, req.NamespacedName, w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !shard.Owns(r.Shard, w) {
		// Another shard's: its orchestrator answers for it, and this one forgets it.
		r.memory.forget(w.UID)
		r.readiness.forget(w.UID)
		return ctrl.Result{}, nil
	}
	// 2. Keep the status as read (or as we last wrote it, when the cache is behind);
	// 3. patch the computed status once at the end.
	w.Status = *r.memory.statusAsOf(w.UID, w.ResourceVersion, &w.Status)
	s := &scope{workload: w, patch: statuspatch.Begin(w), endpoint: w.Status.Endpoint}
	s.before = s.patch.Before().(*scorev1b1.Workload)
	defer func() {
		retErr = errors.Join(retErr, r.patchStatus(ctx, s))
	}()

	// 4. Deletion.
	if !w.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, s)
	}
	// Until the config source has made its first attempt, nothing is decided: the store's
	// notification brings every Workload back.
	if !r.Config.Settled() {
		return ctrl.Result{}, nil
	}
	// 5-8. Observe, decide, act.
	r.readiness.seen(w.UID, w.Generation, r.now())
	if err := r.observe(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.followShard(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.reconcileNormal(ctx, s); err != nil {
		if apierror.NamespaceTerminating(err) {
			// The namespace is being deleted, and the Workload with it: said once, and not
			// retried (no PermissionDenied, no backoff); the Workload's deletion brings it back.
			ctrl.LoggerFrom(ctx).V(1).Info("The namespace is being deleted; leaving the Workload to its deletion")
			deleting := workloadstatus.NamespaceDeleting()
			s.decide(workloadstatus.InputsValid(), deleting, deleting)
			s.summaries = s.workload.Status.Claims
			s.namespaceDeleting = true
			return ctrl.Result{}, nil
		}
		if errors.Is(err, errTooLarge) {
			ctrl.LoggerFrom(ctx).Info("The API server refused an object derived from the Workload for its size", "error", err.Error())
			s.specInvalid(workloadstatus.TooLarge().Message, 0)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	// A pass that completed hands a reconcile request on to the claims and the plan.
	return ctrl.Result{}, r.passOnReconcileRequest(ctx, s)
}

// patchStatus writes the computed status when it differs from what was read. An
// unconditional write would bump the resourceVersion, trigger the watch and loop; it would
// also break the promise of zero writes when nothing changed.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope) error {
	if !s.decided {
		return nil
	}
	w := s.workload
	now := metav1.NewTime(r.now())
	w.Status.Conditions = workloadstatus.Apply(s.before.Status.Conditions, s.conds, w.Generation, now)
	w.Status.Claims = s.summaries
	w.Status.Endpoint = s.endpoint
	w.Status.ObservedGeneration = w.Generation
	if s.handledRequest != "" {
		w.Status.LastHandledReconcileAt = s.handledRequest
	}
	if ready := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady); ready != nil {
		r.readiness.observe(w.UID, w.Generation, string(ready.Status), ready.Reason, now.Time)
	}
	if wrote, err := s.patch.Finish(ctx, r.Client, statusWrite{&r.memory, &w.Status}); !wrote || err != nil {
		return err
	}
	if s.endpoint != nil && (s.before.Status.Endpoint == nil || *s.before.Status.Endpoint != *s.endpoint) {
		mirrorResults.WithLabelValues("mirrored").Inc()
	}
	r.emitTransitions(ctx, s)
	return nil
}

// emitTransitions logs every condition transition and records one event when Ready changes
// its status or reason: Ready carries the blocking reason, so each step of the lifecycle is
// one event, and nothing else is. The first status of a Workload is no transition: it is
// recorded only when it is a warning (a Workload invalid from the start), so a Workload on
// the main path costs two events (being deployed, Ready), not three. A namespace being deleted
// refuses events: the transition is logged only.
func (r *Reconciler) emitTransitions(ctx context.Context, s *scope) {
	log := ctrl.LoggerFrom(ctx)
	first := meta.FindStatusCondition(s.before.Status.Conditions, scorev1b1.ConditionReady) == nil
	for _, t := range workloadstatus.Transitions(s.before.Status.Conditions, s.workload.Status.Conditions) {
		log.Info("Condition changed", "type", t.Type, "status", t.Condition.Status, "reason", t.Condition.Reason)
		if t.Type != scorev1b1.ConditionReady {
			continue
		}
		eventType := "Normal"
		if t.Condition.Status == metav1.ConditionFalse && t.Condition.Reason != scorev1b1.ReasonClaimPending && t.Condition.Reason != scorev1b1.ReasonRuntimeProvisioning {
			eventType = "Warning"
		}
		if first && eventType == "Normal" || s.namespaceDeleting {
			continue
		}
		r.Recorder.Eventf(s.workload, nil, eventType, string(t.Condition.Reason), t.Type, "%s", t.Condition.Message)
	}
}

// pending reports whether an object the orchestrator created (kind and name, read into obj
// when asked) exists although the cache does not show it: taken on trust for pendingFor
// after its creation, then asked of the API server. One that is gone is forgotten, and
// created again by the caller.
func (r *Reconciler) pending(ctx context.Context, w *scorev1b1.Workload, kind, name string, obj client.Object) (bool, error) {
	now := r.now()
	switch r.memory.creation(w.UID, kind, name, now) {
	case notCreated:
		return false, nil
	case createdRecently:
		return true, nil
	}
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	switch err := reader.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: name}, obj); {
	case apierrors.IsNotFound(err):
		ctrl.LoggerFrom(ctx).Info("An object created earlier is gone before the cache showed it; creating it again", "kind", kind, "name", name)
		r.memory.seen(w.UID, kind, name)
		return false, nil
	case err != nil:
		return true, err
	}
	r.memory.created(w.UID, kind, name, now)
	return true, nil
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
