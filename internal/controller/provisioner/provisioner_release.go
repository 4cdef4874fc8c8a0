package provisioner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/provisionermatch"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/values"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
	"github.com/score-orchestrator/score-orchestrator/internal/status/claimdecision"
)

// release deprovisions a deleted claim per its policy (claimdecision.ReleasePolicy: the
// platform's for a shared instance whose policy it fixes, else the claim's). Delete removes
// everything it provisioned (unless another claim still uses the same shared instance) and
// waits until it is gone; Retain keeps the data and the state, so a later claim of the same
// identity binds to them; Orphan leaves everything as it is.
func (r *Reconciler) release(ctx context.Context, c *scorev1b1.ResourceClaim) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(c, scorev1b1.ClaimFinalizer) {
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx)
	id := claimIdentity(c)
	policy, err := r.releasePolicy(ctx, c)
	if err != nil {
		r.deprovisioning(c, fmt.Sprintf("Deprovisioning; %v.", err))
		return ctrl.Result{}, err
	}
	if policy == scorev1b1.DeprovisionDelete {
		others, err := r.otherConsumers(ctx, c, id)
		if err != nil {
			return ctrl.Result{}, err
		}
		if others == 0 {
			// The instance itself — its external API's delete request, its state, its place in
			// the sharing ledger — only with a claim whose status names it: one released before
			// the provisioner ever bound it, or that let go of it, has none of it, and the state
			// of its identity may be a retained instance's, which the next claim binds to.
			deprovisions := claimdecision.DeprovisionsInstance(c)
			if deprovisions {
				if err := r.releaseAPI(ctx, c, id); err != nil {
					r.deprovisioning(c, fmt.Sprintf("Deprovisioning; %v.", err))
					return ctrl.Result{}, fmt.Errorf("deprovisioning through the API: %w", err)
				}
			}
			released, err := r.members.Release(ctx, r.applier, c.Status.Resources, func(o scorev1b1.AppliedObject) (bool, error) { return r.usedByOthers(ctx, c, o) })
			if err != nil {
				return ctrl.Result{}, err
			}
			for cluster, n := range released.Abandoned {
				r.event(c, corev1.EventTypeWarning, "ObjectsAbandoned", "Delete", "%d objects on cluster %s were let go of: the cluster is no longer registered.", n, cluster)
			}
			c.Status.Resources = slices.DeleteFunc(c.Status.Resources, func(o scorev1b1.AppliedObject) bool { return released.Abandoned[o.Cluster] > 0 })
			if len(released.Waiting) > 0 {
				// The cluster's next answer, or its registration removed, brings the claim back.
				r.deprovisioning(c, fmt.Sprintf("Deprovisioning waits for %s to answer: %d objects of the instance are there.", clusters.Name(released.Waiting[0].Cluster), len(released.Waiting)))
				return ctrl.Result{}, nil
			}
			if len(released.Remaining) > 0 {
				// Their deletion events bring the claim back.
				r.deprovisioning(c, "Deprovisioning; waiting for "+strings.Join(released.Remaining, ", ")+" to be deleted.")
				return ctrl.Result{}, nil
			}
			// Its place in the ledger goes last, once nothing of it is left: until then it is
			// counted, and a restart between any two steps repeats them.
			if deprovisions {
				if err := r.deleteState(ctx, id); err != nil {
					return ctrl.Result{}, err
				}
				if err := r.unrecord(ctx, c, id); err != nil {
					return ctrl.Result{}, err
				}
			}
			log.Info("Deprovisioned", "policy", "Delete", "objects", len(c.Status.Resources))
		} else {
			log.Info("Released a shared instance that other claims still use", "consumers", others)
		}
	} else {
		log.Info("Released; the provisioned data stays", "policy", policy)
	}
	// Only if the claim is still the version this pass read: a pass that read a cached copy
	// from before the provisioner's own status write (a claim deleted while its first pass
	// provisioned it) saw none of what was provisioned, and must not let the claim go. The
	// newer version's watch event brings the claim back.
	before := c.DeepCopy()
	controllerutil.RemoveFinalizer(c, scorev1b1.ClaimFinalizer)
	if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			log.Info("Release decided on an outdated copy; waiting for the current one")
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, nil
}

