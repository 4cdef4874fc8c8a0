// Package runtime is the Kubernetes runtime (runtimeClass kubernetes): it renders each
// WorkloadPlan's template, server-side-applies the result, judges its health with kstatus,
// writes WorkloadPlan.status and publishes endpoints in WorkloadExposure.status. It never
// writes Workload.status.
package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/apierror"
	"github.com/score-orchestrator/score-orchestrator/internal/apply"
	"github.com/score-orchestrator/score-orchestrator/internal/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/clusters/members"
	"github.com/score-orchestrator/score-orchestrator/internal/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/statuspatch"
	"github.com/score-orchestrator/score-orchestrator/internal/health"
	"github.com/score-orchestrator/score-orchestrator/internal/inventory"
	"github.com/score-orchestrator/score-orchestrator/internal/ownwrites"
	"github.com/score-orchestrator/score-orchestrator/internal/prepare"
	"github.com/score-orchestrator/score-orchestrator/internal/render"
	"github.com/score-orchestrator/score-orchestrator/internal/shard"
	"github.com/score-orchestrator/score-orchestrator/internal/templates"
)

// The runtime's permissions: it writes plan and exposure status (never their spec, never a
// Workload) and the kinds the default templates create.
//
// +kubebuilder:rbac:groups=score.dev,resources=workloadplans;workloadexposures,verbs=get;list;watch
// +kubebuilder:rbac:groups=score.dev,resources=workloadplans,verbs=patch
// +kubebuilder:rbac:groups=score.dev,resources=workloadplans/status;workloadexposures/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=score.dev,resources=workloadplans/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps;services;secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways,verbs=get;list;watch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get

// Reconciler reconciles WorkloadPlans of runtime class kubernetes.
type Reconciler struct {
	Client    client.Client
	Templates *templates.Source
	// Recorder writes events on the plan (optional).
	Recorder recorder.EventRecorder
	// Config supplies the health rules and the allowed kinds; kstatus judges alone, and the
	// default kinds are allowed, until a config is loaded.
	Config *configsource.Store
	// Secrets reads the claims' outputs Secrets for files composed with secret outputs,
	// without caching them (default: Client), and is asked about an outputs Secret the
	// metadata cache does not hold yet.
	Secrets client.Reader
	// Concurrency is the number of plans reconciled at once.
	Concurrency int
	// Shard selects the plans this instance applies; nil: every plan.
	Shard labels.Selector
	// Namespace is the control plane's, where member clusters are registered; empty applies
	// on the hub only.
	Namespace string

	applier *apply.Applier
	// routes watches the routes and Ingresses a plan's dependencies provisioned (labelled
	// with their instance, not the Workload).
	routes  *apply.Watcher
	blocked blocked
	// members are the registered member clusters; clusterChanged brings back the plans of one
	// that started or stopped answering.
	members        *members.Pool
	clusterChanged chan event.GenericEvent
	// written tells a cached plan older than this controller's last status write.
	written ownwrites.Tracker
}

