package workloaddecision

import (
	"time"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/placement"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/selection"
)

// The Workload pipeline, from a valid config on: selection → placement of its copies → each
// copy's claims → each copy's plan. A Workload runs as copies, each on its own cluster
// (placement.PlaceSeveral): one cluster is one copy, slot 0, with the Workload's own names;
// a backend without placement runs one copy on the hub. Desired decides the first two stages
// and Pipeline's Claims and Plan the other two, for a copy and what its claims published: the
// orchestrator (From) walks them against what it observed, the offline render
// (internal/cli/offline) against what it provisioned itself, so that both follow one order and
// render shows what the controllers apply, every copy of it.

// DesiredInput is what a Workload's pipeline decides from.
type DesiredInput struct {
	Workload *scorev1b1.Workload
	// Config is the config the Workload is rendered from (a rollout's revision, or the
	// current one); Region is where the orchestrator runs, for backends restricted to regions.
	Config *Config
	Region string
	// ProbeHosts says whether the config admits probes that name a host in the Workload's
	// namespace.
	ProbeHosts bool
	// Policy, when set, is every claim's deprovision policy (a preview's).
	Policy scorev1b1.DeprovisionPolicy
	// Clusters are the registered member clusters placement chooses from; Current, Held and
	// Now are placement.SeveralInput's: where the Workload's copies are, where they hold
	// objects, and the time failover is judged at (zero: none).
	Clusters []placement.Cluster
	Current  []placement.Copy
	Held     map[string][]int
	Now      time.Time
}

// Pipeline is a Workload's selection and placement, from which each copy's claims and plan
// follow.
type Pipeline struct {
	in DesiredInput
	// Selection is the profile and backend; when it failed (not OK) the Workload still runs
	// one copy, slot 0 on the hub, whose claims are provisioned while the runtime waits for a
	// backend.
	Selection selection.Result
	// Placement are the copies, in placement order. A backend without placement runs one, slot
	// 0, on the hub (no cluster), and removes any other; not OK when no registered cluster
	// matches.
	Placement placement.Several
}

// Desired selects a Workload's backend and places its copies.
func Desired(in DesiredInput) Pipeline {
	p := Pipeline{in: in, Selection: in.Config.Selector.Select(selection.Input{Workload: in.Workload, Region: in.Region})}
	switch {
	case !p.Selection.OK:
		// Nothing is decided of the copies: the other copies stay as they are.
		p.Placement = placement.Several{OK: true, Want: 1, Copies: []placement.Copy{{Slot: 0}}}
	case p.Selection.Backend.Placement == nil:
		p.Placement = placement.Several{OK: true, Want: 1, Copies: []placement.Copy{{Slot: 0}}}
		for _, c := range in.Current {
			if c.Slot != 0 {
				p.Placement.Removed = append(p.Placement.Removed, c.Slot)
			}
		}
	default:
		p.Placement = placement.PlaceSeveral(placement.SeveralInput{Placement: p.Selection.Backend.Placement, Clusters: in.Clusters,
			Namespace: in.Workload.Namespace, Name: in.Workload.Name, Current: in.Current, Held: in.Held, Now: in.Now})
	}
	return p
}

// Claims are the claims of copy c, one per resource in dependency order, named after its slot
// and placed on its cluster, from what its claims (by key) published so far: a claim whose
// params need outputs not published yet waits for them (DesiredClaim.WaitingFor). The error is
// the Workload's: its resources cannot be provisioned as declared.
func (p Pipeline) Claims(c placement.Copy, observed map[string]planner.ClaimView) ([]planner.DesiredClaim, error) {
	cfg := p.in.Config.Config
	in := planner.ClaimsInput{Workload: p.in.Workload, Provisioners: cfg.Provisioners, Classes: cfg.Classes, Observed: observed, Policy: p.in.Policy}
	if p.Selection.OK && p.Selection.Backend.RuntimeClass != scorev1b1.RuntimeClassKubernetes {
		in.RuntimeClass = p.Selection.Backend.RuntimeClass
	}
	desired, err := planner.DesiredClaims(in)
	if err != nil {
		return nil, err
	}
	for i := range desired {
		desired[i].Name = planner.CopyName(desired[i].Name, c.Slot)
		desired[i].Spec.Cluster = c.Cluster
	}
	return desired, nil
}

// Plan is the plan of copy c from its claims (by key, every one ready): its values with the
// overrides of its cluster, the cluster and the config revision it is rendered from. Unresolved
// placeholders withhold it (PlanResult.Unresolved); the error is the Workload's.
func (p Pipeline) Plan(c placement.Copy, claims map[string]planner.ClaimView) (planner.PlanResult, error) {
	built, err := planner.BuildPlan(planner.PlanInput{Workload: p.in.Workload, Profile: p.Selection.Profile, Backend: *p.Selection.Backend,
		Claims: claims, Cluster: c.Cluster, ClusterLabels: c.Labels, ProbeHosts: p.in.ProbeHosts})
	if err != nil || len(built.Unresolved) > 0 {
		return built, err
	}
	built.Spec.ConfigRevision = p.in.Config.Revision
	built.Spec.Cluster = c.Cluster
	return built, nil
}
