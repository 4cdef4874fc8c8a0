package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/apierror"
	"github.com/score-orchestrator/score-orchestrator/internal/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/mirror"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/placement"
	"github.com/score-orchestrator/score-orchestrator/internal/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/selection"
	"github.com/score-orchestrator/score-orchestrator/internal/values"
	"github.com/score-orchestrator/score-orchestrator/internal/workloadstatus"
)

// observe reads everything the decision needs. All reads of a pass happen here.
func (r *Reconciler) observe(ctx context.Context, s *scope) error {
	w := s.workload
	var claims scorev1b1.ResourceClaimList
	if err := r.Client.List(ctx, &claims, client.InNamespace(w.Namespace), client.MatchingLabels{scorev1b1.LabelWorkload: w.Name}); err != nil {
		return fmt.Errorf("listing claims: %w", err)
	}
	s.claims = claims.Items
	for _, c := range s.claims {
		r.memory.seen(w.UID, "claim", c.Name)
	}
	plan := &scorev1b1.WorkloadPlan{}
	switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(w), plan); {
	case err == nil && metav1.IsControlledBy(plan, w):
		s.plan = plan
		r.memory.seen(w.UID, "plan", plan.Name)
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("reading the plan: %w", err)
	}
	exposure := &scorev1b1.WorkloadExposure{}
	switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(w), exposure); {
	case err == nil:
		s.exposure = exposure
		r.memory.seen(w.UID, "exposure", exposure.Name)
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading the exposure: %w", err)
	}
	return nil
}

// owned returns the observed claims this Workload controls, by name.
func (s *scope) owned() map[string]*scorev1b1.ResourceClaim {
	out := map[string]*scorev1b1.ResourceClaim{}
	for i := range s.claims {
		if metav1.IsControlledBy(&s.claims[i], s.workload) {
			out[s.claims[i].Name] = &s.claims[i]
		}
	}
	return out
}

