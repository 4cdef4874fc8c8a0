package orchestrator

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/status/workloaddecision"
)

// Volumes mounted by name (a volume source that is a plain name): the decision admits those
// the platform's rules admit for the Workload's namespace (orchconfig.NamedVolumeAllowed),
// never an instance's (workloaddecision.InstanceVolumes). The orchestrator reads no volume
// claim: it judges the name, from its namespace's labels and its claims' inventories, both
// cached.

// indexInstanceNamespace indexes the claims by the namespace their instance lives in (their
// status's instance namespace, else their own): the volumes of the instances of a namespace
// are read from them.
const indexInstanceNamespace = "orchestrator.score.dev/instance-namespace"

// instanceNamespace is a claim's indexInstanceNamespace.
func instanceNamespace(o client.Object) []string {
	c := o.(*scorev1b1.ResourceClaim)
	if c.Status.InstanceNamespace != "" {
		return []string{c.Status.InstanceNamespace}
	}
	return []string{c.Namespace}
}

// namedVolumes reads what the decision judges a Workload's volumes mounted by name from, when
// it mounts one: its namespace's labels and the volumes of the instances there.
func (r *Reconciler) namedVolumes(ctx context.Context, s *scope) error {
	w := s.Workload
	if len(planner.NamedVolumes(w)) == 0 {
		return nil
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: w.Namespace}, ns); {
	case err == nil:
		s.NamespaceLabels = ns.Labels
	case !apierrors.IsNotFound(err): // not cached yet: no rule that selects by label admits it
		return fmt.Errorf("reading namespace %s: %w", w.Namespace, err)
	}
	var claims scorev1b1.ResourceClaimList
	if err := r.Client.List(ctx, &claims, client.MatchingFields{indexInstanceNamespace: w.Namespace}); err != nil {
		return fmt.Errorf("listing the claims of namespace %s's instances: %w", w.Namespace, err)
	}
	s.InstanceVolumes = workloaddecision.InstanceVolumesOf(claims.Items, w.Namespace)
	return nil
}

// namedVolumeWorkloads are the Workloads of a namespace that mount a volume by name: a change
// of its labels may admit or refuse their volumes.
func (r *Reconciler) namedVolumeWorkloads(ctx context.Context, o client.Object) []reconcile.Request {
	return r.mountingByName(ctx, o.GetName())
}

// instanceVolumeWorkloads are, for a claim whose inventory's volumes changed, the Workloads of
// its instance's namespace that mount a volume by name: one may name a volume the instance has
// now.
func (r *Reconciler) instanceVolumeWorkloads(ctx context.Context, o client.Object) []reconcile.Request {
	return r.mountingByName(ctx, instanceNamespace(o)[0])
}

func (r *Reconciler) mountingByName(ctx context.Context, namespace string) []reconcile.Request {
	var list scorev1b1.WorkloadList
	if err := r.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the workloads of a namespace", "namespace", namespace)
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if len(planner.NamedVolumes(&list.Items[i])) > 0 {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// instanceVolumesChanged passes a claim whose inventory's volume claims or stateful sets, or
// whose instance's namespace, changed.
var instanceVolumesChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*scorev1b1.ResourceClaim), e.ObjectNew.(*scorev1b1.ResourceClaim)
		return o.Status.InstanceNamespace != n.Status.InstanceNamespace || !slices.Equal(volumeObjects(o), volumeObjects(n))
	},
}

// volumeObjects are the names of the volume claims and stateful sets a claim's inventory lists.
func volumeObjects(c *scorev1b1.ResourceClaim) []string {
	var out []string
	for _, o := range c.Status.Resources {
		if o.Kind == "PersistentVolumeClaim" || o.Kind == "StatefulSet" {
			out = append(out, o.Kind+"/"+o.Namespace+"/"+o.Name)
		}
	}
	return out
}
