// Package why explains the platform's decisions for one Workload: the profile and why, every
// backend candidate with the constraint that filtered it or its rank, the provisioner for each
// dependency, the one thing that keeps the Workload from Ready and the objects in the way, in
// their own words. It recomputes the decisions with the orchestrator's own selection code, and
// reads nothing itself.
//
// A trace is made in two steps. Compute decides, from the config and the Workload's own
// objects (its claims, plan and exposure), everything but the live state of the objects in the
// way: a line that only a read of the cluster can fill in carries a probe. Resolve fills those
// lines in from what a reader (internal/cli/whyobserve) read of what Reads names. A platform
// engineer's scorectl why (and the dashboard) does both with the user's rights; for a tenant,
// who may not read the config or the internal kinds, the orchestrator computes the trace with
// Input.Tenant (only what concerns that Workload, in its namespace) and answers a
// WorkloadTrace with it, and scorectl why resolves its probes with the tenant's own rights.
// Print writes a trace.
package why

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/preview"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/selection"
)

// Input is what the trace is computed from.
type Input struct {
	Workload *scorev1b1.Workload
	// Config is the Orchestrator Config, of revision ConfigRevision; nil when none is loaded.
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
	// Tenant computes the trace a tenant is given (Answer): what concerns the Workload, in
	// its namespace, and nothing of another's. The clusters its backend's placement does not
	// match are left out; an object outside the Workload's namespace (a shared instance's, in
	// the sharing namespace) is counted, never named or described, and a claim whose instance
	// lives there says the Workload's own summary of it, not the provisioner's words; the
	// quotas of another namespace are not looked at.
	Tenant bool
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

// Explain writes the trace of in, with what in.Observed read.
func Explain(out io.Writer, in Input) error {
	tr, err := Compute(in)
	if err != nil {
		return err
	}
	Print(out, in.Workload.Namespace, in.Workload.Name, Resolve(tr, in.Observed))
	return nil
}

// Compute is the trace of in: the decisions recomputed from the config, and what is in the way
// as far as the Workload's own objects tell. A line that a read of the cluster fills in carries
// a probe (Resolve).
func Compute(in Input) (scorev1b1.Trace, error) {
	w := in.Workload
	tr := scorev1b1.Trace{Generation: w.Generation, ConfigRevision: in.ConfigRevision}
	r := selection.Result{Message: "no valid Orchestrator Config is loaded."}
	if in.Config != nil {
		sel, err := selection.New(in.Config)
		if err != nil {
			return tr, err
		}
		r = sel.Select(selection.Input{Workload: w, Region: in.Region})
	}
	if p, ok := previewOf(in); ok {
		now := in.Now
		if now.IsZero() {
			now = time.Now()
		}
		tr.Preview = p.Describe(now)
	}
	if in.Plan != nil {
		tr.PlanConfigRevision = in.Plan.Spec.ConfigRevision
	}
	tr.Profile = scorev1b1.TraceProfile{Name: r.Profile, ChosenBy: string(r.ProfileSource), Detail: r.ProfileDetail}
	if r.Profile == "" {
		tr.Profile.Message = r.Message
	}
	tr.RuleErrors = r.RuleErrors
	for _, c := range r.Candidates {
		b := scorev1b1.TraceCandidate{Name: c.BackendID, Verdict: scorev1b1.TraceEligible, Why: fmt.Sprintf("rank %d", c.Rank)}
		switch {
		case c.Rejected != "":
			b.Verdict, b.Why = scorev1b1.TraceRejected, c.Rejected
		case r.Backend != nil && c.BackendID == r.Backend.BackendID:
			b.Verdict, b.Why = scorev1b1.TraceChosen, fmt.Sprintf("rank %d (priority %d, version %s): selected", c.Rank, r.Backend.Priority, r.Backend.Version)
		}
		tr.Backends = append(tr.Backends, b)
	}
	if r.Backend != nil && r.Backend.Placement != nil {
		tr.Placement = placementOf(in, r.Backend)
	}
	for _, k := range slices.Sorted(maps.Keys(w.Spec.Resources)) {
		res := w.Spec.Resources[k]
		d := scorev1b1.TraceDependency{Key: k, Type: res.Type, Claim: "not created"}
		if provider, ok := resolve(in.Config, res); ok {
			d.Provisioner = provider
		}
		for _, c := range in.Claims {
			if c.Spec.Key == k && metav1.IsControlledBy(&c, w) {
				d.Claim = string(c.Status.Phase)
			}
		}
		tr.Dependencies = append(tr.Dependencies, d)
	}
	if ready := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady); ready != nil {
		tr.Ready = &scorev1b1.TraceReady{Status: string(ready.Status), Reason: ready.Reason, Message: ready.Message}
	}
	t := newWalk(in)
	t.sel = &r
	tr.InTheWay = flatten(t.run(), 0)
	return tr, nil
}