// reconcileNormal walks the lifecycle's stages in order; each stage either completes or
// decides the status and stops: inputs → config → selection → claims → exposure → plan →
// runtime.
func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) error {
	w := s.workload
	s.endpoint = r.mirror(s, mirror.Policy{}).Endpoint

	// Inputs the API server could not check.
	if problems := planner.CheckInputs(w); len(problems) > 0 {
		s.specInvalid(problems[0].String(), len(problems)-1)
		return nil
	}
	// Before any valid config, nothing can be selected or provisioned.
	loaded, ok := r.Config.Get()
	if !ok {
		s.decide(workloadstatus.InputsValid(), workloadstatus.Condition{Status: metav1.ConditionFalse, Reason: scorev1b1.ReasonClaimPending, Message: workloadstatus.AwaitingConfig().Message}, workloadstatus.AwaitingConfig())
		return nil
	}
	policy := mirror.Policy{PublicOnly: loaded.Config.Endpoint.PublicOnly, EndpointTemplate: loaded.Config.Endpoint.Template}
	mirrored := r.mirror(s, policy)
	s.endpoint = mirrored.Endpoint
	if mirrored.Rejected != "" {
		mirrorResults.WithLabelValues("rejected").Inc()
		ctrl.LoggerFrom(ctx).Info("Ignored an invalid exposure URL", "reason", mirrored.Rejected)
	}

	// Selection, the plan and the claims' provisioning follow the revision a rollout gives
	// the Workload; the mirror follows the current one.
	render, reached, err := r.renderFrom(ctx, s, loaded)
	if err != nil {
		return err
	}
	sel := render.Selector.Select(selection.Input{Workload: w, Region: r.Region})
	if !sel.OK && sel.Reason == scorev1b1.ReasonSpecInvalid {
		s.specInvalid(sel.Message, 0)
		return nil
	}

	// Where it runs, before its claims: their instances are provisioned on the same cluster.
	placed := placement.Result{OK: true}
	if sel.OK {
		var err error
		if placed, err = r.place(ctx, s, sel.Backend); err != nil {
			return err
		}
	}

	// Claims: one per resource, in dependency order.
	desired, err := planner.DesiredClaims(planner.ClaimsInput{Workload: w, Provisioners: render.Config.Provisioners, Classes: render.Config.Classes, Observed: s.claimViews(desiredKeys(w))})
	if err != nil {
		s.specInvalid(planner.Sentence(err.Error()), 0)
		return nil
	}
	desired = s.placeClaims(desired, placed)
	if err := r.claimRevisions(ctx, s, desired, render, loaded); err != nil {
		return err
	}
	if len(desired) > 0 && controllerutil.AddFinalizer(w, scorev1b1.WorkloadFinalizer) {
		if err := r.Client.Patch(ctx, w, client.MergeFromWithOptions(s.before, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("adding the finalizer: %w", err)
		}
		r.memory.wroteMetadata(w.UID, s.before.ResourceVersion, w.ResourceVersion)
		s.patch.Rebase()
		s.before = s.patch.Before().(*scorev1b1.Workload)
	}
	states, err := r.applyClaims(ctx, s, desired)
	if err != nil {
		return err
	}
	summaries, claimsReady := workloadstatus.Claims(states)
	s.summaries = summaries
	for _, st := range states {
		if st.Denied != "" {
			s.denied = st.Denied
		}
	}
	if s.denied != "" {
		// A refused claim is reported; the refusal is retried with backoff, since what lifts
		// it (a quota freed, a policy changed) is not something this controller watches.
		s.decide(workloadstatus.InputsValid(), claimsReady, workloadstatus.WaitingForClaims())
		return deniedError(s.denied)
	}

	// Runtime: a backend, the exposure registration, then the plan.
	if !sel.OK {
		s.decide(workloadstatus.InputsValid(), claimsReady, workloadstatus.Selection(sel.Reason, sel.Message))
		return nil
	}
	if !placed.OK {
		s.decide(workloadstatus.InputsValid(), claimsReady, workloadstatus.NoCluster())
		return nil
	}
	if err := r.ensureExposure(ctx, s, sel.Backend.RuntimeClass); err != nil {
		return err
	}
	if s.denied != "" {
		s.decide(workloadstatus.InputsValid(), claimsReady, workloadstatus.Denied(s.denied))
		return deniedError(s.denied)
	}
	if !workloadstatus.Deployable(states, claimsReady, loaded.Config.Dependencies.WaitsForHealthyDependencies()) {
		s.decide(workloadstatus.InputsValid(), claimsReady, workloadstatus.WaitingForClaims())
		return nil
	}
	views := s.claimViews(desiredKeys(w))
	built, err := planner.BuildPlan(planner.PlanInput{Workload: w, Profile: sel.Profile, Backend: *sel.Backend, Claims: views})
	if err != nil {
		s.specInvalid(planner.Sentence(err.Error()), 0)
		return nil
	}
	if len(built.Unresolved) > 0 {
		ctrl.LoggerFrom(ctx).Info("Withholding the plan: outputs are not resolved", "placeholders", built.Unresolved)
		s.decide(workloadstatus.InputsValid(), claimsReady, workloadstatus.ProjectionError())
		return nil
	}
	built.Spec.ConfigRevision = render.Revision
	built.Spec.Cluster = placed.Cluster
	if placed.Moved && s.plan != nil && r.Recorder != nil {
		r.Recorder.Eventf(s.plan, nil, corev1.EventTypeNormal, "Placed", "Place", "Placed on cluster %s: cluster %s no longer fits (%s).", placed.Cluster, s.plan.Spec.Cluster, placed.Selector)
	}
	if err := r.ensurePlan(ctx, s, built.Spec, reached); err != nil {
		return err
	}
	s.decide(workloadstatus.InputsValid(), claimsReady, r.runtimeCondition(s, mirrored))
	if s.denied != "" {
		return deniedError(s.denied)
	}
	return nil
}

// place chooses the cluster the Workload runs on: the hub when the backend has no placement,
// else one of the registered clusters the runtime publishes (clusters.StatusConfigMap), kept
// while it still fits.
func (r *Reconciler) place(ctx context.Context, s *scope, backend *orchconfig.Backend) (placement.Result, error) {
	if backend.Placement == nil {
		return placement.Result{OK: true}, nil
	}
	cm := &corev1.ConfigMap{}
	if r.clusters == nil {
		return placement.Place(placement.Input{Placement: backend.Placement}), nil // no clusters known: tests without a manager
	}
	if err := r.clusters.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: clusters.StatusConfigMap}, cm); client.IgnoreNotFound(err) != nil {
		return placement.Result{}, fmt.Errorf("reading the clusters: %w", err)
	}
	in := placement.Input{Placement: backend.Placement, Clusters: clusters.Placeable(clusters.Decode(cm)), Namespace: s.workload.Namespace, Name: s.workload.Name}
	if s.plan != nil {
		in.Current = s.plan.Spec.Cluster
	} else {
		// Before its first plan, the cluster its claims were placed on.
		for _, c := range s.owned() {
			in.Current = c.Spec.Cluster
		}
	}
	return placement.Place(in), nil
}

