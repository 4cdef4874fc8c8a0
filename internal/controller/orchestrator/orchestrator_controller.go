// Package orchestrator is the orchestrator's Workload reconciler: the one writer of
// Workload.status. A pass reads the Workload, the Orchestrator Config and the claims, plan and
// exposure it owns (gather), asks the pure workloaddecision.From what to write and what the
// status is (it calls planner, selection, placement, mirror and workloadstatus), makes the
// writes it names (the writes feed their outcome back to the decision), and patches the
// status once, only when it changed.
package orchestrator

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/statuspatch"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/workers"
	"github.com/score-orchestrator/score-orchestrator/internal/shard"
	"github.com/score-orchestrator/score-orchestrator/internal/status/workloaddecision"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

// The orchestrator's permissions: it writes Workload status and finalizers, and the spec of
// claims, plans and exposures; it never writes their status.
//
// +kubebuilder:rbac:groups=score.dev,resources=workloads,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=score.dev,resources=workloads/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=score.dev,resources=workloads/finalizers,verbs=update
// +kubebuilder:rbac:groups=score.dev,resources=resourceclaims;workloadplans;workloadexposures,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
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
	// Concurrency is the most Workloads reconciled at once.
	Concurrency int
	// Workers moves the number reconciled at once up to Concurrency, with the API server's
	// room; nil: Concurrency, fixed.
	Workers *workers.Adaptive
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
	// ProgressHold is how long a status that only reports progress waits for the next step
	// (workloaddecision.Observed.ProgressHold); 0 writes every step at once.
	ProgressHold time.Duration

	memory    memory
	readiness readiness
}

// scope is one pass over one Workload: what it read and what its writes did
// (workloaddecision.Observed, filled by gather, then by each write), and its status write.
type scope struct {
	workloaddecision.Observed
	// patch is the pass's status write, from the Workload as read.
	patch *statuspatch.Patch
	// plan is the Workload's plan: as observed, or as the pass wrote it.
	plan *scorev1b1.WorkloadPlan
}

// Reconcile brings one Workload one step closer to its desired state. A pass reads everything
// it needs (gather), asks workloaddecision.From what to write, makes that write, adds what it
// did and asks again until nothing is left to write; then it writes the status decided, once,
// only when it changed (finish).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// Get the Workload; a deleted one needs nothing.
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
	deleting := !w.DeletionTimestamp.IsZero()
	// Until the config source has made its first attempt, nothing is decided: the store's
	// notification brings every Workload back. A deletion needs no config.
	if !deleting && !r.Config.Settled() {
		return ctrl.Result{}, nil
	}
	// Keep the status as read (or as we last wrote it, when the cache is behind): the status
	// is written once at the end, only when it differs.
	w.Status = *r.memory.statusAsOf(w.UID, w.ResourceVersion, &w.Status)
	s := &scope{patch: statuspatch.Begin(w)}
	s.Workload, s.Now, s.Region, s.ProgressHold = w, metav1.NewTime(r.now()), r.Region, r.ProgressHold
	if !deleting {
		r.readiness.seen(w.UID, w.Generation, s.Now.Time)
	}
	// 1. Read.
	if err := r.gather(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	// 2. Decide and write, until nothing is left to write.
	d := workloaddecision.From(s.Observed)
	for d.Next != workloaddecision.Done {
		r.act(ctx, s, d)
		d = workloaddecision.From(s.Observed)
	}
	// 3. The status, or, when it is held back, the pass that writes it.
	return ctrl.Result{RequeueAfter: d.RequeueAfter}, r.finish(ctx, s, d)
}

// act makes the write d names and records what it did in the pass's observations.
func (r *Reconciler) act(ctx context.Context, s *scope, d workloaddecision.Decision) {
	outcome := func(err error) *workloaddecision.Written { return &workloaddecision.Written{Err: err} }
	switch d.Next {
	case workloaddecision.HandOver:
		s.HandedOver = outcome(r.handOver(ctx, s, d.HandOver))
	case workloaddecision.AddFinalizer:
		s.Finalizer = outcome(r.addFinalizer(ctx, s))
	case workloaddecision.WriteClaims:
		r.writeClaims(ctx, s, d.Claims, d.Exposure)
	case workloaddecision.WriteExposure:
		if d.Exposure.Name != "" {
			s.copyWritten(workloaddecision.KindExposure, d.Exposure.Name, outcome(r.writeExposure(ctx, s, d.Exposure)))
			break
		}
		s.ExposureWritten = outcome(r.writeExposure(ctx, s, d.Exposure))
	case workloaddecision.WritePlan:
		if d.Plan.Name != "" {
			s.copyWritten(workloaddecision.KindPlan, d.Plan.Name, outcome(r.writePlan(ctx, s, d.Plan)))
			break
		}
		s.PlanWritten = outcome(r.writePlan(ctx, s, d.Plan))
	case workloaddecision.DeleteCopies:
		r.deleteCopies(ctx, s, d.Deletes)
	case workloaddecision.PassOn:
		s.PassedOn = outcome(r.passOn(ctx, s, d.PassOn))
	case workloaddecision.RemoveFinalizer:
		s.FinalizerRemoved = outcome(r.removeFinalizer(ctx, s))
	}
}

