// Package why explains the platform's decisions for one Workload: the profile and why, every
// backend candidate with the constraint that filtered it or its rank, the provisioner for each
// dependency, the one thing that keeps the Workload from Ready and the objects in the way, in
// their own words (InTheWay). It recomputes the decisions with the orchestrator's own selection
// code, and reads nothing itself: what it needs of the cluster beyond the Workload's own objects
// it names (Next), and a reader (internal/why/observe) reads it. scorectl why prints it and
// scorectl dashboard shows it.
package why

import (
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/placement"
	"github.com/score-orchestrator/score-orchestrator/internal/preview"
	"github.com/score-orchestrator/score-orchestrator/internal/selection"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
	"github.com/score-orchestrator/score-orchestrator/internal/values"
)

// Input is what the trace is computed from.
type Input struct {
	Workload *scorev1b1.Workload
	// Config is the Orchestrator Config in the cluster, of revision ConfigRevision.
	Config         *orchconfig.Config
	ConfigRevision string
	// Region is the orchestrator's.
	Region string
	// Claims and Plan are as the cluster holds them; nil when there are none or the reader may
	// not see them.
	Claims []scorev1b1.ResourceClaim
	Plan   *scorev1b1.WorkloadPlan
	// Exposure is the Workload's exposure; nil when there is none or the reader may not see it.
	Exposure *scorev1b1.WorkloadExposure
	// Clusters are the registered member clusters as the runtime publishes them; nil when
	// none are or the reader may not see them.
	Clusters map[string]clusters.Status
	// ConfigSource names where Config was read ("score-system/orchestrator-config").
	ConfigSource string
	// Observed is what a reader read of what Next named.
	Observed Observed
	// Now is when the trace is written (time.Now when zero): a preview's time left.
	Now time.Time
	// Copies are the plans of the Workload's other copies on several clusters (NAME.N);
	// nil when it has none or the reader may not see them.
	Copies []scorev1b1.WorkloadPlan
}

// previewOf is the Workload's namespace as a preview environment, when it was read and is one.
func previewOf(in Input) (preview.Preview, bool) {
	res, ok := in.Observed[namespaceRead(in)]
	if !ok || len(res.Objects) != 1 {
		return preview.Preview{}, false
	}
	ns := res.Objects[0]
	var policy orchconfig.Previews
	if in.Config != nil {
		policy = in.Config.Previews
	}
	return preview.Read(preview.Namespace{Name: ns.GetName(), Labels: ns.GetLabels(), Annotations: ns.GetAnnotations(), Created: ns.GetCreationTimestamp().Time}, policy)
}