// placeClaims records the Workload's cluster in its desired claims. With no cluster to place
// it on, no claim is created or moved: the existing ones keep theirs.
func (s *scope) placeClaims(desired []planner.DesiredClaim, placed placement.Result) []planner.DesiredClaim {
	if placed.OK {
		for i := range desired {
			desired[i].Spec.Cluster = placed.Cluster
		}
		return desired
	}
	owned := s.owned()
	kept := desired[:0]
	for _, d := range desired {
		if c := owned[d.Name]; c != nil {
			d.Spec.Cluster = c.Spec.Cluster
			kept = append(kept, d)
		}
	}
	return kept
}

// passOnReconcileRequest copies the Workload's score.dev/reconcile-requested-at to its
// claims and plan, so that the provisioner and the runtime process them again, and records
// it as handled. It writes only where the value differs.
func (r *Reconciler) passOnReconcileRequest(ctx context.Context, s *scope) error {
	want := s.workload.Annotations[scorev1b1.AnnotationReconcileRequestedAt]
	if want == "" {
		return nil
	}
	var objs []client.Object
	for _, c := range s.owned() {
		objs = append(objs, c)
	}
	if s.plan != nil {
		objs = append(objs, s.plan)
	}
	for _, o := range objs {
		if o.GetAnnotations()[scorev1b1.AnnotationReconcileRequestedAt] == want {
			continue
		}
		patch := client.MergeFrom(o.DeepCopyObject().(client.Object))
		anns := o.GetAnnotations()
		if anns == nil {
			anns = map[string]string{}
		}
		anns[scorev1b1.AnnotationReconcileRequestedAt] = want
		o.SetAnnotations(anns)
		if err := r.Client.Patch(ctx, o, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("passing on the reconcile request: %w", err)
		}
	}
	s.handledRequest = want
	return nil
}

// errDenied marks a write the API server refused; returning it retries with backoff.
var errDenied = errors.New("the API server refused a write")

// errTooLarge marks a derived object the API server refused for its size: it stays refused
// until the Workload changes, so it is the Workload's SpecInvalid and not retried. The
// planner's bound (placeholder.MaxExpanded) keeps plans and claims below the API server's
// limit; this is what remains when a Workload still outgrows it.
var errTooLarge = errors.New("the API server refused a derived object for its size")

// refusedSize wraps err with errTooLarge when the API server refused the object for its size.
func refusedSize(err error) error {
	if apierrors.IsRequestEntityTooLargeError(err) {
		return fmt.Errorf("%w: %w", errTooLarge, err)
	}
	return err
}

func deniedError(reason scorev1b1.Reason) error {
	return fmt.Errorf("%w (%s); retrying with backoff", errDenied, reason)
}

