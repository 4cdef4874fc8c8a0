package workloaddecision

import (
	"fmt"
	"time"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/placement"
)

// moveEvents are the events a plan's write carries when the Workload moves, none when it stays
// where it ran: every move says Placed, where it goes and why, between two members as between
// the hub and a member (a backend gaining or losing placement, a Workload selecting another
// backend); a failover adds FailedOver naming both clusters.
func moveEvents(from, to *scorev1b1.WorkloadPlanSpec, placed placement.Result) []Event {
	if from.Cluster == to.Cluster {
		return nil
	}
	if placed.FailedOver {
		silence := placed.Silence.Round(time.Second)
		return []Event{
			{Type: Normal, Reason: "Placed", Action: "Place",
				Message: fmt.Sprintf("Placed on cluster %s: cluster %s has not answered for %s.", to.Cluster, from.Cluster, silence)},
			{Type: Warning, Reason: "FailedOver", Action: "Place",
				Message: fmt.Sprintf("Failed over from cluster %s to cluster %s: %s has not answered for %s. Its objects there are deleted when it answers again.", from.Cluster, to.Cluster, from.Cluster, silence)},
		}
	}
	var message string
	switch {
	case from.Cluster != "" && to.Cluster != "" && placed.Moved:
		message = fmt.Sprintf("Placed on cluster %s: cluster %s no longer fits (%s).", to.Cluster, from.Cluster, placed.Selector)
	case to.Cluster == "":
		message = fmt.Sprintf("Placed on the hub: backend %s runs its workloads there; the workload ran on %s.", to.BackendID, clusters.Name(from.Cluster))
	default:
		message = fmt.Sprintf("Placed on cluster %s: backend %s places on clusters matching %s; the workload ran on %s.", to.Cluster, to.BackendID, placed.Selector, clusters.Name(from.Cluster))
	}
	return []Event{{Type: Normal, Reason: "Placed", Action: "Place", Message: message}}
}
