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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/clusters/members"
)

// indexCluster indexes plans by the member clusters they are placed on or still hold objects
// on.
const indexCluster = "score.dev/cluster"

// bringBack enqueues the plans placed on, or holding objects on, a cluster.
func (r *Reconciler) bringBack(ctx context.Context, name string) {
	var plans scorev1b1.WorkloadPlanList
	if err := r.Client.List(ctx, &plans, client.MatchingFields{indexCluster: name}); err != nil {
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
		return planOfService(ctx, o)
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

// clusterUnreachable reports a plan whose cluster does not answer or is not registered:
// nothing was changed or deleted on either side.
func (r *Reconciler) clusterUnreachable(p *scorev1b1.WorkloadPlan, err error) {
	message := fmt.Sprintf("The plan cannot be applied: %v. Nothing was changed or deleted.", err)
	r.fail(p, scorev1b1.ReasonNetworkUnavailable, message)
	setCondition(p, scorev1b1.PlanConditionApplied, metav1.ConditionFalse, scorev1b1.PlanReasonClusterUnreachable, message)
}

// remoteFailed handles a failed request to a member: one that got no answer marks the cluster
// unreachable (its probe brings the plan back); any other is retried with backoff.
func (r *Reconciler) remoteFailed(p *scorev1b1.WorkloadPlan, t members.Target, err error) (ctrl.Result, error) {
	if r.members.Failed(t.Member, p.Namespace, err) {
		r.clusterUnreachable(p, fmt.Errorf("cluster %s does not answer: %w", t.Cluster, err))
		return ctrl.Result{}, nil
	}
	r.fail(p, scorev1b1.ReasonRuntimeProvisioning, fmt.Sprintf("Applying on cluster %s failed: %v", t.Cluster, err))
	return ctrl.Result{}, fmt.Errorf("apply on cluster %s failed, retrying with backoff: %w", t.Cluster, err)
}

// leave deletes objs, each on its cluster, and returns those that must wait: on a cluster
// that does not answer. On a cluster no longer registered they are abandoned, with an event.
func (r *Reconciler) leave(ctx context.Context, p *scorev1b1.WorkloadPlan, objs []scorev1b1.AppliedObject) ([]scorev1b1.AppliedObject, error) {
	released, err := r.members.Release(ctx, r.applier, objs, nil)
	if err != nil {
		return nil, err
	}
	for cluster, n := range released.Abandoned {
		r.event(p, corev1.EventTypeWarning, "ObjectsAbandoned", "Delete",
			"%d objects on cluster %s were let go of: the cluster is no longer registered.", n, cluster)
	}
	if p.DeletionTimestamp.IsZero() {
		for cluster, n := range released.Deleted {
			r.event(p, corev1.EventTypeNormal, "Moved", "Delete", "Deleted %d objects from %s: the workload is healthy on %s.", n, clusters.Name(cluster), clusters.Name(p.Spec.Cluster))
		}
	}
	return released.Waiting, nil
}

func (r *Reconciler) event(p *scorev1b1.WorkloadPlan, typ, reason, action, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(p, nil, typ, reason, action, format, args...)
	}
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