func (s *scope) decide(inputs, claims, runtime workloadstatus.Condition) {
	s.conds = workloadstatus.Conditions{InputsValid: inputs, ClaimsReady: claims, RuntimeReady: runtime}
	s.decided = true
}

func (s *scope) specInvalid(message string, more int) {
	s.decide(workloadstatus.SpecInvalid(message, more), workloadstatus.BlockedByInputs(), workloadstatus.BlockedByInputs())
	s.summaries = s.workload.Status.Claims
}

// mirror applies the endpoint mirror rules to the observed exposure.
func (r *Reconciler) mirror(s *scope, policy mirror.Policy) mirror.Result {
	w := s.workload
	return mirror.Mirror(mirror.Input{
		Exposure: s.exposure, WorkloadName: w.Name, Namespace: w.Namespace, WorkloadUID: string(w.UID),
		WorkloadGeneration: w.Generation, Previous: w.Status.Endpoint, Policy: policy,
	})
}

// runtimeCondition reads the runtime's progress on the current plan and the normalised
// signal from the exposure.
func (r *Reconciler) runtimeCondition(s *scope, mirrored mirror.Result) workloadstatus.Condition {
	if s.denied != "" {
		return workloadstatus.Denied(s.denied)
	}
	p := s.plan
	if p == nil || p.Status.ObservedGeneration != p.Generation {
		return workloadstatus.Provisioning()
	}
	switch p.Status.Phase {
	case scorev1b1.PlanPhaseFailed:
		switch c := meta.FindStatusCondition(p.Status.Conditions, scorev1b1.PlanConditionApplied); {
		case c != nil && c.Reason == scorev1b1.PlanReasonObjectConflict:
			return workloadstatus.ObjectConflict()
		case c != nil && c.Reason == scorev1b1.PlanReasonClusterUnreachable:
			return workloadstatus.RuntimeUnreachable()
		}
		return workloadstatus.Runtime(metav1.ConditionFalse, p.Status.Reason)
	case scorev1b1.PlanPhaseProjected:
		if mirrored.Signal != nil {
			return workloadstatus.Runtime(mirrored.Signal.Status, mirrored.Signal.Reason)
		}
		return workloadstatus.Runtime(metav1.ConditionTrue, scorev1b1.ReasonSucceeded)
	default:
		return workloadstatus.Provisioning()
	}
}

// desiredKeys maps each declared resource key to its claim name.
func desiredKeys(w *scorev1b1.Workload) map[string]string {
	out := map[string]string{}
	for key, res := range w.Spec.Resources {
		out[key] = planner.ClaimName(w.Name, key, res.Type)
	}
	return out
}

// claimViews summarises the owned claims of the declared keys.
func (s *scope) claimViews(keys map[string]string) map[string]planner.ClaimView {
	owned := s.owned()
	out := map[string]planner.ClaimView{}
	for key, name := range keys {
		if c, ok := owned[name]; ok && c.DeletionTimestamp.IsZero() {
			out[key] = planner.ViewClaim(c)
		}
	}
	return out
}

