package why

import (
	"fmt"
	"io"
	"strings"
	"time"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/placement"
	"github.com/score-orchestrator/score-orchestrator/internal/planner"
)

// CopiesOf are the plans of the Workload's copies beyond the first among plans (NAME.N, of
// its UID).
func CopiesOf(w *scorev1b1.Workload, plans []scorev1b1.WorkloadPlan) []scorev1b1.WorkloadPlan {
	var out []scorev1b1.WorkloadPlan
	for _, p := range plans {
		if slot, ok := planner.CopySlot(w.Name, p.Name); ok && slot > 0 && p.Spec.WorkloadRef.UID == string(w.UID) {
			out = append(out, p)
		}
	}
	return out
}

// explainSeveral writes a placement on several clusters: how many copies, the selector, every
// registered cluster and why it runs a copy or not.
func explainSeveral(out io.Writer, in Input, backend *orchconfig.Backend) {
	w := in.Workload
	pin := placement.SeveralInput{Placement: backend.Placement, Clusters: clusters.Placeable(in.Clusters), Namespace: w.Namespace, Name: w.Name, Held: map[string][]int{}, Now: in.Now}
	if pin.Now.IsZero() {
		pin.Now = time.Now()
	}
	plans := map[int]*scorev1b1.WorkloadPlan{}
	if in.Plan != nil {
		plans[0] = in.Plan
	}
	for i := range in.Copies {
		if slot, ok := planner.CopySlot(w.Name, in.Copies[i].Name); ok {
			plans[slot] = &in.Copies[i]
		}
	}
	for slot, p := range plans {
		for _, c := range clusters.OfPlan(p) {
			pin.Held[c] = append(pin.Held[c], slot)
		}
		if p.DeletionTimestamp.IsZero() {
			pin.Current = append(pin.Current, placement.Copy{Slot: slot, Cluster: p.Spec.Cluster})
		}
	}
	res := placement.PlaceSeveral(pin)
	n, all := backend.Placement.Copies()
	want := fmt.Sprintf("%d clusters", n)
	if all {
		want = "every cluster"
	}
	if !explainCandidates(out, in, backend, fmt.Sprintf("a copy on %s matching %s", want, res.Selector), res.Policy, res.Candidates, res.OK) {
		return
	}
	var order []string
	for _, c := range res.Copies {
		one := fmt.Sprintf("%s (%s)", c.Cluster, planner.CopyName(w.Name, c.Slot))
		if c.FailedOver {
			one = fmt.Sprintf("%s (%s, failing over from %s)", c.Cluster, planner.CopyName(w.Name, c.Slot), c.From)
		}
		order = append(order, one)
	}
	fmt.Fprintf(out, "  copies in placement order: %s; the endpoint is the first's\n", strings.Join(order, ", "))
	if len(res.Removed) > 0 {
		var removed []string
		for _, s := range res.Removed {
			removed = append(removed, planner.CopyName(w.Name, s))
		}
		fmt.Fprintf(out, "  being removed: %s\n", strings.Join(removed, ", "))
	}
}
