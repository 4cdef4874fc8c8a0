package orchestrator

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/status/workloaddecision"
)

// The writes workloaddecision.From names. Each makes what it is told and returns the API
// server's answer, which the decision judges; none decides. A delete or a metadata patch of an
// object that is gone is done.

// addFinalizer adds the Workload's finalizer before its first claim. The write is recorded
// like a status write (a cached copy without the finalizer is older than it) and becomes the
// status patch's reference; the Workload keeps the status it was read with.
func (r *Reconciler) addFinalizer(ctx context.Context, s *scope) error {
	w := s.Workload
	next := w.DeepCopy()
	controllerutil.AddFinalizer(next, scorev1b1.WorkloadFinalizer)
	if err := r.Client.Patch(ctx, next, client.MergeFromWithOptions(s.patch.Before(), client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	r.memory.wroteMetadata(w.UID, w.ResourceVersion, next.ResourceVersion)
	w.ObjectMeta = next.ObjectMeta
	s.patch.Rebase()
	return nil
}

// removeFinalizer lets a deleted Workload go, once its claims are released, and forgets it.
func (r *Reconciler) removeFinalizer(ctx context.Context, s *scope) error {
	w := s.Workload
	next := w.DeepCopy()
	controllerutil.RemoveFinalizer(next, scorev1b1.WorkloadFinalizer)
	ctrl.LoggerFrom(ctx).Info("Cleanup complete; removing the finalizer")
	r.memory.forget(w.UID)
	r.readiness.forget(w.UID)
	return client.IgnoreNotFound(r.Client.Patch(ctx, next, client.MergeFromWithOptions(s.patch.Before(), client.MergeFromWithOptimisticLock{})))
}

// untracked makes a write of a claim, plan or exposure (never of the Workload) reset the
// object's managed fields. After a reset the API server records no update or patch of the
// object, only a server-side apply, which nothing makes on these kinds: the fields recorded
// at its creation and by every status write were a third to a half of the object (1.2–1.9 KB
// of 2.9–4.3 KB), stored, decoded, checked and sent again with each later status write and
// watch event. A status write cannot reset them (the status subresource keeps the stored
// ones) and a creation always records its fields, so it rides on the writes of the object
// itself that are made anyway; none is added for it. The Workload keeps its own: users apply
// it server-side, and the fields each applier owns decide what a later apply removes.
func untracked(o client.Object) {
	o.SetManagedFields([]metav1.ManagedFieldsEntry{{}})
}

// writesInFlight is the most writes of one pass in flight at once: a Workload's claims and its
// exposure, which do not depend on each other, are sent together, up to this many,
// so that a Workload of many dependencies does not take all of the API server's seats.
const writesInFlight = 8

// writeClaims makes the claim writes, and the exposure's when the decision names it with them,
// together, and records each one's answer (the decision says what comes next). Each creation
// is remembered as it succeeds, so a crash, or an error of another write, leaves nothing to be
// created twice; the Workload's finalizer is on before any of them (the decision's order).
func (r *Reconciler) writeClaims(ctx context.Context, s *scope, writes []workloaddecision.ClaimWrite, exposure *workloaddecision.ExposureWrite) {
	if s.ClaimsWritten == nil {
		s.ClaimsWritten = map[string]error{}
	}
	answers := make([]error, len(writes))
	var g errgroup.Group
	g.SetLimit(writesInFlight)
	for i, cw := range writes {
		g.Go(func() error {
			answers[i] = r.writeClaim(ctx, s.Workload, cw)
			return nil
		})
	}
	if exposure != nil {
		g.Go(func() error {
			s.ExposureWritten = &workloaddecision.Written{Err: r.writeExposure(ctx, s, exposure)}
			return nil
		})
	}
	_ = g.Wait() // every write's answer is recorded; none returns an error here
	for i, cw := range writes {
		s.ClaimsWritten[cw.Name] = answers[i]
	}
}

// writeClaim makes one claim write.
func (r *Reconciler) writeClaim(ctx context.Context, w *scorev1b1.Workload, cw workloaddecision.ClaimWrite) error {
	log := ctrl.LoggerFrom(ctx)
	switch cw.Op {
	case workloaddecision.CreateClaim:
		return r.createClaim(ctx, w, cw)
	case workloaddecision.UpdateClaim:
		c := cw.Claim.DeepCopy()
		c.Spec = cw.Spec
		untracked(c)
		log.Info("Updating claim", "claim", c.Name)
		return r.Client.Update(ctx, c)
	case workloaddecision.AdoptClaim:
		c := cw.Claim.DeepCopy()
		if err := controllerutil.SetControllerReference(w, c, r.Client.Scheme()); err != nil {
			return err
		}
		untracked(c)
		log.Info("Adopting a retained claim", "claim", c.Name)
		return r.Client.Patch(ctx, c, client.MergeFromWithOptions(cw.Claim, client.MergeFromWithOptimisticLock{}))
	case workloaddecision.ReleaseRetained:
		log.Info("Releasing a claim retained by an earlier workload", "claim", cw.Name)
		return client.IgnoreNotFound(r.Client.Delete(ctx, cw.Claim))
	case workloaddecision.RetainClaim:
		kept := cw.Claim.DeepCopy()
		var refs []metav1.OwnerReference
		for _, ref := range kept.OwnerReferences {
			if ref.UID != w.UID {
				refs = append(refs, ref)
			}
		}
		kept.OwnerReferences = refs
		untracked(kept)
		log.Info("Retaining claim", "claim", cw.Name)
		return client.IgnoreNotFound(r.Client.Patch(ctx, kept, client.MergeFromWithOptions(cw.Claim, client.MergeFromWithOptimisticLock{})))
	default: // DeleteClaim
		log.Info("Deleting claim", "claim", cw.Name)
		return client.IgnoreNotFound(r.Client.Delete(ctx, cw.Claim))
	}
}

// createClaim creates a declared resource's claim, and remembers it until the cache shows it.
func (r *Reconciler) createClaim(ctx context.Context, w *scorev1b1.Workload, cw workloaddecision.ClaimWrite) error {
	c := &scorev1b1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: cw.Name, Namespace: w.Namespace, Labels: childLabels(w),
			// The provisioner's: set at creation, so that adding it is not a write of its own.
			Finalizers: []string{scorev1b1.ClaimFinalizer}},
		Spec: cw.Spec,
	}
	if err := controllerutil.SetControllerReference(w, c, r.Client.Scheme()); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Creating claim", "claim", cw.Name, "key", cw.Key, "type", cw.Spec.Type)
	if err := r.Client.Create(ctx, c); err != nil {
		return err
	}
	r.memory.created(w.UID, workloaddecision.Ref{Kind: workloaddecision.KindClaim, Name: cw.Name}, r.now())
	return nil
}

