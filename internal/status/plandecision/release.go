package plandecision

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/inventory"
)

// NotCollected are the entries no owner reference reaches, so the garbage collector does not
// delete them with the plan: cluster-scoped objects, and everything on a member cluster. The
// plan's finalizer holds it while it lists any, and the runtime deletes them itself.
func NotCollected(objs []scorev1b1.AppliedObject) []scorev1b1.AppliedObject {
	var out []scorev1b1.AppliedObject
	for _, o := range objs {
		if o.Namespace == "" || o.Cluster != "" {
			out = append(out, o)
		}
	}
	return out
}

// Leave says whether a plan that moved deletes what it applied on the earlier cluster
// (elsewhere): once everything it applied here is healthy.
func Leave(applied, elsewhere []scorev1b1.AppliedObject) bool {
	return len(elsewhere) > 0 && len(inventory.NotCurrent(applied)) == 0
}

// Releasing is the status of a deleted plan held by the objects it has on a cluster that does
// not answer (waiting): the deletion waits, and says for what.
func Releasing(p *scorev1b1.WorkloadPlan, waiting []scorev1b1.AppliedObject) scorev1b1.WorkloadPlanStatus {
	q := p.DeepCopy()
	message := fmt.Sprintf("Deletion waits for cluster %s to answer: %d objects of the workload are there.", waiting[0].Cluster, len(waiting))
	setCondition(q, scorev1b1.PlanConditionApplied, metav1.ConditionFalse, scorev1b1.PlanReasonClusterUnreachable, message)
	q.Status.Message = message
	return q.Status
}

// ReleaseEvents are the events of releasing a plan's objects on other clusters: those let go
// of with their cluster's registration, and on a move (the plan is not being deleted) those
// deleted. Clusters in order of name.
func ReleaseEvents(p *scorev1b1.WorkloadPlan, l Left) []Event {
	var out []Event
	for _, cluster := range sortedKeys(l.Abandoned) {
		out = append(out, Event{Type: Warning, Reason: "ObjectsAbandoned", Action: "Delete",
			Message: fmt.Sprintf("%d objects on cluster %s were let go of: the cluster is no longer registered.", l.Abandoned[cluster], cluster)})
	}
	if !p.DeletionTimestamp.IsZero() {
		return out
	}
	for _, cluster := range sortedKeys(l.Deleted) {
		out = append(out, Event{Type: Normal, Reason: "Moved", Action: "Delete",
			Message: fmt.Sprintf("Deleted %d objects from %s: the workload is healthy on %s.", l.Deleted[cluster], clusters.Name(cluster), clusters.Name(p.Spec.Cluster))})
	}
	return out
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