// finish ends the pass as decided: what it found is logged, and the status is written when it
// differs from what was read. An unconditional write would bump the resourceVersion, trigger
// the watch and loop; it would also break the promise of zero writes when nothing changed.
// Only a status written logs its transitions and records their events.
func (r *Reconciler) finish(ctx context.Context, s *scope, d workloaddecision.Decision) error {
	r.report(ctx, d)
	if d.RequeueAfter > 0 && d.Status == nil {
		ctrl.LoggerFrom(ctx).V(1).Info("Holding a status that only reports progress", "for", d.RequeueAfter)
	} else if d.RequeueAfter > 0 {
		ctrl.LoggerFrom(ctx).V(1).Info("Placing again when a failover may be due", "in", d.RequeueAfter)
	}
	if d.Status == nil {
		return d.Retry
	}
	w := s.Workload
	before := s.patch.Before().(*scorev1b1.Workload)
	w.Status = *d.Status
	if ready := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady); ready != nil {
		r.readiness.observe(w.UID, w.Generation, string(ready.Status), ready.Reason, s.Now.Time)
	}
	wrote, err := s.patch.Finish(ctx, r.Client, statusWrite{&r.memory, &w.Status})
	if !wrote || err != nil {
		return errors.Join(d.Retry, err)
	}
	if e := w.Status.Endpoint; e != nil && (before.Status.Endpoint == nil || *before.Status.Endpoint != *e) {
		mirrorResults.WithLabelValues("mirrored").Inc()
	}
	for _, t := range d.Transitions {
		ctrl.LoggerFrom(ctx).Info("Condition changed", "type", t.Type, "status", t.Condition.Status, "reason", t.Condition.Reason)
	}
	for _, e := range d.Events {
		r.record(w, e)
	}
	return d.Retry
}

// report logs what the pass found worth saying, and counts a rejected exposure URL.
func (r *Reconciler) report(ctx context.Context, d workloaddecision.Decision) {
	log := ctrl.LoggerFrom(ctx)
	if d.Rejected != "" {
		mirrorResults.WithLabelValues("rejected").Inc()
		log.Info("Ignored an invalid exposure URL", "reason", d.Rejected)
	}
	if len(d.Unresolved) > 0 {
		log.Info("Withholding the plan: outputs are not resolved", "placeholders", d.Unresolved)
	}
	if d.TooLarge != nil {
		log.Info("The API server refused an object derived from the Workload for its size", "error", d.TooLarge.Error())
	}
	if d.NamespaceDeleting {
		// Said once, and not retried (no PermissionDenied, no backoff); the Workload's
		// deletion brings it back.
		log.V(1).Info("The namespace is being deleted; leaving the Workload to its deletion")
	}
}

// record records an event on the Workload or its plan.
func (r *Reconciler) record(on runtime.Object, e workloaddecision.Event) {
	if r.Recorder != nil {
		r.Recorder.Eventf(on, nil, e.Type, e.Reason, e.Action, "%s", termtext.Escape(e.Message))
	}
}

// pending reports whether an object the orchestrator created (read into obj when asked)
// exists although the cache does not show it: taken on trust for pendingFor after its
// creation, then asked of the API server. One that is gone is forgotten, and created again.
func (r *Reconciler) pending(ctx context.Context, w *scorev1b1.Workload, ref workloaddecision.Ref, obj client.Object) (bool, error) {
	now := r.now()
	switch r.memory.creation(w.UID, ref, now) {
	case notCreated:
		return false, nil
	case createdRecently:
		return true, nil
	}
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	switch err := reader.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: ref.Name}, obj); {
	case apierrors.IsNotFound(err):
		ctrl.LoggerFrom(ctx).Info("An object created earlier is gone before the cache showed it; creating it again", "kind", ref.Kind, "name", ref.Name)
		r.memory.seen(w.UID, ref)
		return false, nil
	case err != nil:
		return true, err
	}
	r.memory.created(w.UID, ref, now)
	return true, nil
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