// applyClaims creates and updates the desired claims, deprovisions those of removed keys per
// their policy, and returns each declared claim's state.
func (r *Reconciler) applyClaims(ctx context.Context, s *scope, desired []planner.DesiredClaim) ([]workloadstatus.ClaimState, error) {
	w := s.workload
	byName := map[string]*scorev1b1.ResourceClaim{}
	for i := range s.claims {
		byName[s.claims[i].Name] = &s.claims[i]
	}
	wanted := map[string]bool{}
	var states []workloadstatus.ClaimState
	for _, d := range desired {
		wanted[d.Name] = true
		state := workloadstatus.ClaimState{Key: d.Key, Phase: scorev1b1.ClaimPhasePending, WaitingFor: d.WaitingFor}
		existing := byName[d.Name]
		pending := false
		if existing == nil && len(d.WaitingFor) == 0 {
			var err error
			if pending, err = r.pending(ctx, w, "claim", d.Name, &scorev1b1.ResourceClaim{}); err != nil {
				return nil, err
			}
		}
		switch {
		case len(d.WaitingFor) > 0 && existing == nil:
			// Created once the outputs its params need are published.
		case existing == nil && pending:
			// Created by an earlier pass; the cache does not show it yet.
		case existing == nil:
			if reason, err := r.createClaim(ctx, w, d); err != nil {
				return nil, err
			} else if reason != "" {
				state.Denied = reason
			}
		case !existing.DeletionTimestamp.IsZero():
			// A previous incarnation is being released; the claim is recreated after it goes.
		case metav1.IsControlledBy(existing, w):
			v := planner.ViewClaim(existing)
			state.Phase, state.Reason, state.OutputsAvailable = v.Phase, v.Reason, v.OutputsAvailable
			if len(d.WaitingFor) == 0 && !values.SameJSON(existing.Spec, d.Spec) {
				if reason, err := r.updateClaim(ctx, existing, d.Spec); err != nil {
					return nil, err
				} else if reason != "" {
					state.Denied = reason
				} else if existing.Spec.Cluster != d.Spec.Cluster || existing.Spec.ConfigRevision != d.Spec.ConfigRevision {
					// The Workload moved, or a rollout provisions its claim from another
					// revision: the claim's outputs are the old instance's, and nothing is
					// planned with them.
					state.Phase, state.Reason, state.OutputsAvailable = scorev1b1.ClaimPhasePending, "", false
				}
			}
			state.WaitingFor = nil
		case existing.Spec.WorkloadRef.UID == string(w.UID):
			// Ours, retained when its key was removed, and declared again: adopt it back.
			if err := r.adoptClaim(ctx, w, existing); err != nil {
				return nil, err
			}
		case metav1.GetControllerOf(existing) == nil:
			// Retained by an earlier Workload of the same name: release it so the provisioner
			// re-binds its data to the new claim.
			ctrl.LoggerFrom(ctx).Info("Releasing a claim retained by an earlier workload", "claim", existing.Name)
			if err := r.Client.Delete(ctx, existing); client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("releasing claim %s: %w", existing.Name, err)
			}
		default:
			state.Denied = scorev1b1.ReasonClaimFailed
		}
		states = append(states, state)
	}
	// Keys no longer declared: deprovision per policy.
	for _, c := range s.owned() {
		if !wanted[c.Name] {
			if err := r.release(ctx, w, c); err != nil {
				return nil, err
			}
		}
	}
	return states, nil
}

func (r *Reconciler) createClaim(ctx context.Context, w *scorev1b1.Workload, d planner.DesiredClaim) (scorev1b1.Reason, error) {
	c := &scorev1b1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: w.Namespace, Labels: childLabels(w),
			// The provisioner's: set at creation, so that adding it is not a write of its own.
			Finalizers: []string{scorev1b1.ClaimFinalizer}},
		Spec: d.Spec,
	}
	if err := controllerutil.SetControllerReference(w, c, r.Client.Scheme()); err != nil {
		return "", err
	}
	ctrl.LoggerFrom(ctx).Info("Creating claim", "claim", d.Name, "key", d.Key, "type", d.Spec.Type)
	if err := r.Client.Create(ctx, c); err != nil {
		if reason, denied := apierror.Reason(err); denied {
			return reason, nil
		}
		if apierror.NamespaceTerminating(err) {
			return "", err
		}
		if apierrors.IsAlreadyExists(err) {
			return "", nil // the cache is behind; the watch brings the claim
		}
		return "", fmt.Errorf("creating claim %s: %w", d.Name, refusedSize(err))
	}
	r.memory.created(w.UID, "claim", d.Name, r.now())
	return "", nil
}

