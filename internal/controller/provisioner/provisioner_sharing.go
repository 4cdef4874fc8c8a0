package provisioner

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
)

// claimIdentity is the identity of the instance a claim stands for: in the namespace its
// status records (a platform's sharing namespace) or else its own, on the cluster its status
// records.
func claimIdentity(c *scorev1b1.ResourceClaim) provisioning.Identity {
	return identityOn(c, c.Status.InstanceCluster)
}

// identityOn is the identity of the claim's instance on cluster, in the namespace its status
// records.
func identityOn(c *scorev1b1.ResourceClaim, cluster string) provisioning.Identity {
	return identityIn(c, c.Status.InstanceNamespace, cluster)
}

// identityIn is the identity of the claim's instance in namespace ("": the claim's own) on
// cluster.
func identityIn(c *scorev1b1.ResourceClaim, namespace, cluster string) provisioning.Identity {
	if namespace == "" {
		namespace = c.Namespace
	}
	id := provisioning.NewIdentity(namespace, c.Spec.WorkloadRef.Name, c.Spec.Key, c.Spec.Type, c.Spec.Class, c.Spec.ID)
	id.Cluster = cluster
	return id
}

// namespaceLabels reads a namespace's labels, which the platform's rules select on
// (claimdecision.InstanceNamespace, claimdecision.HostnameDenied).
func (r *Reconciler) namespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	ns := &metav1.PartialObjectMetadata{} // its labels are all that is read: the watch's cache holds no more
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", name, err)
	}
	return ns.Labels, nil
}

// errNotKept: the revision a claim names is no longer kept.
var errNotKept = errors.New("the config revision is not kept")

// configOf is the config a claim is provisioned from: the revision its spec names (a
// rollout's), else the current one; nil before the first valid config. An instance several
// claims share is provisioned from the revision its oldest claim names, so that claims that
// disagree (a pinned Workload, or one created during a rollout) do not apply it in turn; a
// rollout puts the sharers of an instance it changes in one wave.
func (r *Reconciler) configOf(ctx context.Context, c *scorev1b1.ResourceClaim) (*configsource.Loaded, error) {
	current, ok := r.Config.Get()
	if !ok {
		return nil, nil
	}
	sharers, err := r.sharersOf(ctx, c)
	if err != nil {
		return nil, err
	}
	oldest := c
	for i := range sharers {
		if o := &sharers[i]; o.DeletionTimestamp.IsZero() && older(o, oldest) {
			oldest = o
		}
	}
	revision := oldest.Spec.ConfigRevision
	if revision == "" || revision == current.Revision || r.revisions == nil {
		return current, nil
	}
	l, err := r.revisions.Get(ctx, revision)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w: %v", errNotKept, err)
	}
	return l, err
}

// revisionChanged passes a claim whose spec names another config revision, or that went.
var revisionChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.(*scorev1b1.ResourceClaim).Spec.ConfigRevision != e.ObjectNew.(*scorev1b1.ResourceClaim).Spec.ConfigRevision
	},
}

// sharersOf are the other claims of a claim's instance (none without an id), as the claim
// knows its instance (on its first pass: in its own namespace).
func (r *Reconciler) sharersOf(ctx context.Context, c *scorev1b1.ResourceClaim) ([]scorev1b1.ResourceClaim, error) {
	if c.Spec.ID == "" {
		return nil, nil
	}
	var list scorev1b1.ResourceClaimList
	if err := r.Client.List(ctx, &list, client.MatchingFields{indexInstance: claimIdentity(c).Hash()}); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(list.Items, func(o scorev1b1.ResourceClaim) bool { return o.UID == c.UID }), nil
}

// sharers requeues the other claims of a claim's instance.
func (r *Reconciler) sharers(ctx context.Context, o client.Object) []reconcile.Request {
	list, _ := r.sharersOf(ctx, o.(*scorev1b1.ResourceClaim)) // a cache read; nothing to requeue on error
	out := make([]reconcile.Request, 0, len(list))
	for i := range list {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list[i])})
	}
	return out
}

func older(a, b *scorev1b1.ResourceClaim) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
}
