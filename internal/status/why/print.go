package why

import (
	"fmt"
	"io"
	"strings"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

// Print writes the trace of the Workload namespace/name as scorectl why prints it. A line whose
// probe was not resolved is written as the control plane said it (an Object's), or not at all.
func Print(out io.Writer, namespace, name string, tr scorev1b1.Trace) {
	fmt.Fprintf(out, "Workload %s/%s (generation %d)\n\n", e(namespace), e(name), tr.Generation)
	if tr.Preview != "" {
		fmt.Fprintf(out, "Preview environment: %s\n", e(tr.Preview))
	}
	switch tr.PlanConfigRevision {
	case "":
	case tr.ConfigRevision:
		fmt.Fprintf(out, "Config: revision %s, the current one\n", orchconfig.ShortRevision(tr.PlanConfigRevision))
	default:
		fmt.Fprintf(out, "Config: the plan was written from revision %s; the current one is %s\n", orchconfig.ShortRevision(tr.PlanConfigRevision), orchconfig.ShortRevision(tr.ConfigRevision))
	}
	if p := tr.Profile; p.Name == "" {
		fmt.Fprintf(out, "Profile: none — %s\n", e(p.Message))
	} else {
		fmt.Fprintf(out, "Profile: %s, chosen by %s (%s)\n", e(p.Name), e(p.ChosenBy), e(p.Detail))
	}
	for _, r := range tr.RuleErrors {
		fmt.Fprintf(out, "  rule error: %s\n", e(r))
	}
	if len(tr.Backends) > 0 {
		fmt.Fprintln(out, "\nBackends:")
		for _, c := range tr.Backends {
			fmt.Fprintf(out, "  %s %s — %s\n", mark(c.Verdict), e(c.Name), e(c.Why))
		}
	}
	if p := tr.Placement; p != nil {
		printPlacement(out, p)
	}
	if len(tr.Dependencies) > 0 {
		fmt.Fprintln(out, "\nDependencies:")
		for _, d := range tr.Dependencies {
			provider := d.Provisioner
			if provider == "" {
				provider = "no provisioner serves it"
			}
			// The claim's message, and the resolver's, are said once, under In the way.
			fmt.Fprintf(out, "  %s (%s): %s; claim %s\n", e(d.Key), e(d.Type), e(provider), e(d.Claim))
		}
	}
	fmt.Fprintln(out)
	switch r := tr.Ready; {
	case r == nil:
		fmt.Fprintln(out, "Blocking: the orchestrator has not reported on this Workload yet.")
	case r.Status == "True":
		fmt.Fprintf(out, "Ready: %s\n", e(r.Message))
	default:
		fmt.Fprintf(out, "Blocking: %s — %s\n", e(r.Reason), e(r.Message))
	}
	var lines []string
	for _, b := range tr.InTheWay {
		if b.Probe != nil && b.Probe.Look != scorev1b1.TraceLookObject {
			continue
		}
		line := b.What
		if b.Says != "" {
			line += ": " + b.Says
		}
		lines = append(lines, strings.Repeat("  ", int(b.Depth)+1)+e(oneLine(line)))
	}
	if len(lines) > 0 {
		fmt.Fprintln(out, "In the way:")
		for _, l := range lines {
			fmt.Fprintln(out, l)
		}
	}
}

// e is text the trace quotes (a message, an object's own words, a name a tenant chose) on
// its line: terminal controls and line breaks escaped (termtext), so that it can neither act
// on the terminal or page that shows it nor start a line of its own.
func e(s string) string { return termtext.Escape(s) }

// mark is a verdict's sign: ✓ chosen, · eligible, ✗ rejected.
func mark(verdict string) string {
	switch verdict {
	case scorev1b1.TraceChosen:
		return "✓"
	case scorev1b1.TraceEligible:
		return "·"
	case scorev1b1.TraceRejected:
		return "✗"
	}
	return " "
}

// printPlacement writes the clusters asked for, the policy and failover, every cluster listed
// with why it runs the Workload (or a copy) or not, and the copies.
func printPlacement(out io.Writer, p *scorev1b1.TracePlacement) {
	fmt.Fprintf(out, "\nPlacement: %s, policy %s", e(p.Asked), e(p.Policy))
	if p.Failover != "" {
		fmt.Fprintf(out, ", failover %s", e(p.Failover))
	}
	fmt.Fprintln(out)
	switch {
	case p.OnlyMatching:
		fmt.Fprintln(out, "  (only the clusters that match are listed)")
	case len(p.Clusters) == 0:
		fmt.Fprintln(out, "  no cluster is registered (or your rights do not show them)")
	}
	for _, c := range p.Clusters {
		state := ""
		if c.Unreachable {
			state = " (does not answer)"
		}
		fmt.Fprintf(out, "  %s %s%s — %s\n", mark(c.Verdict), e(c.Name), state, e(c.Why))
	}
	if !p.Placed {
		fmt.Fprintln(out, "  no registered cluster matches: the workload is not placed")
		return
	}
	if p.Copies != "" {
		fmt.Fprintf(out, "  copies in placement order: %s; the endpoint is the first's\n", e(p.Copies))
	}
	if p.Removed != "" {
		fmt.Fprintf(out, "  being removed: %s\n", e(p.Removed))
	}
}