// writeExposure writes the Workload's exposure: replaces an earlier Workload's, updates its
// spec, or creates it (and remembers it until the cache shows it).
func (r *Reconciler) writeExposure(ctx context.Context, s *scope, ew *workloaddecision.ExposureWrite) error {
	w := s.Workload
	observed, name := s.Exposure, w.Name
	if ew.Name != "" {
		observed, name = ew.Observed, ew.Name
	}
	switch ew.Op {
	case workloaddecision.ReplaceExposure:
		return client.IgnoreNotFound(r.Client.Delete(ctx, observed))
	case workloaddecision.UpdateExposure:
		updated := observed.DeepCopy()
		updated.Spec = ew.Spec
		untracked(updated)
		return r.Client.Update(ctx, updated)
	}
	created := &scorev1b1.WorkloadExposure{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.Namespace, Labels: childLabels(w)},
		Spec:       ew.Spec,
	}
	if err := controllerutil.SetControllerReference(w, created, r.Client.Scheme()); err != nil {
		return err
	}
	err := r.Client.Create(ctx, created)
	if err == nil || apierrors.IsAlreadyExists(err) {
		r.memory.created(w.UID, workloaddecision.Ref{Kind: workloaddecision.KindExposure, Name: name}, r.now())
	}
	return err
}

// writePlan writes the plan's spec, saying first on the plan why it moved when it did: an
// update of the observed plan, or its creation (remembered until the cache shows it).
func (r *Reconciler) writePlan(ctx context.Context, s *scope, pw *workloaddecision.PlanWrite) error {
	w := s.Workload
	observed, name := s.plan, w.Name
	if pw.Name != "" {
		observed, name = pw.Observed, pw.Name
	}
	for _, e := range pw.Events {
		r.record(observed, e)
	}
	var p *scorev1b1.WorkloadPlan
	if pw.Create {
		p = &scorev1b1.WorkloadPlan{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.Namespace, Labels: childLabels(w)},
			Spec:       *pw.Spec,
		}
		if err := controllerutil.SetControllerReference(w, p, r.Client.Scheme()); err != nil {
			return err
		}
		ctrl.LoggerFrom(ctx).Info("Creating plan", "backend", pw.Spec.BackendID)
		selections.WithLabelValues(pw.Spec.Profile, pw.Spec.BackendID).Inc()
		if err := r.Client.Create(ctx, p); err != nil {
			return err
		}
		r.memory.created(w.UID, workloaddecision.Ref{Kind: workloaddecision.KindPlan, Name: name}, r.now())
	} else {
		p = observed.DeepCopy()
		p.Spec = *pw.Spec
		untracked(p)
		ctrl.LoggerFrom(ctx).Info("Updating plan", "backend", pw.Spec.BackendID)
		selections.WithLabelValues(pw.Spec.Profile, pw.Spec.BackendID).Inc()
		if err := r.Client.Update(ctx, p); err != nil {
			return err
		}
	}
	r.readiness.planWritten(w.UID, w.Generation, r.now())
	if pw.Name == "" {
		s.plan = p
	}
	return nil
}

// passOn copies the Workload's score.dev/reconcile-requested-at to the claims and the plan the
// decision names, so that the provisioner and the runtime process them again.
func (r *Reconciler) passOn(ctx context.Context, s *scope, po *workloaddecision.PassOnWrite) error {
	var objs []client.Object
	for _, c := range po.Claims {
		objs = append(objs, c)
	}
	if po.Plan && s.plan != nil {
		objs = append(objs, s.plan)
	}
	for _, p := range po.Copies {
		objs = append(objs, p)
	}
	for _, o := range objs {
		patch := client.MergeFrom(o.DeepCopyObject().(client.Object))
		anns := o.GetAnnotations()
		if anns == nil {
			anns = map[string]string{}
		}
		anns[scorev1b1.AnnotationReconcileRequestedAt] = po.Value
		o.SetAnnotations(anns)
		untracked(o)
		if err := r.Client.Patch(ctx, o, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("annotating %s: %w", o.GetName(), err)
		}
	}
	return nil
}
