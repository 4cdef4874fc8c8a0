// Package plan is the Kubernetes runtime (runtimeClass kubernetes): it renders each
// WorkloadPlan's template, server-side-applies the result, judges its health with kstatus,
// writes WorkloadPlan.status and publishes endpoints in WorkloadExposure.status. It never
// writes Workload.status.
package plan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/apidenial"
	"github.com/score-orchestrator/score-orchestrator/internal/applyguard"
	"github.com/score-orchestrator/score-orchestrator/internal/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/objectwatch"
	"github.com/score-orchestrator/score-orchestrator/internal/health"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/ownwrites"
	"github.com/score-orchestrator/score-orchestrator/internal/render"
	"github.com/score-orchestrator/score-orchestrator/internal/runnable"
)

// Names the runtime puts on what it applies.
const (
	// FieldManager is the server-side apply field manager of applied objects.
	FieldManager = "score-runtime"
	// AnnotationWorkloadUID marks every applied object with the Workload it belongs to; an
	// object marked for another Workload is never taken over.
	AnnotationWorkloadUID = "score.dev/workload-uid"
	// Finalizer holds a plan that applied cluster-scoped objects until they are deleted:
	// owner references cannot cross scopes, so garbage collection would not.
	Finalizer = "workloadplans.score.dev/runtime"
	// AnnotationHistoryLimit on a run says how many runs to keep, itself included.
	AnnotationHistoryLimit = "score.dev/history-limit"
	// RuntimeClass is the runtime class this controller serves.
	RuntimeClass = "kubernetes"
	// ConditionApplied and ConditionHealthy are the plan's detailed conditions.
	ConditionApplied = scorev1b1.PlanConditionApplied
	ConditionHealthy = "Healthy"
)

// errConflict is an object the plan may not apply: of a kind or in a namespace the platform
// does not allow, or one that exists and belongs to another Workload (an *ownedElsewhere).
var errConflict = errors.New("not the plan's to apply")

// notAllowed is an object of a kind or in a namespace the platform does not allow.
type notAllowed string

func (e notAllowed) Error() string { return string(e) }

func (e notAllowed) Unwrap() error { return errConflict }

// ownedElsewhere is an object the plan renders that exists and is not its Workload's.
type ownedElsewhere struct {
	gk        schema.GroupKind
	namespace string
	name      string
	// ownerUID and ownerName are the Workload the object belongs to; both are empty for an
	// object the runtime did not create.
	ownerUID, ownerName string
}

func (e *ownedElsewhere) Error() string {
	return ConflictMessage(e.gk.Kind, e.name, e.ownerUID, e.ownerName)
}

func (e *ownedElsewhere) Unwrap() error { return errConflict }

// ConflictMessage is the plan's message when an object it renders, kind and name, exists
// and belongs to another Workload (ownerUID, and its name when the object says it), or was
// not created by the runtime (ownerUID empty).
func ConflictMessage(kind, name, ownerUID, ownerName string) string {
	switch {
	case ownerUID == "":
		return fmt.Sprintf("%s %s exists and was not created by the runtime", kind, name)
	case ownerName == "":
		return fmt.Sprintf("%s %s exists and belongs to another workload", kind, name)
	default:
		return fmt.Sprintf("%s %s exists and belongs to workload %s", kind, name, ownerName)
	}
}

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

// Reconciler reconciles WorkloadPlans of runtime class kubernetes.
type Reconciler struct {
	Client    client.Client
	Templates *Templates
	// Recorder writes events on the plan (optional).
	Recorder recorder.EventRecorder
	// Config supplies the health rules; kstatus judges alone until a config is loaded.
	Config *configsource.Store
	// Secrets reads the claims' outputs Secrets for files composed with secret outputs,
	// without caching them (default: Client), and is asked about an outputs Secret the
	// metadata cache does not hold yet.
	Secrets client.Reader
	// Concurrency is the number of plans reconciled at once.
	Concurrency int

	watcher *objectwatch.Watcher
	blocked blocked
	// written tells a cached plan older than this controller's last status write.
	written ownwrites.Tracker
}