// Reconcile renders, applies and judges one plan.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	p := &scorev1b1.WorkloadPlan{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if p.Spec.RuntimeClass != scorev1b1.RuntimeClassKubernetes {
		return ctrl.Result{}, nil
	}
	if !shard.Owns(r.Shard, p) {
		// Another shard's (its Workload's): that shard's runtime answers for it.
		r.blocked.clear(req.NamespacedName)
		r.written.Forget(p.UID)
		return ctrl.Result{}, nil
	}
	if !p.DeletionTimestamp.IsZero() {
		r.blocked.clear(req.NamespacedName)
		return ctrl.Result{}, r.release(ctx, p)
	}
	if r.written.Stale(p) {
		return ctrl.Result{}, nil
	}
	if p.Spec.Cluster != "" && r.members.Pending(ctx, p.Spec.Cluster) {
		return ctrl.Result{}, nil // the cluster's first probe brings the plan back
	}
	patch := statuspatch.Begin(p)
	before := patch.Before().(*scorev1b1.WorkloadPlan)
	defer func() {
		wrote, err := patch.Finish(ctx, r.Client, &r.written)
		retErr = errors.Join(retErr, err)
		if wrote && (before.Status.Phase != p.Status.Phase || before.Status.Reason != p.Status.Reason) {
			ctrl.LoggerFrom(ctx).Info("Phase changed", "phase", p.Status.Phase, "reason", p.Status.Reason)
		}
	}()
	if p.Status.Phase == "" {
		p.Status.Phase = scorev1b1.PlanPhasePending
	}

	tpl, err := r.Templates.Get(ctx, p.Spec.Template)
	if err != nil {
		message := fmt.Sprintf("The template %s cannot be used: %v", p.Spec.Template.Ref, err)
		if errors.Is(err, templates.ErrDigestMismatch) && r.Recorder != nil && before.Status.Message != message {
			// A supply-chain failure, said once on the transition: nothing of it was applied
			// and the verified cached copy, if any, stays.
			r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, "TemplateDigestMismatch", "Fetch", "%s", message)
		}
		r.fail(p, scorev1b1.ReasonRuntimeProvisioning, message)
		return ctrl.Result{}, fmt.Errorf("template: %w", err)
	}
	revision, err := r.secretsRevision(ctx, p)
	if err != nil {
		return ctrl.Result{}, err // an outputs Secret not readable yet: its watch brings the plan back
	}
	objs, err := render.Render(render.Input{Workload: p.Spec.WorkloadRef.Name, Namespace: p.Namespace, Spec: &p.Spec, Template: tpl,
		SecretValue: r.secretValue(ctx, p), SecretsRevision: revision})
	if err != nil {
		r.fail(p, scorev1b1.ReasonRuntimeProvisioning, fmt.Sprintf("Rendering failed: %v", err))
		return ctrl.Result{}, nil // the plan or the template must change; their watches bring it back
	}
	p.Status.Phase = scorev1b1.PlanPhasePlanning

	tgt, err := r.members.Target(p.Spec.Cluster, p.Namespace, r.applier)
	if err != nil {
		r.clusterUnreachable(p, err)
		return ctrl.Result{}, nil // the cluster's registration or its next answer brings the plan back
	}
	marks := prepare.PlanMarks(p)
	if tgt.Cluster != "" {
		// No owner reference crosses clusters: the identity marks and the inventory carry
		// ownership, and the plan is held before anything reaches the member. The outputs
		// Secrets go with the objects that consume them.
		marks.Controller = nil
		copies, err := r.outputsCopies(ctx, p)
		if err != nil {
			return ctrl.Result{}, err // an outputs Secret not readable yet: its watch brings the plan back
		}
		objs = append(copies, objs...)
		if err := r.hold(ctx, p); err != nil {
			return ctrl.Result{}, err
		}
		if err := tgt.Member.EnsureNamespace(ctx, p.Namespace); errors.Is(err, members.ErrNotPlaceable) {
			// Retried with backoff: the platform's label on the member's namespace lifts it,
			// and nothing on the hub watches that.
			r.fail(p, scorev1b1.ReasonPermissionDenied, err.Error())
			return ctrl.Result{}, fmt.Errorf("placing on cluster %s refused, retrying with backoff: %w", tgt.Cluster, err)
		} else if reason, denied := apierror.Reason(err); denied {
			r.fail(p, reason, fmt.Sprintf("The API server refused placing on cluster %s: %v", tgt.Cluster, err))
			return ctrl.Result{}, fmt.Errorf("placing on cluster %s refused, retrying with backoff: %w", tgt.Cluster, err)
		} else if err != nil {
			return r.remoteFailed(p, tgt, err)
		}
	}
	res, err := tgt.Applier.Apply(ctx, objs, marks)
	clusters.Tag(res.Objects, tgt.Cluster)
	if err != nil && tgt.Cluster != "" && len(res.Objects) > 0 {
		// What reached the member before the failure is listed, for a later prune or release.
		previous, elsewhere := clusters.Split(p.Status.Objects, tgt.Cluster)
		p.Status.Objects = append(inventory.Union(previous, res.Objects), elsewhere...)
	}
	if err != nil {
		var owned *apply.OwnedElsewhere
		switch reason, denied := apierror.Reason(err); {
		case apierror.NamespaceTerminating(err):
			// The namespace is being deleted, and the plan with it: nothing to report or retry.
			return ctrl.Result{}, nil
		case errors.As(err, &owned):
			r.refuseConflict(ctx, p, before, owned)
			return ctrl.Result{}, nil // the object's deletion brings the plan back (blocked)
		case errors.Is(err, prepare.ErrNotAllowed):
			// Terminal until the template or the config changes; both are watched.
			r.fail(p, scorev1b1.ReasonPermissionDenied, err.Error())
			return ctrl.Result{}, nil
		case denied:
			r.fail(p, reason, fmt.Sprintf("The API server refused an object: %v", err))
			return ctrl.Result{}, fmt.Errorf("apply refused, retrying with backoff: %w", err)
		case tgt.Cluster != "":
			return r.remoteFailed(p, tgt, err)
		default:
			// Reported, and retried with backoff: a transient failure clears on the next try,
			// and a kind not served yet may be installed.
			r.fail(p, scorev1b1.ReasonRuntimeProvisioning, fmt.Sprintf("Applying failed: %v", err))
			return ctrl.Result{}, fmt.Errorf("apply failed, retrying with backoff: %w", err)
		}
	}
	r.blocked.clear(client.ObjectKeyFromObject(p))
	if err := r.holdClusterScoped(ctx, p, res.Objects); err != nil {
		return ctrl.Result{}, err
	}
	// What the plan applied on another cluster (it moved) stays listed until it is deleted.
	previous, elsewhere := clusters.Split(p.Status.Objects, tgt.Cluster)
	if !res.Complete() {
		// Definitions applied, the rest waits for them to be served; their watch brings the
		// plan back. Nothing is pruned: the render is not applied completely.
		p.Status.Objects = append(inventory.Union(previous, res.Objects), elsewhere...)
		message := "Waiting for " + strings.Join(res.Waiting, ", ") + " to be established."
		setCondition(p, scorev1b1.PlanConditionApplied, metav1.ConditionFalse, scorev1b1.PlanReasonInProgress, message)
		p.Status.Reason, p.Status.Message = "", message
		return ctrl.Result{}, nil
	}
	applied := res.Objects
	for _, live := range res.Live {
		limit, _ := strconv.Atoi(live.GetAnnotations()[scorev1b1.AnnotationHistoryLimit])
		history, err := tgt.Applier.KeepRuns(ctx, live, limit, marks)
		if err != nil {
			return ctrl.Result{}, err
		}
		applied = append(applied, clusters.Tag(history, tgt.Cluster)...)
	}
	if err := tgt.Applier.Prune(ctx, previous, applied, nil); err != nil {
		return ctrl.Result{}, err
	}
	pending := inventory.NotCurrent(applied)
	if len(elsewhere) > 0 && len(pending) == 0 {
		// A move: the earlier cluster's objects go once everything is healthy here.
		if elsewhere, err = r.leave(ctx, p, elsewhere); err != nil {
			return ctrl.Result{}, err
		}
	}
	p.Status.Objects = append(applied, elsewhere...)
	p.Status.ObservedGeneration = p.Generation
	setCondition(p, scorev1b1.PlanConditionApplied, metav1.ConditionTrue, scorev1b1.PlanReasonApplied, fmt.Sprintf("%d objects applied%s.", len(applied), tgt.Where()))
	p.Status.Reason, p.Status.Message = "", ""

	state := runtimeHealthy
	switch {
	case len(pending) == 0:
		p.Status.Phase = scorev1b1.PlanPhaseProjected
		setCondition(p, scorev1b1.PlanConditionHealthy, metav1.ConditionTrue, scorev1b1.PlanReasonCurrent, "Every object is healthy.")
	case before.Status.Phase == scorev1b1.PlanPhaseProjected && before.Status.ObservedGeneration == p.Generation && health.Serving(res.Live):
		// It was healthy for this very plan and still serves: degraded, not provisioning
		// (a lost replica, a node gone), so the Workload stays Ready and says so.
		state = runtimeDegraded
		p.Status.Phase = scorev1b1.PlanPhaseProjected
		setCondition(p, scorev1b1.PlanConditionHealthy, metav1.ConditionFalse, scorev1b1.PlanReasonDegraded, "Serving, but waiting for "+strings.Join(pending, ", ")+".")
	default:
		state = runtimeProvisioning
		setCondition(p, scorev1b1.PlanConditionHealthy, metav1.ConditionFalse, scorev1b1.PlanReasonInProgress, "Waiting for "+strings.Join(pending, ", ")+".")
	}
	return ctrl.Result{}, r.publishExposure(ctx, p, tgt, res.Live, state)
}

