package workloaddecision

import (
	"time"
)

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
