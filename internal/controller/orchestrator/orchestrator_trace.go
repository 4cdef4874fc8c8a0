package orchestrator

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/statuspatch"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/shard"
	"github.com/score-orchestrator/score-orchestrator/internal/status/why"
)

// +kubebuilder:rbac:groups=score.dev,resources=workloadtraces,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=score.dev,resources=workloadtraces/status,verbs=patch

// Tracer answers WorkloadTraces: a tenant's request for the decision trace of a Workload of
// its namespace, which it may not compute itself (it may not read the config or the internal
// kinds). The orchestrator holds both; the answer is why.Answer of what a pass of the Workload
// reads, as cached: what concerns that Workload only. A request is answered once, removed Keep
// after, and a namespace holds at most scorev1b1.MaxWorkloadTraces (why.StepFor decides). It
// reads nothing the orchestrator does not read already.
type Tracer struct {
	Client client.Client
	// APIReader reads a Workload the cache does not hold: another shard's, or one too new.
	APIReader client.Reader
	Config    *configsource.Store
	// Region is the orchestrator's, for backends restricted to regions.
	Region string
	// Shard selects the Workloads this instance answers for; nil: every Workload.
	Shard labels.Selector
	// Namespace is the control plane's, where the member clusters' status is published.
	Namespace string
	// Keep is how long an answered request is kept for its asker (why.KeepAnswered when 0).
	Keep time.Duration
	// clusters caches that status (the orchestrator's cache of it).
	clusters client.Reader
	// Now is the clock; tests inject one.
	Now func() time.Time
}

// Reconcile takes one WorkloadTrace one step: removes it (beyond its namespace's bound, or
// answered a while ago), or answers it, once.
func (r *Tracer) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// Get the request; a removed one needs nothing.
	t := &scorev1b1.WorkloadTrace{}
	if err := r.Client.Get(ctx, req.NamespacedName, t); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !t.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	// Decide from the namespace's requests, as cached.
	var all scorev1b1.WorkloadTraceList
	if err := r.Client.List(ctx, &all, client.InNamespace(t.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the namespace's traces: %w", err)
	}
	step := why.StepFor(t, all.Items, r.now(), r.keep())
	if step.Answer {
		// The cache may not show yet the requests made just before this one, and a request
		// answered must be one of its namespace's first MaxWorkloadTraces: the bound is
		// judged again from the API server before the work of an answer is done.
		if err := r.APIReader.List(ctx, &all, client.InNamespace(t.Namespace)); err != nil {
			return ctrl.Result{}, fmt.Errorf("listing the namespace's traces: %w", err)
		}
		step = why.StepFor(t, all.Items, r.now(), r.keep())
	}
	switch {
	case step.Remove:
		return ctrl.Result{}, r.remove(ctx, t)
	case !step.Answer:
		return ctrl.Result{RequeueAfter: step.After}, nil
	}
	// Until the config source has made its first attempt, nothing is answered: the store's
	// notification brings the unanswered requests back.
	if !r.Config.Settled() {
		return ctrl.Result{}, nil
	}
	// Read what a pass of the Workload reads, then answer.
	patch := statuspatch.Begin(t)
	in, found, mine, err := r.gather(ctx, t)
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case !mine:
		return ctrl.Result{}, nil // another shard's Workload: its orchestrator answers
	case !found:
		notAnswered(t, scorev1b1.TraceReasonWorkloadNotFound, fmt.Sprintf("Namespace %s has no Workload %s.", t.Namespace, t.Spec.Workload), r.now())
	case in.Config == nil:
		notAnswered(t, scorev1b1.TraceReasonConfigNotLoaded, "The orchestrator has no valid Orchestrator Config loaded: no decision can be traced.", r.now())
	default:
		tr, err := why.Answer(in)
		if err != nil {
			return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("tracing Workload %s: %w", t.Spec.Workload, err))
		}
		answered(t, tr, r.now())
	}
	// One write, the answer; at the version read, so that of two instances answering at once
	// (shards, for a Workload that does not exist) one writes: the other's conflict means the
	// request was answered, and it comes back when due for removal.
	if _, err := patch.Finish(ctx, r.Client, nil, statuspatch.AtVersionRead()); err != nil && !apierrors.IsConflict(err) {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: r.keep()}, nil
}