// secretsRevision identifies the versions of the outputs Secrets the plan's pods consume:
// 16 hex characters of their UIDs and resource versions, or "" when there are none. A
// rotated secret (rewritten) or a replaced one (a claim reset) changes it, and so rolls the
// pods; nothing of the values goes into it. The metadata comes from the cache of the Secrets
// watch (a rewrite the cache has not seen yet brings the plan back when it arrives); an
// absence is asked of Secrets, as a Secret created a moment ago may not be cached yet.
func (r *Reconciler) secretsRevision(ctx context.Context, p *scorev1b1.WorkloadPlan) (string, error) {
	h := sha256.New()
	found := false
	for _, c := range p.Spec.Claims {
		if c.SecretName == "" {
			continue
		}
		s := &metav1.PartialObjectMetadata{}
		s.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		key := client.ObjectKey{Namespace: p.Namespace, Name: c.SecretName}
		err := r.Client.Get(ctx, key, s)
		if apierrors.IsNotFound(err) && r.Secrets != nil {
			err = r.Secrets.Get(ctx, key, s)
		}
		if err != nil {
			return "", fmt.Errorf("reading the outputs of %s: %w", c.Key, err)
		}
		fmt.Fprintf(h, "%s/%s/%s\n", c.Key, s.UID, s.ResourceVersion)
		found = true
	}
	if !found {
		return "", nil
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// secretValue reads a secret output from the outputs Secret of the plan's claim.
func (r *Reconciler) secretValue(ctx context.Context, p *scorev1b1.WorkloadPlan) render.SecretValue {
	reader := r.Secrets
	if reader == nil {
		reader = r.Client
	}
	return func(ref scorev1b1.OutputRef) (string, error) {
		for _, c := range p.Spec.Claims {
			if c.Key != ref.ClaimKey {
				continue
			}
			s := &corev1.Secret{}
			if err := reader.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: c.SecretName}, s); err != nil {
				return "", fmt.Errorf("reading the outputs of %s: %w", ref.ClaimKey, err)
			}
			v, ok := s.Data[ref.OutputKey]
			if !ok {
				return "", fmt.Errorf("the outputs of %s have no %s", ref.ClaimKey, ref.OutputKey)
			}
			return string(v), nil
		}
		return "", fmt.Errorf("no claim %s in the plan", ref.ClaimKey)
	}
}

