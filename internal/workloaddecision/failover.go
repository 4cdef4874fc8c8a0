package workloaddecision

import (
	"fmt"
	"time"

	"github.com/score-orchestrator/score-orchestrator/internal/placement"
)

// moveEvents are the events of a plan moved from cluster from: Placed, and FailedOver naming
// both clusters when from did not answer. Recorded on the plan: where a Workload runs is the
// platform's business, not on the Workload.
func moveEvents(placed placement.Result, from string) []Event {
	if !placed.FailedOver {
		return []Event{{Type: Normal, Reason: "Placed", Action: "Place",
			Message: fmt.Sprintf("Placed on cluster %s: cluster %s no longer fits (%s).", placed.Cluster, from, placed.Selector)}}
	}
	silence := placed.Silence.Round(time.Second)
	return []Event{
		{Type: Normal, Reason: "Placed", Action: "Place",
			Message: fmt.Sprintf("Placed on cluster %s: cluster %s has not answered for %s.", placed.Cluster, from, silence)},
		{Type: Warning, Reason: "FailedOver", Action: "Place",
			Message: fmt.Sprintf("Failed over from cluster %s to cluster %s: %s has not answered for %s. Its objects there are deleted when it answers again.", from, placed.Cluster, from, silence)},
	}
}

// recheck brings the Workload back when placement may decide otherwise by time alone (its
// cluster's silence reaching failover.after, a hold-down ending): a timer, as a held status's,
// not polling. A pass that retries needs none.
func (d *decision) recheck() {
	if d.recheckAt.IsZero() || d.Retry != nil {
		return
	}
	after := max(d.recheckAt.Sub(d.o.Now.Time), 0) + time.Second // past it: the due time is reached
	if d.RequeueAfter == 0 || after < d.RequeueAfter {
		d.RequeueAfter = after
	}
}
