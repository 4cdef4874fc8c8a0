package orchestrator

import (
	"reflect"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/score-orchestrator/score-orchestrator/internal/fleet/placement"
)

// clustersChanged reports whether a new status of the clusters may change where Workloads
// belong: a cluster registered, relabelled or let go of; or, when a backend fails over
// (placement.failover), one that starts or stops answering. Without failover an outage moves
// nothing, and brings no Workload back here (the runtime reports it on the plans).
func (r *Reconciler) clustersChanged(old, new client.Object) bool {
	before, after := placeable(old), placeable(new)
	if !r.failsOver() {
		before, after = namesAndLabels(before), namesAndLabels(after)
	}
	return !reflect.DeepEqual(before, after)
}

// failsOver reports whether a config the store holds (the current one, or a revision a
// rollout may render from) has a backend that fails over.
func (r *Reconciler) failsOver() bool {
	for _, rev := range r.Config.Revisions() {
		if l, ok := r.Config.Revision(rev); ok && l.Config.FailsOver() {
			return true
		}
	}
	l, ok := r.Config.Get()
	return ok && l.Config.FailsOver()
}

// namesAndLabels are clusters without their reachability.
func namesAndLabels(in []placement.Cluster) []placement.Cluster {
	out := make([]placement.Cluster, len(in))
	for i, c := range in {
		out[i] = placement.Cluster{Name: c.Name, Labels: c.Labels}
	}
	return out
}