// releasePolicy is the policy the deleted claim is released by (claimdecision.ReleasePolicy), with
// the policy the config fixes for its instance read for a claim bound before the provisioner
// recorded the platform's (claimdecision.UnrecordedPolicy).
func (r *Reconciler) releasePolicy(ctx context.Context, c *scorev1b1.ResourceClaim) (scorev1b1.DeprovisionPolicy, error) {
	if !claimdecision.UnrecordedPolicy(c) {
		return claimdecision.ReleasePolicy(c, ""), nil
	}
	loaded, err := r.releaseConfig(ctx, c, "decide the release's policy")
	if err != nil {
		return "", err
	}
	claimParams, _ := values.Object(c.Spec.Params)
	served, _, ok := provisionermatch.Resolve(provisionermatch.Input{Classes: loaded.Config.Classes, Provisioners: loaded.Config.Provisioners,
		Claim: provisionermatch.Claim{Type: c.Spec.Type, Class: c.Spec.Class, ID: c.Spec.ID, Params: claimParams, RuntimeClass: c.Spec.RuntimeClass}})
	if !ok {
		return claimdecision.ReleasePolicy(c, ""), nil // no definition serves it now: none fixes its policy
	}
	def := loaded.Config.Provisioners[served.Index]
	fixed := claimdecision.FixedPolicy(claimdecision.Observed{Claim: c, Definition: &def, InstanceNamespace: c.Status.InstanceNamespace,
		PlatformPolicy: scorev1b1.DeprovisionPolicy(served.DeprovisionPolicy)})
	return claimdecision.ReleasePolicy(c, fixed), nil
}

// otherConsumers counts live claims, other than c, of the same instance: the consumers of a
// shared instance, or a retained claim of the same identity that a new claim replaces.
func (r *Reconciler) otherConsumers(ctx context.Context, c *scorev1b1.ResourceClaim, id provisioning.Identity) (int, error) {
	var list scorev1b1.ResourceClaimList
	// Cluster-wide: the identity hash names the instance's namespace, and the consumers of an
	// instance shared across namespaces live in several.
	if err := r.Client.List(ctx, &list, client.MatchingFields{indexInstance: id.Hash()}); err != nil {
		return 0, err
	}
	n := 0
	for _, o := range list.Items {
		if o.UID != c.UID && o.DeletionTimestamp.IsZero() {
			n++
		}
	}
	return n, nil
}

// deleteState deletes an instance's state: the Secret the provisioner wrote, and no other (one
// a tenant made, or changed, under its name stays, and so does whatever replaces it since it
// was read: the delete carries its UID).
func (r *Reconciler) deleteState(ctx context.Context, id provisioning.Identity) error {
	state := &corev1.Secret{}
	switch err := r.secrets.APIServer.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.StateSecretName()}, state); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading the state: %w", err)
	}
	k, err := r.signingKey(ctx)
	if err != nil {
		return err
	}
	if !k.written(state) {
		ctrl.LoggerFrom(ctx).Info("Left a state Secret the provisioner did not write", "secret", state.Name)
		return nil
	}
	switch err := r.Client.Delete(ctx, state, client.Preconditions{UID: &state.UID}); {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return nil
	case err != nil:
		return fmt.Errorf("deleting the state: %w", err)
	}
	return nil
}

// deprovisioning says how the release of a deleted claim goes, in its phase.
func (r *Reconciler) deprovisioning(c *scorev1b1.ResourceClaim, message string) {
	claimdecision.SetPhase(&c.Status, c.Generation, metav1.NewTime(r.clock().Now()), c.Status.Phase, c.Status.Reason, message)
}
