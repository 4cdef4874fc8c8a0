package provisioner

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioning"
)

// claimIdentity is the identity of the instance a claim stands for: in the namespace its
// status records (a platform's sharing namespace) or else its own, on the cluster its status
// records.
func claimIdentity(c *scorev1b1.ResourceClaim) provisioning.Identity {
	return identityOn(c, c.Status.InstanceCluster)
}

// identityOn is the identity of the claim's instance on cluster.
func identityOn(c *scorev1b1.ResourceClaim, cluster string) provisioning.Identity {
	ns := c.Status.InstanceNamespace
	if ns == "" {
		ns = c.Namespace
	}
	id := provisioning.NewIdentity(ns, c.Spec.WorkloadRef.Name, c.Spec.Key, c.Spec.Type, c.Spec.Class, c.Spec.ID)
	id.Cluster = cluster
	return id
}

// instanceNamespace decides where a claim's instance lives. A claim with an id whose
// provisioner shares across namespaces, from a namespace the sharing selector admits, shares
// the instance in the sharing namespace (returned); from any other namespace it gets its own
// instance (an empty namespace: its own) or, when the platform says Deny, a denial message.
// Without an id, or without sharing, the instance is the claim's own.
func (r *Reconciler) instanceNamespace(ctx context.Context, c *scorev1b1.ResourceClaim, def orchconfig.Provisioner) (string, string, error) {
	sh := def.Sharing
	if c.Spec.ID == "" || sh == nil {
		return "", "", nil
	}
	if c.Namespace == sh.Namespace {
		return "", "", nil // the sharing namespace's own claims share in place
	}
	ns := &metav1.PartialObjectMetadata{} // its labels are all that is read: the watch's cache holds no more
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Client.Get(ctx, client.ObjectKey{Name: c.Namespace}, ns); err != nil {
		return "", "", fmt.Errorf("reading namespace %s: %w", c.Namespace, err)
	}
	if sh.NamespaceSelector.MatchesLabels(ns.Labels) {
		return sh.Namespace, "", nil
	}
	if sh.Otherwise == orchconfig.SharingDeny {
		return "", fmt.Sprintf("Namespace %s may not share %s %s: the platform shares it only with namespaces it selects by label.", c.Namespace, c.Spec.Type, c.Spec.ID), nil
	}
	return "", "", nil
}
