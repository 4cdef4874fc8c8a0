// Package placement chooses the one member cluster a Workload runs on: the clusters whose
// labels match the backend's cluster selector are the candidates; the cluster the Workload
// already runs on is kept while it is one of them; otherwise the policy chooses — Spread by
// rendezvous hashing of the Workload's namespace and name over the candidates' names, Ordered
// the first candidate by name. A Workload is never split across clusters, and it moves only
// when its cluster stops matching or is no longer registered, or, when its backend fails over,
// when its cluster has not answered for failover.after (failover.go). Pure: the orchestrator
// and `scorectl why` call it with what they read, the time included.
package placement

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
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

// Place chooses the Workload's cluster.
func Place(in Input) Result {
	if in.Placement == nil {
		return Result{OK: true}
	}
	res := Result{Selector: SelectorString(in.Placement.ClusterSelector), Policy: in.Placement.Policy}
	if res.Policy == "" {
		res.Policy = orchconfig.PlacementSpread
	}
	clusters := append([]Cluster(nil), in.Clusters...)
	sort.Slice(clusters, func(i, j int) bool { return clusters[i].Name < clusters[j].Name })
	var matching []string
	for _, c := range clusters {
		cand := Candidate{Name: c.Name, Matches: in.Placement.ClusterSelector.MatchesLabels(c.Labels)}
		if cand.Matches {
			matching = append(matching, c.Name)
		} else {
			cand.Why = fmt.Sprintf("Its labels (%s) do not match the selector.", labelString(c.Labels))
		}
		res.Candidates = append(res.Candidates, cand)
	}
	if len(matching) == 0 {
		return res
	}
	res.OK = true
	fo := failoverOf(in, clusters)
	switch {
	case contains(matching, in.Current) && !fo.lost(in.Current):
		res.Cluster = in.Current
	case contains(matching, in.Current):
		fo.failOver(&res, matching)
	default:
		res.Cluster = res.choose(fo.avoiding(matching), in)
	}
	res.Moved = in.Current != "" && in.Current != res.Cluster
	res.RecheckAt = fo.recheck(res, matching)
	for _, c := range clusters {
		if c.Name == res.Cluster {
			res.Labels = c.Labels
		}
	}
	for i := range res.Candidates {
		c := &res.Candidates[i]
		if why := fo.why(c, res); why != "" {
			c.Chosen, c.Why = c.Name == res.Cluster, why
			continue
		}
		switch {
		case !c.Matches:
		case c.Name == res.Cluster && c.Name == in.Current:
			c.Chosen, c.Why = true, "Chosen: the workload runs there and it still matches."
		case c.Name == res.Cluster && res.Policy == orchconfig.PlacementOrdered:
			c.Chosen, c.Why = true, "Chosen: the first matching cluster by name (Ordered)."
		case c.Name == res.Cluster:
			c.Chosen, c.Why = true, "Chosen: the highest rendezvous weight for this workload (Spread)."
		case contains(matching, in.Current):
			c.Why = fmt.Sprintf("Matches; the workload stays on %s, which still matches.", in.Current)
		default:
			c.Why = fmt.Sprintf("Matches; %s ranks first under %s.", res.Cluster, res.Policy)
		}
	}
	return res
}

// choose is the policy's choice among names.
func (res *Result) choose(names []string, in Input) string {
	if res.Policy == orchconfig.PlacementOrdered {
		return names[0]
	}
	return highestWeight(names, in.Namespace+"/"+in.Name)
}

// highestWeight is the name whose hash with key is the largest (rendezvous hashing): each
// key's choice depends on the candidates only, and a new candidate takes only the keys it
// now wins.
func highestWeight(names []string, key string) string {
	var best string
	var bestWeight uint64
	for _, n := range names {
		sum := sha256.Sum256([]byte(n + "\x00" + key))
		if w := binary.BigEndian.Uint64(sum[:8]); best == "" || w > bestWeight {
			best, bestWeight = n, w
		}
	}
	return best
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

func contains(names []string, n string) bool {
	for _, x := range names {
		if x == n && n != "" {
			return true
		}
	}
	return false
}