func (r *Reconciler) updateClaim(ctx context.Context, existing *scorev1b1.ResourceClaim, spec scorev1b1.ResourceClaimSpec) (scorev1b1.Reason, error) {
	c := existing.DeepCopy()
	c.Spec = spec
	ctrl.LoggerFrom(ctx).Info("Updating claim", "claim", c.Name)
	if err := r.Client.Update(ctx, c); err != nil {
		if reason, denied := apierror.Reason(err); denied {
			return reason, nil
		}
		return "", fmt.Errorf("updating claim %s: %w", c.Name, refusedSize(err))
	}
	return "", nil
}

func (r *Reconciler) adoptClaim(ctx context.Context, w *scorev1b1.Workload, existing *scorev1b1.ResourceClaim) error {
	c := existing.DeepCopy()
	if err := controllerutil.SetControllerReference(w, c, r.Client.Scheme()); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Adopting a retained claim", "claim", c.Name)
	if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(existing, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adopting claim %s: %w", c.Name, err)
	}
	return nil
}

// release deprovisions a claim per its policy: Delete deletes it, Retain removes this
// Workload's ownership and keeps it, Orphan leaves it as it is.
func (r *Reconciler) release(ctx context.Context, w *scorev1b1.Workload, c *scorev1b1.ResourceClaim) error {
	log := ctrl.LoggerFrom(ctx)
	switch c.Spec.DeprovisionPolicy {
	case scorev1b1.DeprovisionRetain:
		kept := c.DeepCopy()
		var refs []metav1.OwnerReference
		for _, ref := range kept.OwnerReferences {
			if ref.UID != w.UID {
				refs = append(refs, ref)
			}
		}
		kept.OwnerReferences = refs
		log.Info("Retaining claim", "claim", c.Name)
		if err := r.Client.Patch(ctx, kept, client.MergeFromWithOptions(c, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("retaining claim %s: %w", c.Name, err)
		}
	case scorev1b1.DeprovisionOrphan:
		// Left untouched.
	default:
		if !c.DeletionTimestamp.IsZero() {
			return nil
		}
		log.Info("Deleting claim", "claim", c.Name)
		if err := r.Client.Delete(ctx, c); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting claim %s: %w", c.Name, err)
		}
	}
	return nil
}

// ensureExposure is the registrar stage: one WorkloadExposure per Workload, spec only.
func (r *Reconciler) ensureExposure(ctx context.Context, s *scope, runtimeClass string) error {
	w := s.workload
	spec := scorev1b1.WorkloadExposureSpec{
		WorkloadRef:                scorev1b1.WorkloadRef{Name: w.Name, Namespace: w.Namespace, UID: string(w.UID)},
		RuntimeClass:               runtimeClass,
		ObservedWorkloadGeneration: w.Generation,
	}
	e := s.exposure
	switch {
	case e != nil && e.Spec.WorkloadRef.UID != string(w.UID):
		// An earlier Workload's exposure (its UID is immutable): replace it.
		if err := r.Client.Delete(ctx, e); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("replacing the exposure: %w", err)
		}
		s.exposure = nil
		return nil
	case e != nil && reflect.DeepEqual(e.Spec, spec):
		return nil
	case e != nil:
		updated := e.DeepCopy()
		updated.Spec = spec
		if err := r.Client.Update(ctx, updated); err != nil {
			return r.deniedOr(s, err, "updating the exposure")
		}
		s.exposure = updated
		return nil
	}
	if pending, err := r.pending(ctx, w, "exposure", w.Name, &scorev1b1.WorkloadExposure{}); pending || err != nil {
		return err
	}
	created := &scorev1b1.WorkloadExposure{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace, Labels: childLabels(w)},
		Spec:       spec,
	}
	if err := controllerutil.SetControllerReference(w, created, r.Client.Scheme()); err != nil {
		return err
	}
	if err := r.Client.Create(ctx, created); err != nil && !apierrors.IsAlreadyExists(err) {
		return r.deniedOr(s, err, "creating the exposure")
	}
	r.memory.created(w.UID, "exposure", w.Name, r.now())
	return nil
}