func (r *Reconciler) fail(p *scorev1b1.WorkloadPlan, reason scorev1b1.Reason, message string) {
	p.Status.Phase, p.Status.Reason, p.Status.Message = scorev1b1.PlanPhaseFailed, reason, message
	p.Status.ObservedGeneration = p.Generation
	setCondition(p, scorev1b1.PlanConditionApplied, metav1.ConditionFalse, string(reason), message)
}

func setCondition(p *scorev1b1.WorkloadPlan, typ string, s metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: message, ObservedGeneration: p.Generation})
}

// refuseConflict fails the plan for an object that is not its Workload's, remembers that the
// object blocks the plan (its deletion brings the plan back), and, once per refusal, warns
// on the plan and on the Workload that owns the object.
func (r *Reconciler) refuseConflict(ctx context.Context, p, before *scorev1b1.WorkloadPlan, owned *apply.OwnedElsewhere) {
	message := owned.Error()
	r.fail(p, scorev1b1.ReasonPermissionDenied, message)
	if owned.OwnerValue != "" {
		// Another Workload's: the orchestrator says so on this plan's Workload. An object the
		// runtime did not create stays a plain PermissionDenied.
		setCondition(p, scorev1b1.PlanConditionApplied, metav1.ConditionFalse, scorev1b1.PlanReasonObjectConflict, message)
	}
	r.blocked.add(blockingKey(owned.GroupKind, owned.Namespace, owned.Name), client.ObjectKeyFromObject(p))
	if r.Recorder == nil || before.Status.Message == message {
		return
	}
	ctrl.LoggerFrom(ctx).Info("Refused an object another workload owns", "kind", owned.GroupKind.Kind, "name", owned.Name, "owner", owned.OwnerName)
	r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, scorev1b1.PlanReasonObjectConflict, "Apply", "%s", message)
	if owned.OwnerValue != "" && owned.OwnerName != "" {
		owner := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: owned.OwnerName, UID: types.UID(owned.OwnerValue)}}
		owner.SetGroupVersionKind(scorev1b1.GroupVersion.WithKind("Workload"))
		r.Recorder.Eventf(owner, nil, corev1.EventTypeWarning, scorev1b1.PlanReasonObjectConflict, "Apply",
			"Workload %q would create an object this workload owns; it was refused, and this workload is unaffected.", p.Spec.WorkloadRef.Name)
	}
}

