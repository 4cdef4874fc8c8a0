package why

import (
	"fmt"
	"unicode/utf8"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// Answer is the trace a tenant is given for in's Workload, the orchestrator's answer to a
// WorkloadTrace: Compute with in.Tenant (what concerns the Workload, in its namespace), without
// naming where the config is kept, bounded to what a status may hold (Bound). Its probes name
// objects of the Workload's namespace only, which the tenant's own rights then read.
func Answer(in Input) (scorev1b1.Trace, error) {
	in.Tenant, in.ConfigSource = true, ""
	tr, err := Compute(in)
	if err != nil {
		return scorev1b1.Trace{}, err
	}
	return Bound(tr), nil
}

// Bound cuts a trace to the bounds of its API type (scorev1b1.TraceMax…): every sentence to
// TraceMaxText bytes (the Ready message to TraceMaxMessage), and the lists to their length, the
// last line saying how many more there were. A probe whose names do not fit is dropped, with
// its line when only the probe would say it.
func Bound(tr scorev1b1.Trace) scorev1b1.Trace {
	tr = *tr.DeepCopy() // the caller's lists stay as they are
	tr.Preview = cut(tr.Preview, scorev1b1.TraceMaxText)
	tr.ConfigRevision, tr.PlanConfigRevision = cut(tr.ConfigRevision, 128), cut(tr.PlanConfigRevision, 128)
	p := &tr.Profile
	p.Name, p.ChosenBy, p.Detail, p.Message = cut(p.Name, 253), cut(p.ChosenBy, 16), cut(p.Detail, scorev1b1.TraceMaxText), cut(p.Message, scorev1b1.TraceMaxText)
	if len(tr.RuleErrors) > scorev1b1.TraceMaxRuleErrors {
		tr.RuleErrors = tr.RuleErrors[:scorev1b1.TraceMaxRuleErrors]
	}
	for i := range tr.RuleErrors {
		tr.RuleErrors[i] = cut(tr.RuleErrors[i], scorev1b1.TraceMaxText)
	}
	tr.Backends = boundCandidates(tr.Backends, "backends")
	if pl := tr.Placement; pl != nil {
		pl.Asked, pl.Policy, pl.Failover = cut(pl.Asked, scorev1b1.TraceMaxText), cut(pl.Policy, 32), cut(pl.Failover, 128)
		pl.Copies, pl.Removed = cut(pl.Copies, scorev1b1.TraceMaxText), cut(pl.Removed, scorev1b1.TraceMaxText)
		pl.Clusters = boundCandidates(pl.Clusters, "clusters")
	}
	for i := range tr.Dependencies {
		d := &tr.Dependencies[i]
		d.Key, d.Type, d.Provisioner, d.Claim = cut(d.Key, 63), cut(d.Type, 253), cut(d.Provisioner, scorev1b1.TraceMaxText), cut(d.Claim, 32)
	}
	if r := tr.Ready; r != nil {
		r.Status, r.Reason, r.Message = cut(r.Status, 16), cut(r.Reason, 64), cut(r.Message, scorev1b1.TraceMaxMessage)
	}
	var lines []scorev1b1.TraceBlocker
	for _, b := range tr.InTheWay {
		b.What, b.Says = cut(b.What, scorev1b1.TraceMaxText), cut(b.Says, scorev1b1.TraceMaxText)
		if p := b.Probe; p != nil && (len(p.APIVersion) > 253 || len(p.Kind) > 63 || len(p.Namespace) > 63 || len(p.Name) > 253) {
			if p.Look != scorev1b1.TraceLookObject {
				continue
			}
			b.Probe = nil
		}
		lines = append(lines, b)
	}
	if n := len(lines); n > scorev1b1.TraceMaxBlockers {
		lines = append(lines[:scorev1b1.TraceMaxBlockers-1], scorev1b1.TraceBlocker{What: fmt.Sprintf("%d more lines", n-scorev1b1.TraceMaxBlockers+1), Says: "not written: a trace holds at most " + fmt.Sprint(scorev1b1.TraceMaxBlockers)})
	}
	tr.InTheWay = lines
	return tr
}

// boundCandidates cuts a list of backends or clusters to TraceMaxCandidates, and a line that
// says how many more there are.
func boundCandidates(cs []scorev1b1.TraceCandidate, what string) []scorev1b1.TraceCandidate {
	more := len(cs) - scorev1b1.TraceMaxCandidates
	if more > 0 {
		cs = cs[:scorev1b1.TraceMaxCandidates]
	}
	for i := range cs {
		cs[i].Name, cs[i].Why = cut(cs[i].Name, 253), cut(cs[i].Why, scorev1b1.TraceMaxText)
	}
	if more > 0 {
		cs = append(cs, scorev1b1.TraceCandidate{Name: "…", Why: fmt.Sprintf("%d more %s, not written", more, what)})
	}
	return cs
}

// cut keeps s to n bytes, ending in "…" when it was longer, at a character's boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	end := n - len("…")
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + "…"
}