// ensurePlan writes the plan only when its content changed, or, with revision, when only
// the config revision it records did.
func (r *Reconciler) ensurePlan(ctx context.Context, s *scope, spec *scorev1b1.WorkloadPlanSpec, revision bool) error {
	w := s.workload
	if p := s.plan; p != nil {
		if sameContent(p.Spec, *spec) && (!revision || p.Spec.ConfigRevision == spec.ConfigRevision) {
			return nil
		}
		updated := p.DeepCopy()
		updated.Spec = *spec
		ctrl.LoggerFrom(ctx).Info("Updating plan", "backend", spec.BackendID)
		selections.WithLabelValues(spec.Profile, spec.BackendID).Inc()
		if err := r.Client.Update(ctx, updated); err != nil {
			return r.deniedOr(s, err, "updating the plan")
		}
		r.readiness.planWritten(w.UID, w.Generation, r.now())
		s.plan = updated
		return nil
	}
	if pending, err := r.pending(ctx, w, "plan", w.Name, &scorev1b1.WorkloadPlan{}); pending || err != nil {
		return err
	}
	p := &scorev1b1.WorkloadPlan{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace, Labels: childLabels(w)},
		Spec:       *spec,
	}
	if err := controllerutil.SetControllerReference(w, p, r.Client.Scheme()); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Creating plan", "backend", spec.BackendID)
	selections.WithLabelValues(spec.Profile, spec.BackendID).Inc()
	if err := r.Client.Create(ctx, p); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("the plan exists but was not visible: %w", err)
		}
		return r.deniedOr(s, err, "creating the plan")
	}
	r.readiness.planWritten(w.UID, w.Generation, r.now())
	r.memory.created(w.UID, "plan", w.Name, r.now())
	s.plan = p
	return nil
}

// sameContent reports whether two plan specs render the same, whatever config revision each
// was written from: a config change that does not change a plan costs no write.
func sameContent(a, b scorev1b1.WorkloadPlanSpec) bool {
	a.ConfigRevision, b.ConfigRevision = "", ""
	return values.SameJSON(a, b)
}

// deniedOr records an API denial as an abstract reason, or returns the error to retry.
func (r *Reconciler) deniedOr(s *scope, err error, what string) error {
	if reason, denied := apierror.Reason(err); denied {
		s.denied = reason
		return nil
	}
	return fmt.Errorf("%s: %w", what, refusedSize(err))
}

// reconcileDelete releases every claim per its policy and removes the finalizer only when
// every Delete-policy claim is gone. Until then the status says what deletion waits for.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) error {
	w := s.workload
	if !controllerutil.ContainsFinalizer(w, scorev1b1.WorkloadFinalizer) {
		return nil
	}
	if err := r.observe(ctx, s); err != nil {
		return err
	}
	var waiting []string
	for _, c := range s.owned() {
		if err := r.release(ctx, w, c); err != nil {
			return err
		}
		if c.Spec.DeprovisionPolicy == scorev1b1.DeprovisionDelete || c.Spec.DeprovisionPolicy == "" {
			waiting = append(waiting, c.Spec.Key)
		}
	}
	if len(waiting) > 0 {
		sort.Strings(waiting)
		cond := workloadstatus.Deleting(waiting)
		prev := s.workload.Status.Claims
		s.decide(workloadstatus.InputsValid(), cond, cond)
		s.summaries = prev
		return nil // the claims' deletion events bring the Workload back
	}
	controllerutil.RemoveFinalizer(w, scorev1b1.WorkloadFinalizer)
	ctrl.LoggerFrom(ctx).Info("Cleanup complete; removing the finalizer")
	r.memory.forget(w.UID)
	r.readiness.forget(w.UID)
	if err := r.Client.Patch(ctx, w, client.MergeFromWithOptions(s.before, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing the finalizer: %w", err)
	}
	return nil
}
