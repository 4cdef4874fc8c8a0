package dashboardview

import (
	"cmp"
	"slices"
	"strings"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
)

// A Workload on several clusters has a plan and an exposure per copy (NAME for the first
// slot, NAME.N for the others: planner.CopyName), and claims per copy (CLAIM.N). The graph
// shows each copy's plan, with what it applied on its cluster, and its exposure, with its
// endpoints; the fleet lists every cluster a Workload runs on.

// Copy is one of a Workload's other copies: its plan and its exposure, each nil when it does
// not exist (yet) or the reader may not read it.
type Copy struct {
	Plan     *scorev1b1.WorkloadPlan
	Exposure *scorev1b1.WorkloadExposure
}

// copyBranches are the other copies' plans and exposures.
func copyBranches(in GraphInput) []branch {
	var out []branch
	for _, c := range in.Copies {
		if c.Plan != nil {
			out = append(out, planNode("plan/"+c.Plan.Name, c.Plan))
		}
		if c.Exposure != nil {
			out = append(out, exposureNode("exposure/"+c.Exposure.Name, c.Exposure))
		}
	}
	return out
}

// copySuffix is ".N" for the claim of a copy beyond the first (ClaimName has no dot), else "".
func copySuffix(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i:]
	}
	return ""
}

// copyClusters are, by namespace/Workload, the clusters its plans are placed on ("hub": none),
// its own plan's first, then its copies' by slot.
func copyClusters(plans []scorev1b1.WorkloadPlan) map[string][]string {
	type placed struct {
		slot    int
		cluster string
	}
	by := map[string][]placed{}
	for _, p := range plans {
		if slot, ok := planner.CopySlot(p.Spec.WorkloadRef.Name, p.Name); ok {
			k := p.Namespace + "/" + p.Spec.WorkloadRef.Name
			by[k] = append(by[k], placed{slot, cmp.Or(p.Spec.Cluster, "hub")})
		}
	}
	out := map[string][]string{}
	for k, ps := range by {
		slices.SortFunc(ps, func(a, b placed) int { return a.slot - b.slot })
		for _, p := range ps {
			out[k] = append(out[k], p.cluster)
		}
	}
	return out
}
