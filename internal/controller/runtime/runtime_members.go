package runtime

// The member clusters: a plan whose spec.cluster names a registered cluster is applied there,
// through the runtime's pool of connections (members.Pool, its caches scoped to the Workload
// label as on the hub), which also publishes the clusters' status in the ConfigMap
// score-clusters for placement and `scorectl cluster list`.

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/members"
	"github.com/score-orchestrator/score-orchestrator/internal/status/plandecision"
)

// indexCluster indexes plans by the member clusters they are placed on or still hold objects
// on.
const indexCluster = "score.dev/cluster"

// bringBack enqueues the plans placed on, or holding objects on, a cluster.
func (r *Reconciler) bringBack(ctx context.Context, name string) {
	r.bringBackIn(ctx, name, "")
}

// bringBackIn enqueues the plans of a namespace ("": every namespace) placed on, or holding
// objects on, a cluster: a new watch there has synced (apply.Watcher.Synced), and an event
// before that is lost.
func (r *Reconciler) bringBackIn(ctx context.Context, name, namespace string) {
	var plans scorev1b1.WorkloadPlanList
	if err := r.Client.List(ctx, &plans, client.InNamespace(namespace), client.MatchingFields{indexCluster: name}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the plans of a cluster", "cluster", name)
		return
	}
	for i := range plans.Items {
		select {
		case r.clusterChanged <- event.GenericEvent{Object: &plans.Items[i]}:
		case <-ctx.Done():
			return
		}
	}
}

// byWorkloadUID maps an object the runtime applied on a member (no owner reference crosses
// clusters) to the plan of the Workload whose UID it carries.
func (r *Reconciler) byWorkloadUID(ctx context.Context, o client.Object) []reconcile.Request {
	uid := o.GetAnnotations()[scorev1b1.AnnotationWorkloadUID]
	if uid == "" {
		// An EndpointSlice: its Service's labels, not its annotations.
		return r.withCopies(planOfService)(ctx, o)
	}
	var plans scorev1b1.WorkloadPlanList
	if err := r.Client.List(ctx, &plans, client.MatchingFields{indexWorkloadUID: uid}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(plans.Items))
	for i := range plans.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&plans.Items[i])})
	}
	return out
}

// planClusters are the member clusters a plan is placed on or still holds objects on.
func planClusters(p *scorev1b1.WorkloadPlan) []string {
	return slices.DeleteFunc(clusters.OfPlan(p), func(c string) bool { return c == "" })
}

// outputsCopies are the plan's outputs Secrets as they go to a member cluster: the same name,
// type and data in the Workload's namespace there, applied (and pruned, and released) with
// the plan's other objects, so a rotation reaches the member on the next pass.
func (r *Reconciler) outputsCopies(ctx context.Context, p *scorev1b1.WorkloadPlan) ([]*unstructured.Unstructured, error) {
	reader := r.Secrets
	if reader == nil {
		reader = r.Client
	}
	var out []*unstructured.Unstructured
	for _, c := range p.Spec.Claims {
		if c.SecretName == "" {
			continue
		}
		s := &corev1.Secret{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: c.SecretName}, s); err != nil {
			return nil, fmt.Errorf("reading the outputs of %s: %w", c.Key, err)
		}
		data := map[string]any{}
		for k, v := range s.Data {
			data[k] = base64.StdEncoding.EncodeToString(v)
		}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": s.Name, "namespace": p.Namespace}, "type": string(corev1.SecretTypeOpaque), "data": data}}
		out = append(out, u)
	}
	return out, nil
}

// leave deletes objs, each on its cluster, and says what it did: objects on a cluster that does
// not answer wait; on a cluster no longer registered they are abandoned.
func (r *Reconciler) leave(ctx context.Context, objs []scorev1b1.AppliedObject) (plandecision.Left, error) {
	released, err := r.members.Release(ctx, r.applier, objs, nil)
	if err != nil {
		return plandecision.Left{}, err
	}
	return plandecision.Left{Waiting: released.Waiting, Deleted: released.Deleted, Abandoned: released.Abandoned}, nil
}

// reachableOn reports whether a Service on a member has a ready endpoint, from the member's
// cache of EndpointSlices (the EndpointSlice controller copies the Service's labels, the
// Workload's among them, so the cache scoped to that label holds them).
func reachableOn(ctx context.Context, t members.Target, namespace, service string) (bool, error) {
	gvk := discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice")
	t.Applier.Watcher.Ensure(ctx, gvk)
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(discoveryv1.SchemeGroupVersion.WithKind("EndpointSliceList"))
	if err := t.Applier.Watcher.List(ctx, t.Member.Client, list, client.InNamespace(namespace), client.MatchingLabels{discoveryv1.LabelServiceName: service}); err != nil {
		return false, err
	}
	typed := make([]discoveryv1.EndpointSlice, len(list.Items))
	for i := range list.Items {
		if err := kruntime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &typed[i]); err != nil {
			return false, err
		}
	}
	return anyReady(typed), nil
}
