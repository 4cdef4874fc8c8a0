// Package placement chooses the member clusters a Workload's copies run on (PlaceSeveral; one
// cluster is one copy, and Place tells that one copy in a single Workload's words): the
// clusters whose labels match the backend's cluster selector are the candidates; the cluster a
// copy already runs on is kept while it is one of them; otherwise the policy chooses — Spread
// by rendezvous hashing of the Workload's namespace and name over the candidates' names,
// Ordered the first candidate by name. A copy is never split across clusters, and it moves only
// when its cluster stops matching or is no longer registered, or, when its backend fails over,
// when its cluster has not answered for failover.after (failover.go). Pure: the orchestrator,
// `scorectl render` and `scorectl why` call it with what they read, the time included.
package placement

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// Cluster is a registered member cluster: its name and labels, and since when it has
// answered or not, as the runtime's probe published it.
type Cluster struct {
	Name   string
	Labels map[string]string
	// UpSince is since when it has answered without a break, DownSince since when it has not
	// answered; both zero when that is not known.
	UpSince, DownSince time.Time
}

// Input is what a placement decides from.
type Input struct {
	// Placement is the selected backend's; nil runs the Workload on the hub.
	Placement *orchconfig.Placement
	// Clusters are the registered clusters, in any order.
	Clusters []Cluster
	// Current is the cluster the Workload's plan names ("" when it has none).
	Current string
	// Namespace and Name are the Workload's.
	Namespace, Name string
	// Now is the time a failover is judged at; zero judges none (an offline render).
	Now time.Time
}

// Candidate is one registered cluster and what placement made of it.
type Candidate struct {
	Name    string
	Matches bool
	Chosen  bool
	// Why says, in a sentence, why it was or was not chosen.
	Why string
}

// Result is a placement.
type Result struct {
	// OK is false when no registered cluster matches.
	OK bool
	// Cluster is the chosen cluster; "" is the hub (no placement). Labels are its labels,
	// which the backend's placement overrides are matched against.
	Cluster string
	Labels  map[string]string
	// Moved is set when the Workload ran on another cluster, which no longer fits.
	Moved bool
	// FailedOver is set when it moved because its cluster (Input.Current) has not answered
	// for Silence, longer than the backend's failover.after.
	FailedOver bool
	Silence    time.Duration
	// RecheckAt is when the same inputs may place it otherwise, by time alone: a failover
	// coming due, a hold-down ending. Zero: never.
	RecheckAt time.Time
	// Candidates are every registered cluster, by name.
	Candidates []Candidate
	// Selector is the cluster selector, as kubectl writes one; Policy the policy applied.
	Selector, Policy string
}

// Place chooses the Workload's cluster: its one copy, placed by PlaceSeveral (one cluster is
// one copy: the same rules choose it), told in the words of a Workload on one cluster.
func Place(in Input) Result {
	if in.Placement == nil {
		return Result{OK: true}
	}
	one := *in.Placement
	one.Clusters = "" // one copy
	sin := SeveralInput{Placement: &one, Clusters: in.Clusters, Namespace: in.Namespace, Name: in.Name, Now: in.Now}
	if in.Current != "" {
		sin.Current = []Copy{{Slot: 0, Cluster: in.Current}}
	}
	several := PlaceSeveral(sin)
	res := Result{OK: several.OK, Selector: several.Selector, Policy: several.Policy, RecheckAt: several.RecheckAt, Candidates: several.Candidates}
	c, ok := several.First()
	if !ok {
		return res
	}
	res.Cluster, res.Labels, res.FailedOver, res.Silence = c.Cluster, c.Labels, c.FailedOver, c.Silence
	res.Moved = in.Current != "" && in.Current != res.Cluster
	fo := failoverOf(in.Placement, in.Now, in.Clusters)
	kept := slices.ContainsFunc(res.Candidates, func(c Candidate) bool { return c.Matches && c.Name == in.Current })
	for i := range res.Candidates {
		c := &res.Candidates[i]
		if !c.Matches {
			continue // PlaceSeveral said why
		}
		c.Chosen = c.Name == res.Cluster
		if why := res.failoverWhy(fo, c.Name, in.Current); why != "" {
			c.Why = why
			continue
		}
		switch {
		case c.Chosen && c.Name == in.Current:
			c.Why = "Chosen: the workload runs there and it still matches."
		case c.Chosen && res.Policy == orchconfig.PlacementOrdered:
			c.Why = "Chosen: the first matching cluster by name (Ordered)."
		case c.Chosen:
			c.Why = "Chosen: the highest rendezvous weight for this workload (Spread)."
		case kept:
			c.Why = fmt.Sprintf("Matches; the workload stays on %s, which still matches.", in.Current)
		default:
			c.Why = fmt.Sprintf("Matches; %s ranks first under %s.", res.Cluster, res.Policy)
		}
	}
	return res
}