// Reconcile renders, applies and judges one plan.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	p := &scorev1b1.WorkloadPlan{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if p.Spec.RuntimeClass != RuntimeClass {
		return ctrl.Result{}, nil
	}
	if !p.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.release(ctx, p)
	}
	if r.written.Stale(p) {
		return ctrl.Result{}, nil
	}
	before := p.DeepCopy()
	defer func() {
		// Written only when it changed: an unconditional write would loop through the watch.
		if equality.Semantic.DeepEqual(before.Status, p.Status) {
			return
		}
		if err := r.Client.Status().Patch(ctx, p, client.MergeFrom(before)); err != nil {
			retErr = errors.Join(retErr, client.IgnoreNotFound(err))
			return
		}
		r.written.Wrote(p.UID, before.ResourceVersion, p.ResourceVersion)
		if before.Status.Phase != p.Status.Phase || before.Status.Reason != p.Status.Reason {
			ctrl.LoggerFrom(ctx).Info("Phase changed", "phase", p.Status.Phase, "reason", p.Status.Reason)
		}
	}()
	if p.Status.Phase == "" {
		p.Status.Phase = scorev1b1.PlanPhasePending
	}

	tpl, err := r.Templates.Get(ctx, p.Spec.Template)
	if err != nil {
		message := fmt.Sprintf("The template %s cannot be used: %v", p.Spec.Template.Ref, err)
		if errors.Is(err, ErrDigestMismatch) && r.Recorder != nil && before.Status.Message != message {
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

	applied, live, err := r.apply(ctx, p, objs)
	if err != nil {
		var owned *ownedElsewhere
		switch reason, denied := apidenial.Classify(err); {
		case errors.As(err, &owned):
			r.refuseConflict(ctx, p, before, owned)
			return ctrl.Result{}, nil // the object's deletion brings the plan back (blocked)
		case errors.Is(err, errConflict):
			r.fail(p, scorev1b1.ReasonPermissionDenied, err.Error())
			return ctrl.Result{}, nil
		case denied:
			r.fail(p, reason, fmt.Sprintf("The API server refused an object: %v", err))
			return ctrl.Result{}, fmt.Errorf("apply refused, retrying with backoff: %w", err)
		default:
			// Reported, and retried with backoff: a transient failure clears on the next try.
			r.fail(p, scorev1b1.ReasonRuntimeProvisioning, fmt.Sprintf("Applying failed: %v", err))
			return ctrl.Result{}, fmt.Errorf("apply failed, retrying with backoff: %w", err)
		}
	}
	history, err := r.keepRuns(ctx, p, live)
	if err != nil {
		return ctrl.Result{}, err
	}
	applied = append(applied, history...)
	if err := r.holdClusterScoped(ctx, p, applied); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.prune(ctx, p, applied); err != nil {
		return ctrl.Result{}, err
	}
	p.Status.Objects = applied
	p.Status.ObservedGeneration = p.Generation
	setCondition(p, ConditionApplied, metav1.ConditionTrue, "Applied", fmt.Sprintf("%d objects applied.", len(applied)))
	p.Status.Reason, p.Status.Message = "", ""

	pending := notCurrent(applied)
	state := runtimeHealthy
	switch {
	case len(pending) == 0:
		p.Status.Phase = scorev1b1.PlanPhaseProjected
		setCondition(p, ConditionHealthy, metav1.ConditionTrue, "Current", "Every object is healthy.")
	case before.Status.Phase == scorev1b1.PlanPhaseProjected && before.Status.ObservedGeneration == p.Generation && health.Serving(live):
		// It was healthy for this very plan and still serves: degraded, not provisioning
		// (a lost replica, a node gone), so the Workload stays Ready and says so.
		state = runtimeDegraded
		p.Status.Phase = scorev1b1.PlanPhaseProjected
		setCondition(p, ConditionHealthy, metav1.ConditionFalse, "Degraded", "Serving, but waiting for "+strings.Join(pending, ", ")+".")
	default:
		state = runtimeProvisioning
		setCondition(p, ConditionHealthy, metav1.ConditionFalse, "InProgress", "Waiting for "+strings.Join(pending, ", ")+".")
	}
	return ctrl.Result{}, r.publishExposure(ctx, p, live, state)
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
	setCondition(p, ConditionApplied, metav1.ConditionFalse, string(reason), message)
}

func setCondition(p *scorev1b1.WorkloadPlan, typ string, s metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: message, ObservedGeneration: p.Generation})
}