// holdClusterScoped adds the finalizer when the plan applied a cluster-scoped object or an
// object on a member cluster: owner references cross neither scopes nor clusters, so the
// runtime deletes those objects itself (release).
func (r *Reconciler) holdClusterScoped(ctx context.Context, p *scorev1b1.WorkloadPlan, applied []scorev1b1.AppliedObject) error {
	for _, o := range applied {
		if o.Namespace == "" || o.Cluster != "" {
			return r.hold(ctx, p)
		}
	}
	return nil
}

// hold adds the plan's finalizer, once.
func (r *Reconciler) hold(ctx context.Context, p *scorev1b1.WorkloadPlan) error {
	if controllerutil.ContainsFinalizer(p, scorev1b1.PlanFinalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(p.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(p, scorev1b1.PlanFinalizer)
	status := p.Status
	if err := r.Client.Patch(ctx, p, patch); err != nil {
		return fmt.Errorf("adding the finalizer: %w", err)
	}
	p.Status = status // the patch response carries the stored status; ours is newer
	return nil
}

// release deletes a deleted plan's cluster-scoped objects and everything it applied on member
// clusters (its namespaced objects on the hub go with it by owner reference) and lets it go.
// A member that does not answer holds the plan, which says so; a member no longer registered
// has been let go of explicitly, and its objects are abandoned with an event.
func (r *Reconciler) release(ctx context.Context, p *scorev1b1.WorkloadPlan) error {
	if !controllerutil.ContainsFinalizer(p, scorev1b1.PlanFinalizer) {
		return nil
	}
	var owned []scorev1b1.AppliedObject
	for _, o := range p.Status.Objects {
		if o.Namespace == "" || o.Cluster != "" {
			owned = append(owned, o)
		}
	}
	kept, err := r.leave(ctx, p, owned)
	if err != nil {
		return err
	}
	if len(kept) > 0 {
		message := fmt.Sprintf("Deletion waits for cluster %s to answer: %d objects of the workload are there.", kept[0].Cluster, len(kept))
		if c := meta.FindStatusCondition(p.Status.Conditions, scorev1b1.PlanConditionApplied); c == nil || c.Message != message {
			patch := client.MergeFrom(p.DeepCopy())
			setCondition(p, scorev1b1.PlanConditionApplied, metav1.ConditionFalse, scorev1b1.PlanReasonClusterUnreachable, message)
			p.Status.Message = message
			if err := r.Client.Status().Patch(ctx, p, patch); err != nil {
				return client.IgnoreNotFound(err)
			}
		}
		return nil // the cluster's next answer brings the plan back
	}
	patch := client.MergeFrom(p.DeepCopy())
	controllerutil.RemoveFinalizer(p, scorev1b1.PlanFinalizer)
	r.written.Forget(p.UID)
	return client.IgnoreNotFound(r.Client.Patch(ctx, p, patch))
}
