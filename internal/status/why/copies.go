package why

import (
	"fmt"
	"strings"
	"time"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/placement"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
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

// placementOf is the backend's placement: the cluster selector, every registered cluster and
// why it was or was not chosen (for a tenant, the matching ones only), and the copies.
func placementOf(in Input, backend *orchconfig.Backend) *scorev1b1.TracePlacement {
	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	if backend.Placement.Several() || len(in.Copies) > 0 {
		return several(in, backend, now)
	}
	pin := placement.Input{Placement: backend.Placement, Clusters: clusters.Placeable(in.Clusters), Namespace: in.Workload.Namespace, Name: in.Workload.Name, Now: now}
	if in.Plan != nil {
		pin.Current = in.Plan.Spec.Cluster
	}
	res := placement.Place(pin)
	return candidates(in, backend, "clusters matching "+res.Selector, res.Policy, res.Candidates, res.OK)
}

// candidates is the placement's header (what is asked for, the policy, failover) and every
// registered cluster with why it runs the Workload (or a copy) or not.
func candidates(in Input, backend *orchconfig.Backend, asked, policy string, cs []placement.Candidate, ok bool) *scorev1b1.TracePlacement {
	p := &scorev1b1.TracePlacement{Asked: asked, Policy: policy, Placed: ok, OnlyMatching: in.Tenant}
	if after, holdDown := backend.Placement.Failover.Durations(); after > 0 {
		p.Failover = fmt.Sprintf("after %s (hold-down %s)", after, holdDown)
	}
	for _, c := range cs {
		verdict := scorev1b1.TraceRejected
		switch {
		case c.Chosen:
			verdict = scorev1b1.TraceChosen
		case c.Matches:
			verdict = scorev1b1.TraceEligible
		case in.Tenant:
			continue // another cluster of the platform's, which this Workload may not run on
		}
		p.Clusters = append(p.Clusters, scorev1b1.TraceCandidate{Name: c.Name, Verdict: verdict, Why: c.Why, Unreachable: !in.Clusters[c.Name].Reachable})
	}
	return p
}

// several is a placement on several clusters: how many copies, the selector, every registered
// cluster and why it runs a copy or not, the copies in placement order.
func several(in Input, backend *orchconfig.Backend, now time.Time) *scorev1b1.TracePlacement {
	w := in.Workload
	pin := placement.SeveralInput{Placement: backend.Placement, Clusters: clusters.Placeable(in.Clusters), Namespace: w.Namespace, Name: w.Name, Held: map[string][]int{}, Now: now}
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
	p := candidates(in, backend, fmt.Sprintf("a copy on %s matching %s", want, res.Selector), res.Policy, res.Candidates, res.OK)
	if !res.OK {
		return p
	}
	var order []string
	for _, c := range res.Copies {
		one := fmt.Sprintf("%s (%s)", c.Cluster, planner.CopyName(w.Name, c.Slot))
		if c.FailedOver {
			one = fmt.Sprintf("%s (%s, failing over from %s)", c.Cluster, planner.CopyName(w.Name, c.Slot), c.From)
		}
		order = append(order, one)
	}
	p.Copies = strings.Join(order, ", ")
	var removed []string
	for _, s := range res.Removed {
		removed = append(removed, planner.CopyName(w.Name, s))
	}
	p.Removed = strings.Join(removed, ", ")
	return p
}