// apply server-side-applies the objects in stage order, each marked with the Workload and
// owned by the plan, after checking that none belongs to another Workload. It returns the
// inventory with each object's health, and the objects as the API server now has them.
func (r *Reconciler) apply(ctx context.Context, p *scorev1b1.WorkloadPlan, objs []*unstructured.Unstructured) ([]scorev1b1.AppliedObject, []*unstructured.Unstructured, error) {
	uid := p.Spec.WorkloadRef.UID
	live := make([]*unstructured.Unstructured, len(objs))
	for i, u := range objs {
		gvk := u.GroupVersionKind()
		mapping, err := r.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, nil, fmt.Errorf("%s %s: the kind is not served: %w", u.GetKind(), u.GetName(), err)
		}
		if !r.kindAllowed(gvk.GroupKind()) {
			return nil, nil, notAllowed(fmt.Sprintf("%s %s is of a kind the platform does not let templates create (allowedKinds)", u.GetKind(), u.GetName()))
		}
		clusterScoped := mapping.Scope.Name() != meta.RESTScopeNameNamespace
		switch ns := u.GetNamespace(); {
		case clusterScoped:
			u.SetNamespace("")
		case ns != "" && ns != p.Namespace:
			return nil, nil, notAllowed(fmt.Sprintf("%s %s targets namespace %s", u.GetKind(), u.GetName(), ns))
		default:
			u.SetNamespace(p.Namespace)
		}
		existing := &unstructured.Unstructured{}
		existing.SetGroupVersionKind(gvk)
		switch err := r.watcher.Get(ctx, r.Client, client.ObjectKeyFromObject(u), existing); {
		case err == nil:
			if owner := existing.GetAnnotations()[AnnotationWorkloadUID]; owner != uid {
				owned := &ownedElsewhere{gk: gvk.GroupKind(), namespace: existing.GetNamespace(), name: u.GetName(), ownerUID: owner}
				if owner != "" {
					owned.ownerName = existing.GetLabels()[scorev1b1.LabelWorkload]
				}
				return nil, nil, owned
			}
			live[i] = existing
		case !apierrors.IsNotFound(err):
			return nil, nil, err
		}
		anns := u.GetAnnotations()
		if anns == nil {
			anns = map[string]string{}
		}
		anns[AnnotationWorkloadUID] = uid
		u.SetAnnotations(anns)
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[scorev1b1.LabelWorkload] = p.Spec.WorkloadRef.Name
		u.SetLabels(labels)
		if clusterScoped {
			continue // no owner reference across scopes: the plan's finalizer deletes it
		}
		if err := controllerutil.SetControllerReference(p, u, r.Client.Scheme()); err != nil {
			return nil, nil, err
		}
	}
	applied := make([]scorev1b1.AppliedObject, 0, len(objs))
	current := make([]*unstructured.Unstructured, 0, len(objs))
	for i, u := range objs {
		// Watched before it is applied, so no change after the apply can be missed. The read
		// above came from the API server the first time a kind was seen, so a kind the
		// runtime may not read was refused there, before any watch.
		r.watcher.Ensure(ctx, u.GroupVersionKind())
		if applyguard.Unchanged(u, live[i]) {
			u = live[i] // nothing to write: a no-op apply is still a write
		} else if err := r.Client.Patch(ctx, u, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			return nil, nil, fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		state, message := r.Config.Health().Judge(u)
		applied = append(applied, scorev1b1.AppliedObject{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), Health: state, Message: message})
		current = append(current, u)
	}
	return applied, current, nil
}

// refuseConflict fails the plan for an object that is not its Workload's, remembers that the
// object blocks the plan (its deletion brings the plan back), and, once per refusal, warns
// on the plan and on the Workload that owns the object.
func (r *Reconciler) refuseConflict(ctx context.Context, p, before *scorev1b1.WorkloadPlan, owned *ownedElsewhere) {
	message := owned.Error()
	r.fail(p, scorev1b1.ReasonPermissionDenied, message)
	if owned.ownerUID != "" {
		// Another Workload's: the orchestrator says so on this plan's Workload. An object the
		// runtime did not create stays a plain PermissionDenied.
		setCondition(p, ConditionApplied, metav1.ConditionFalse, scorev1b1.PlanReasonObjectConflict, message)
	}
	r.blocked.add(blockingKey(owned.gk, owned.namespace, owned.name), client.ObjectKeyFromObject(p))
	if r.Recorder == nil || before.Status.Message == message {
		return
	}
	ctrl.LoggerFrom(ctx).Info("Refused an object another workload owns", "kind", owned.gk.Kind, "name", owned.name, "owner", owned.ownerName)
	r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, scorev1b1.PlanReasonObjectConflict, "Apply", "%s", message)
	if owned.ownerUID != "" && owned.ownerName != "" {
		owner := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: owned.ownerName, UID: types.UID(owned.ownerUID)}}
		owner.SetGroupVersionKind(scorev1b1.GroupVersion.WithKind("Workload"))
		r.Recorder.Eventf(owner, nil, corev1.EventTypeWarning, scorev1b1.PlanReasonObjectConflict, "Apply",
			"Workload %q would create an object this workload owns; it was refused, and this workload is unaffected.", p.Spec.WorkloadRef.Name)
	}
}