// failoverWhy says what failover made of a matching cluster for a Workload on one cluster,
// which ran on current; "" leaves it to Place's own words.
func (res *Result) failoverWhy(fo *failover, name, current string) string {
	if fo == nil {
		return ""
	}
	switch {
	case name == res.Cluster && res.FailedOver && res.Policy == orchconfig.PlacementOrdered:
		return fmt.Sprintf("Chosen: the workload fails over from %s; the first matching cluster by name that has answered for the hold-down (Ordered).", current)
	case name == res.Cluster && res.FailedOver:
		return fmt.Sprintf("Chosen: the workload fails over from %s; the highest rendezvous weight among the matching clusters that have answered for the hold-down (Spread).", current)
	}
	s := seen{runs: name == res.Cluster, waiting: current != "" && fo.lost(current)}
	s.stays = s.runs && name == current
	if name == current && res.FailedOver {
		s.to = res.Cluster
	}
	return fo.why(name, s, true)
}

// candidates are the registered clusters by name, each marked whether the placement's selector
// matches its labels (those that do not are told so), and the names of those that match, by
// name: the one candidate loop of Place and PlaceSeveral.
func candidates(p *orchconfig.Placement, clusters []Cluster) (sorted []Cluster, out []Candidate, matching []string) {
	sorted = slices.Clone(clusters)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, c := range sorted {
		cand := Candidate{Name: c.Name, Matches: p.ClusterSelector.MatchesLabels(c.Labels)}
		if cand.Matches {
			matching = append(matching, c.Name)
		} else {
			cand.Why = notMatching(c.Labels)
		}
		out = append(out, cand)
	}
	return sorted, out, matching
}

// notMatching says why a cluster is no candidate.
func notMatching(labels map[string]string) string {
	return fmt.Sprintf("Its labels (%s) do not match the selector.", labelString(labels))
}

// policyOf is the placement's policy, Spread when it names none.
func policyOf(p *orchconfig.Placement) string {
	if p.Policy == "" {
		return orchconfig.PlacementSpread
	}
	return p.Policy
}

// SelectorString writes a cluster selector as kubectl writes label selectors.
func SelectorString(s orchconfig.Selector) string {
	var parts []string
	keys := make([]string, 0, len(s.MatchLabels))
	for k := range s.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, k+"="+s.MatchLabels[k])
	}
	for _, e := range s.MatchExpressions {
		switch e.Operator {
		case "Exists":
			parts = append(parts, e.Key)
		case "DoesNotExist":
			parts = append(parts, "!"+e.Key)
		default:
			parts = append(parts, fmt.Sprintf("%s %s (%s)", e.Key, strings.ToLower(e.Operator), strings.Join(e.Values, ",")))
		}
	}
	return strings.Join(parts, ",")
}

func labelString(l map[string]string) string {
	if len(l) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + l[k]
	}
	return strings.Join(parts, ",")
}