// Explain writes the trace. What it quotes (a condition's message, a selection's, an object's
// own words) is escaped with termtext, each on its line: a tenant's text cannot act on the
// terminal or the page that shows it, nor start a line of its own.
func Explain(out io.Writer, in Input) error {
	w, cfg, claims, plan := in.Workload, in.Config, in.Claims, in.Plan
	sel, err := selection.New(cfg)
	if err != nil {
		return err
	}
	r := sel.Select(selection.Input{Workload: w, Region: in.Region})
	fmt.Fprintf(out, "Workload %s/%s (generation %d)\n\n", w.Namespace, w.Name, w.Generation)
	if p, ok := previewOf(in); ok {
		now := in.Now
		if now.IsZero() {
			now = time.Now()
		}
		fmt.Fprintf(out, "Preview environment: %s\n", termtext.Escape(p.Describe(now)))
	}
	if plan != nil && plan.Spec.ConfigRevision != "" {
		switch plan.Spec.ConfigRevision {
		case in.ConfigRevision:
			fmt.Fprintf(out, "Config: revision %s, the current one\n", orchconfig.ShortRevision(plan.Spec.ConfigRevision))
		default:
			fmt.Fprintf(out, "Config: the plan was written from revision %s; the current one is %s\n", orchconfig.ShortRevision(plan.Spec.ConfigRevision), orchconfig.ShortRevision(in.ConfigRevision))
		}
	}
	if r.Profile == "" {
		fmt.Fprintf(out, "Profile: none — %s\n", termtext.Escape(r.Message))
	} else {
		fmt.Fprintf(out, "Profile: %s, chosen by %s (%s)\n", termtext.Escape(r.Profile), r.ProfileSource, termtext.Escape(r.ProfileDetail))
	}
	for _, e := range r.RuleErrors {
		fmt.Fprintf(out, "  rule error: %s\n", termtext.Escape(fmt.Sprint(e)))
	}
	if len(r.Candidates) > 0 {
		fmt.Fprintln(out, "\nBackends:")
		for _, c := range r.Candidates {
			switch {
			case c.Rejected != "":
				fmt.Fprintf(out, "  ✗ %s — %s\n", c.BackendID, termtext.Escape(c.Rejected))
			case r.Backend != nil && c.BackendID == r.Backend.BackendID:
				fmt.Fprintf(out, "  ✓ %s — rank %d (priority %d, version %s): selected\n", c.BackendID, c.Rank, r.Backend.Priority, r.Backend.Version)
			default:
				fmt.Fprintf(out, "  · %s — rank %d\n", c.BackendID, c.Rank)
			}
		}
	}
	if r.Backend != nil && r.Backend.Placement != nil {
		explainPlacement(out, in, r.Backend)
	}
	if len(w.Spec.Resources) > 0 {
		fmt.Fprintln(out, "\nDependencies:")
		for _, k := range values.SortedKeys(w.Spec.Resources) {
			res := w.Spec.Resources[k]
			provider, ok := resolve(cfg, res)
			if !ok {
				provider = "no provisioner serves it"
			}
			phase := "not created"
			for _, c := range claims {
				if c.Spec.Key == k && metav1.IsControlledBy(&c, w) {
					phase = string(c.Status.Phase)
				}
			}
			// The claim's message, and the resolver's, are said once, under In the way.
			fmt.Fprintf(out, "  %s (%s): %s; claim %s\n", k, res.Type, provider, phase)
		}
	}
	fmt.Fprintln(out)
	ready := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
	switch {
	case ready == nil:
		fmt.Fprintln(out, "Blocking: the orchestrator has not reported on this Workload yet.")
	case ready.Status == metav1.ConditionTrue:
		fmt.Fprintf(out, "Ready: %s\n", termtext.Escape(ready.Message))
	default:
		fmt.Fprintf(out, "Blocking: %s — %s\n", termtext.Escape(ready.Reason), termtext.Escape(ready.Message))
	}
	if blockers := InTheWay(in); len(blockers) > 0 {
		fmt.Fprintln(out, "In the way:")
		printBlockers(out, blockers, 0)
	}
	return nil
}

// explainPlacement writes the cluster selector, every registered cluster and why each was or
// was not chosen.
func explainPlacement(out io.Writer, in Input, backend *orchconfig.Backend) {
	if backend.Placement.Several() || len(in.Copies) > 0 {
		explainSeveral(out, in, backend)
		return
	}
	pin := placement.Input{Placement: backend.Placement, Clusters: clusters.Placeable(in.Clusters), Namespace: in.Workload.Namespace, Name: in.Workload.Name, Now: in.Now}
	if pin.Now.IsZero() {
		pin.Now = time.Now()
	}
	if in.Plan != nil {
		pin.Current = in.Plan.Spec.Cluster
	}
	res := placement.Place(pin)
	explainCandidates(out, in, backend, "clusters matching "+res.Selector, res.Policy, res.Candidates, res.OK)
}

// explainCandidates writes the placement's header (what is asked for, the policy, failover)
// and every registered cluster with why it runs the Workload (or a copy) or not; false when
// no registered cluster matches.
func explainCandidates(out io.Writer, in Input, backend *orchconfig.Backend, asked, policy string, candidates []placement.Candidate, ok bool) bool {
	fmt.Fprintf(out, "\nPlacement: %s, policy %s", asked, policy)
	if after, holdDown := backend.Placement.Failover.Durations(); after > 0 {
		fmt.Fprintf(out, ", failover after %s (hold-down %s)", after, holdDown)
	}
	fmt.Fprintln(out)
	if len(candidates) == 0 {
		fmt.Fprintln(out, "  no cluster is registered (or your rights do not show them)")
	}
	for _, c := range candidates {
		mark := "✗"
		switch {
		case c.Chosen:
			mark = "✓"
		case c.Matches:
			mark = "·"
		}
		state := ""
		if s := in.Clusters[c.Name]; !s.Reachable {
			state = " (does not answer)"
		}
		fmt.Fprintf(out, "  %s %s%s — %s\n", mark, c.Name, state, termtext.Escape(c.Why))
	}
	if !ok {
		fmt.Fprintln(out, "  no registered cluster matches: the workload is not placed")
	}
	return ok
}