// gather reads the Workload the request names and everything its trace is computed from, as
// cached: the config, its claims, plans and exposure, the clusters, its namespace. found is
// false when the namespace has no Workload of that name; mine false when it is another shard's.
func (r *Tracer) gather(ctx context.Context, t *scorev1b1.WorkloadTrace) (in why.Input, found, mine bool, err error) {
	key := client.ObjectKey{Namespace: t.Namespace, Name: t.Spec.Workload}
	w := &scorev1b1.Workload{}
	err = r.Client.Get(ctx, key, w)
	if apierrors.IsNotFound(err) {
		// The cache holds this shard's Workloads only, and may not show a new one yet.
		err = r.APIReader.Get(ctx, key, w)
	}
	switch {
	case apierrors.IsNotFound(err):
		return in, false, true, nil
	case err != nil:
		return in, false, false, fmt.Errorf("reading Workload %s: %w", key.Name, err)
	case !shard.Owns(r.Shard, w):
		return in, true, false, nil
	}
	in = why.Input{Workload: w, Region: r.Region, Now: r.now(), Observed: why.Observed{}}
	if loaded, ok := r.Config.Get(); ok {
		in.Config, in.ConfigRevision = loaded.Config, loaded.Revision
	}
	var claims scorev1b1.ResourceClaimList
	if err := r.Client.List(ctx, &claims, client.InNamespace(w.Namespace), client.MatchingFields{indexWorkload: w.Name}); err != nil {
		return in, true, true, fmt.Errorf("listing claims: %w", err)
	}
	in.Claims = claims.Items
	var plans scorev1b1.WorkloadPlanList
	if err := r.Client.List(ctx, &plans, client.InNamespace(w.Namespace), client.MatchingFields{indexWorkload: w.Name}); err != nil {
		return in, true, true, fmt.Errorf("listing plans: %w", err)
	}
	for i := range plans.Items {
		if p := &plans.Items[i]; p.Name == w.Name && metav1.IsControlledBy(p, w) {
			in.Plan = p
		}
	}
	in.Copies = why.CopiesOf(w, plans.Items)
	exposure := &scorev1b1.WorkloadExposure{}
	switch err := r.Client.Get(ctx, key, exposure); {
	case err == nil:
		in.Exposure = exposure
	case !apierrors.IsNotFound(err):
		return in, true, true, fmt.Errorf("reading the exposure: %w", err)
	}
	if in.Config != nil && placesOnMembers(in.Config) && r.clusters != nil {
		cm := &corev1.ConfigMap{}
		if err := r.clusters.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: clusters.StatusConfigMap}, cm); client.IgnoreNotFound(err) != nil {
			return in, true, true, fmt.Errorf("reading the clusters: %w", err)
		}
		in.Clusters = clusters.Decode(cm)
	}
	// The namespace's metadata, as the Workload controller caches it: whether it is a preview.
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Client.Get(ctx, client.ObjectKey{Name: w.Namespace}, ns); err == nil {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Namespace")
		u.SetName(ns.Name)
		u.SetLabels(ns.Labels)
		u.SetAnnotations(ns.Annotations)
		u.SetCreationTimestamp(ns.CreationTimestamp)
		in.Observed[why.NamespaceRead(in)] = why.Result{Objects: []*unstructured.Unstructured{u}}
	}
	return in, true, true, nil
}

// remove deletes the request, as read (a UID precondition: never a newer one of its name).
func (r *Tracer) remove(ctx context.Context, t *scorev1b1.WorkloadTrace) error {
	ctrl.LoggerFrom(ctx).V(1).Info("Removing a WorkloadTrace", "workload", t.Spec.Workload)
	if err := r.Client.Delete(ctx, t, client.Preconditions{UID: &t.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("removing WorkloadTrace %s: %w", t.Name, err)
	}
	return nil
}

func (r *Tracer) keep() time.Duration {
	if r.Keep > 0 {
		return r.Keep
	}
	return why.KeepAnswered
}

func (r *Tracer) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// answered sets the answer: the trace, and Answered True.
func answered(t *scorev1b1.WorkloadTrace, tr scorev1b1.Trace, now time.Time) {
	t.Status.Trace = &tr
	meta.SetStatusCondition(&t.Status.Conditions, metav1.Condition{Type: scorev1b1.TraceConditionAnswered, Status: metav1.ConditionTrue,
		Reason: scorev1b1.TraceReasonAnswered, Message: fmt.Sprintf("The trace of Workload %s at generation %d.", t.Spec.Workload, tr.Generation),
		LastTransitionTime: metav1.NewTime(now)})
}

// notAnswered says why there is no trace to give: Answered False.
func notAnswered(t *scorev1b1.WorkloadTrace, reason, message string, now time.Time) {
	t.Status.Trace = nil
	meta.SetStatusCondition(&t.Status.Conditions, metav1.Condition{Type: scorev1b1.TraceConditionAnswered, Status: metav1.ConditionFalse,
		Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(now)})
}
