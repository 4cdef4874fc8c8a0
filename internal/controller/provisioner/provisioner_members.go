package provisioner

// Instances next to their consumer: a claim whose Workload is placed on a member cluster
// (spec.cluster) is provisioned there, through the provisioner's pool of connections
// (members.Pool, its caches scoped to the instance label as on the hub), unless its
// definition keeps it on the hub (location: Hub). The state and the outputs Secret stay on
// the hub with the claim; the runtime copies the outputs Secret to the member. A claim whose
// Workload moved provisions on the new cluster and keeps the old cluster's objects until the
// Workload has left it (its plan holds nothing there), then releases them by its policy.

import (
	"fmt"

	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
	"github.com/score-orchestrator/score-orchestrator/internal/status/claimdecision"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

// indexCluster indexes claims by the member clusters they are placed on or hold objects on.
const indexCluster = "score.dev/cluster"

// claimClusters are the member clusters a claim is placed on or holds objects on.
func claimClusters(o client.Object) []string {
	c := o.(*scorev1b1.ResourceClaim)
	var out []string
	for _, name := range append([]string{c.Spec.Cluster, c.Status.InstanceCluster}, clusters.Of(c.Status.Resources)...) {
		if name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// instanceCluster is where a claim's instance goes (provisioning.InstanceCluster, which the
// offline render calls too).
func instanceCluster(c *scorev1b1.ResourceClaim, def orchconfig.Provisioner) string {
	return provisioning.InstanceCluster(def, c.Spec.Cluster)
}

// bringBack enqueues the claims placed on, or holding objects on, a cluster that started or
// stopped answering, or was let go of.
func (r *Reconciler) bringBack(ctx context.Context, cluster string) {
	var list scorev1b1.ResourceClaimList
	if err := r.Client.List(ctx, &list, client.MatchingFields{indexCluster: cluster}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the claims of a cluster", "cluster", cluster)
		return
	}
	r.enqueue(ctx, list.Items)
}

// bringBackIn enqueues the claims whose instances are in a namespace of a cluster: those of
// the namespace placed there, and those sharing an instance from it. A new watch there has
// synced (apply.Watcher.Synced), and an event before that is lost.
func (r *Reconciler) bringBackIn(ctx context.Context, cluster, namespace string) {
	var placed, shared scorev1b1.ResourceClaimList
	if err := r.Client.List(ctx, &placed, client.InNamespace(namespace), client.MatchingFields{indexCluster: cluster}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the claims of a cluster", "cluster", cluster)
		return
	}
	if err := r.Client.List(ctx, &shared, client.MatchingFields{indexInstanceNamespace: namespace}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the claims of a cluster", "cluster", cluster)
		return
	}
	shared.Items = slices.DeleteFunc(shared.Items, func(c scorev1b1.ResourceClaim) bool { return !slices.Contains(claimClusters(&c), cluster) })
	r.enqueue(ctx, append(placed.Items, shared.Items...))
}

// enqueue sends claims to the controller's queue.
func (r *Reconciler) enqueue(ctx context.Context, claims []scorev1b1.ResourceClaim) {
	for i := range claims {
		select {
		case r.clusterChanged <- event.GenericEvent{Object: &claims[i]}:
		case <-ctx.Done():
			return
		}
	}
}

// claimsOfObjectOn maps an object on cluster to its claims, as claimsOfObject on the hub.
func (r *Reconciler) claimsOfObjectOn(cluster string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		return r.claimsOf(ctx, o, cluster)
	})
}

// retire releases a moved claim's objects on the clusters its Workload has left (its plan
// holds nothing there any more), by the policy its release follows (claimdecision.ReleasePolicy):
// Delete deletes them, Retain and Orphan leave them where they are, with an event saying so. It
// returns the entries still held: on a cluster the Workload still runs on, or being deleted, or
// on a cluster that does not answer.
func (r *Reconciler) retire(ctx context.Context, c *scorev1b1.ResourceClaim, elsewhere []scorev1b1.AppliedObject) ([]scorev1b1.AppliedObject, error) {
	if len(elsewhere) == 0 {
		return nil, nil
	}
	plan := &scorev1b1.WorkloadPlan{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: planOfClaim(c)}, plan); client.IgnoreNotFound(err) != nil {
		return nil, err
	}
	running := clusters.OfPlan(plan)
	var keep, leave []scorev1b1.AppliedObject
	for _, o := range elsewhere {
		if slices.Contains(running, o.Cluster) {
			keep = append(keep, o)
		} else {
			leave = append(leave, o)
		}
	}
	if len(leave) == 0 {
		return keep, nil
	}
	if policy := claimdecision.ReleasePolicy(c, ""); policy != scorev1b1.DeprovisionDelete {
		for _, cluster := range clusters.Of(leave) {
			r.event(c, corev1.EventTypeNormal, "Retained", "Move", "The instance on %s stays there (deprovision policy %s): the workload moved to %s.", clusters.Name(cluster), policy, clusters.Name(c.Status.InstanceCluster))
		}
		return keep, nil
	}
	released, err := r.members.Release(ctx, r.applier, leave, func(o scorev1b1.AppliedObject) (bool, error) { return r.usedByOthers(ctx, c, o) })
	if err != nil {
		return nil, err
	}
	for cluster, n := range released.Deleted {
		r.event(c, corev1.EventTypeNormal, "Moved", "Delete", "Deleted %d objects of the instance from %s: the workload moved to %s.", n, clusters.Name(cluster), clusters.Name(c.Status.InstanceCluster))
	}
	for _, cluster := range clusters.Of(leave) {
		if released.Deleted[cluster]+released.Kept[cluster] == 0 {
			continue // nothing released there: the cluster does not answer, or was let go of
		}
		// The state goes with the instance there, unless another claim is still bound to it
		// (the consumer of a shared instance that stays): it would draw new credentials the
		// running instance does not accept. Objects kept for another instance (a broker every
		// topic uses) do not keep this instance's state.
		old := identityOn(c, cluster)
		if others, err := r.otherConsumers(ctx, c, old); err != nil || others > 0 {
			if err != nil {
				return nil, err
			}
			continue
		}
		if err := r.deleteState(ctx, old); err != nil {
			return nil, err
		}
		if err := r.unrecord(ctx, c, old); err != nil {
			return nil, err
		}
	}
	for cluster, n := range released.Abandoned {
		r.event(c, corev1.EventTypeWarning, "ObjectsAbandoned", "Delete", "%d objects on cluster %s were let go of: the cluster is no longer registered.", n, cluster)
	}
	if len(released.Remaining) > 0 {
		ctrl.LoggerFrom(ctx).Info("Waiting for a moved instance's objects to be deleted", "objects", strings.Join(released.Remaining, ", "))
	}
	// Entries being deleted are kept until gone (their deletion events bring the claim back).
	for _, o := range leave {
		if slices.Contains(released.Remaining, o.Kind+" "+o.Name) {
			keep = append(keep, o)
		}
	}
	return append(keep, released.Waiting...), nil
}

func (r *Reconciler) event(c *scorev1b1.ResourceClaim, typ, reason, action, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(c, nil, typ, reason, action, "%s", termtext.Escape(fmt.Sprintf(format, args...)))
	}
}

// planOfClaim is the name of the plan of the claim's copy of its Workload: the Workload's
// name, or NAME.N for the claim of a copy on several clusters (its name ends in .N).
func planOfClaim(c *scorev1b1.ResourceClaim) string {
	if i := strings.LastIndexByte(c.Name, '.'); i >= 0 {
		if slot, ok := planner.CopySlot(c.Name[:i], c.Name); ok {
			return planner.CopyName(c.Spec.WorkloadRef.Name, slot)
		}
	}
	return c.Spec.WorkloadRef.Name
}
