package provisioner

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/status/claimdecision"
)

// publish makes the writes that follow a complete run: it prunes what the run no longer
// produces on the instance's cluster (prune; unless another claim lists it), then writes the
// outputs Secret. A prune request to a member that got no answer marks the member unreachable.
func (r *Reconciler) publish(ctx context.Context, c *scorev1b1.ResourceClaim, p *pass, prune []scorev1b1.AppliedObject) *claimdecision.Published {
	applied := p.Run.Outcome.Applied.Objects
	if err := p.target.Applier.Prune(ctx, prune, applied, func(o scorev1b1.AppliedObject) (bool, error) { return r.usedByOthers(ctx, c, o) }); err != nil {
		if p.target.Member != nil {
			r.members.Failed(p.target.Member, p.id.Namespace, err)
		}
		return &claimdecision.Published{PruneErr: err}
	}
	return &claimdecision.Published{SecretErr: r.publishSecretOutputs(ctx, c, p.Run.Outcome.Secret)}
}

// publishSecretOutputs writes the secret outputs into the claim's outputs Secret, only when
// they changed, and removes it when there are none. It writes, removes or reads back only a
// Secret the claim controls (ownsOutputsSecret); one of that name that it does not control —
// a tenant's, unowned, or another object's — is left as it is, and refused
// (*claimdecision.ForeignSecret) when there are outputs to write.
//
// The Secret is read from the cache, its absence included: outputs Secrets carry the Workload
// label the cache selects (taken-over ones get it), and one the cache does not hold is
// created, which fails when a Secret of that name exists after all (the cache a moment
// behind, or a Secret not ours); only then is the API server asked. Asking it first would add
// a read that every pass over a new claim waits for (make bench).
func (r *Reconciler) publishSecretOutputs(ctx context.Context, c *scorev1b1.ResourceClaim, secret map[string]string) error {
	key := client.ObjectKey{Namespace: c.Namespace, Name: scorev1b1.OutputsSecretName(c.Name)}
	data := map[string][]byte{}
	for k, v := range secret {
		data[k] = []byte(v)
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: map[string]string{scorev1b1.LabelWorkload: c.Spec.WorkloadRef.Name}},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
	if err := controllerutil.SetControllerReference(c, s, r.Client.Scheme()); err != nil {
		return err
	}
	existing := &corev1.Secret{}
	err := r.Client.Get(ctx, key, existing)
	if apierrors.IsNotFound(err) {
		if len(secret) == 0 {
			return nil
		}
		if err = r.Client.Create(ctx, s); !apierrors.IsAlreadyExists(err) {
			return err
		}
		err = r.secrets.APIServer.Get(ctx, key, existing)
	}
	if err != nil {
		return err
	}
	if !ownsOutputsSecret(c, existing) {
		if len(secret) == 0 {
			return nil // nothing to publish, and not ours to remove
		}
		return foreignSecret(existing)
	}
	if len(secret) == 0 {
		return client.IgnoreNotFound(r.Client.Delete(ctx, existing, client.Preconditions{UID: &existing.UID}))
	}
	if metav1.IsControlledBy(existing, c) && existing.Labels[scorev1b1.LabelWorkload] == s.Labels[scorev1b1.LabelWorkload] && equality.Semantic.DeepEqual(existing.Data, data) {
		return nil
	}
	if !metav1.IsControlledBy(existing, c) {
		// An earlier claim's, taken over: with this claim's metadata only, so nothing set on
		// it by whoever made it (an annotation another tool acts on) stays on the credentials.
		existing.Labels, existing.Annotations = nil, nil
	}
	existing.Data, existing.OwnerReferences = data, s.OwnerReferences
	metav1.SetMetaDataLabel(&existing.ObjectMeta, scorev1b1.LabelWorkload, s.Labels[scorev1b1.LabelWorkload])
	return r.Client.Update(ctx, existing)
}

// ownsOutputsSecret reports whether the Secret of a claim's outputs Secret name is the claim's
// to write: controlled by the claim, or by an earlier claim of the same name (a claim reset,
// before the garbage collector removed it: a name holds one claim at a time, so that claim is
// gone). The new claim takes the latter over, so that the collector leaves it and the pods
// that read it keep their values. Anything else — no controller at all, another kind's, a
// Secret of another type — was not written by the provisioner, and is not taken over.
func ownsOutputsSecret(c *scorev1b1.ResourceClaim, s *corev1.Secret) bool {
	owner := metav1.GetControllerOf(s)
	if owner == nil {
		return false
	}
	if owner.UID == c.UID {
		return true
	}
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	return err == nil && gv.Group == scorev1b1.GroupVersion.Group && owner.Kind == "ResourceClaim" && owner.Name == c.Name &&
		s.Type == corev1.SecretTypeOpaque
}

// foreignSecret is the refusal of s, a Secret of the outputs Secret's name the claim does not
// control.
func foreignSecret(s *corev1.Secret) *claimdecision.ForeignSecret {
	e := &claimdecision.ForeignSecret{Name: s.Name}
	if owner := metav1.GetControllerOf(s); owner != nil {
		e.Controller = owner.Kind + " " + owner.Name
	}
	return e
}