// keepRuns keeps earlier runs as history. An applied object labelled score.dev/run-of is a
// run (a batch Job named after its inputs): the earlier runs with the same label stay, up to
// its score.dev/history-limit annotation (default 3, the current run included), and the
// older ones are deleted. It returns the kept earlier runs, for the inventory.
func (r *Reconciler) keepRuns(ctx context.Context, p *scorev1b1.WorkloadPlan, applied []*unstructured.Unstructured) ([]scorev1b1.AppliedObject, error) {
	var history []scorev1b1.AppliedObject
	for _, run := range applied {
		of := run.GetLabels()[runnable.LabelRunOf]
		if of == "" {
			continue
		}
		limit, _ := strconv.Atoi(run.GetAnnotations()[AnnotationHistoryLimit])
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(run.GroupVersionKind().GroupVersion().WithKind(run.GetKind() + "List"))
		if err := r.Client.List(ctx, list, client.InNamespace(p.Namespace), client.MatchingLabels{runnable.LabelRunOf: of}); err != nil {
			return nil, fmt.Errorf("listing earlier runs: %w", err)
		}
		runs := make([]*unstructured.Unstructured, 0, len(list.Items))
		for i := range list.Items {
			if list.Items[i].GetAnnotations()[AnnotationWorkloadUID] == p.Spec.WorkloadRef.UID {
				runs = append(runs, &list.Items[i])
			}
		}
		drop := map[string]bool{}
		for _, old := range runnable.Collect(runs, run.GetName(), limit) {
			if err := r.Client.Delete(ctx, old, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("deleting the earlier run %s: %w", old.GetName(), err)
			}
			drop[old.GetName()] = true
		}
		for _, old := range runs {
			if old.GetName() != run.GetName() && !drop[old.GetName()] {
				history = append(history, scorev1b1.AppliedObject{APIVersion: old.GetAPIVersion(), Kind: old.GetKind(), Namespace: old.GetNamespace(), Name: old.GetName(), Health: health.Current, Message: "An earlier run, kept as history."})
			}
		}
	}
	return history, nil
}

// prune deletes what the previous render applied and this one did not, once this one
// applied completely.
func (r *Reconciler) prune(ctx context.Context, p *scorev1b1.WorkloadPlan, applied []scorev1b1.AppliedObject) error {
	keep := map[string]bool{}
	for _, o := range applied {
		keep[o.APIVersion+"/"+o.Kind+"/"+o.Name] = true
	}
	for _, o := range p.Status.Objects {
		if keep[o.APIVersion+"/"+o.Kind+"/"+o.Name] {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.FromAPIVersionAndKind(o.APIVersion, o.Kind))
		u.SetNamespace(o.Namespace)
		u.SetName(o.Name)
		ctrl.LoggerFrom(ctx).Info("Pruning an object the new render dropped", "kind", o.Kind, "name", o.Name)
		if err := r.Client.Delete(ctx, u, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("pruning %s %s: %w", o.Kind, o.Name, err)
		}
	}
	return nil
}

func notCurrent(applied []scorev1b1.AppliedObject) []string {
	var out []string
	for _, o := range applied {
		if o.Health != string(status.CurrentStatus) {
			out = append(out, o.Kind+" "+o.Name)
		}
	}
	sort.Strings(out)
	return out
}

// kindAllowed reports whether the config lets templates create a kind.
func (r *Reconciler) kindAllowed(gk schema.GroupKind) bool {
	cfg := &orchconfig.Config{}
	if r.Config != nil {
		if loaded, ok := r.Config.Get(); ok {
			cfg = loaded.Config
		}
	}
	return cfg.KindAllowed(gk.Group, gk.Kind)
}

// holdClusterScoped adds the finalizer when the plan applied a cluster-scoped object.
func (r *Reconciler) holdClusterScoped(ctx context.Context, p *scorev1b1.WorkloadPlan, applied []scorev1b1.AppliedObject) error {
	for _, o := range applied {
		if o.Namespace == "" && !controllerutil.ContainsFinalizer(p, Finalizer) {
			patch := client.MergeFromWithOptions(p.DeepCopy(), client.MergeFromWithOptimisticLock{})
			controllerutil.AddFinalizer(p, Finalizer)
			status := p.Status
			if err := r.Client.Patch(ctx, p, patch); err != nil {
				return fmt.Errorf("adding the finalizer: %w", err)
			}
			p.Status = status // the patch response carries the stored status; ours is newer
			return nil
		}
	}
	return nil
}

// release deletes a deleted plan's cluster-scoped objects (its namespaced ones go with it by
// owner reference) and lets it go.
func (r *Reconciler) release(ctx context.Context, p *scorev1b1.WorkloadPlan) error {
	if !controllerutil.ContainsFinalizer(p, Finalizer) {
		return nil
	}
	for _, o := range p.Status.Objects {
		if o.Namespace != "" {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.FromAPIVersionAndKind(o.APIVersion, o.Kind))
		u.SetName(o.Name)
		if err := r.Client.Delete(ctx, u, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			return fmt.Errorf("deleting %s %s: %w", o.Kind, o.Name, err)
		}
	}
	patch := client.MergeFrom(p.DeepCopy())
	controllerutil.RemoveFinalizer(p, Finalizer)
	r.written.Forget(p.UID)
	return client.IgnoreNotFound(r.Client.Patch(ctx, p, patch))
}
