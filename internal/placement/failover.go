package placement

// Failover: a backend's placement.failover moves a Workload off a cluster that has not
// answered for failover.after, as a relabel moves it today. The rules:
//
//   - A cluster is lost when it has not answered (DownSince) for after or longer. The
//     Workload's cluster is kept while it matches and is not lost.
//   - A lost cluster's Workload goes to a matching cluster that has answered without a break
//     for the hold-down (UpSince; failover.holdDown, default after), chosen by the policy
//     among those. None: it stays, and waits (nothing else is better).
//   - A Workload placed anew (first, or its cluster no longer matches) goes to a matching
//     cluster that is not lost, when there is one.
//   - A Workload never moves back because a cluster returns: it stays where it runs while
//     that matches and answers. A cluster that keeps coming and going is no target, since each
//     return starts its hold-down again; it loses its own Workloads only by staying silent for
//     after.

import (
	"fmt"
	"time"

	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
)

// failover is a placement's failover rule at a moment; nil is none (every method holds).
type failover struct {
	after, holdDown time.Duration
	in              Input
	byName          map[string]Cluster
}

// failoverOf is in's failover rule, nil when its backend does not fail over or no time is
// given.
func failoverOf(in Input, clusters []Cluster) *failover {
	if in.Placement == nil || in.Now.IsZero() {
		return nil
	}
	after, holdDown := in.Placement.Failover.Durations()
	if after <= 0 {
		return nil
	}
	f := &failover{after: after, holdDown: holdDown, in: in, byName: map[string]Cluster{}}
	for _, c := range clusters {
		f.byName[c.Name] = c
	}
	return f
}

// down reports whether a cluster is known not to answer; silence is for how long.
func (f *failover) down(name string) bool {
	return f != nil && !f.byName[name].DownSince.IsZero()
}

func (f *failover) silence(name string) time.Duration {
	if !f.down(name) {
		return 0
	}
	return max(f.in.Now.Sub(f.byName[name].DownSince), 0)
}

// lost reports whether a cluster has not answered for after or longer.
func (f *failover) lost(name string) bool {
	return f.down(name) && f.silence(name) >= f.after
}

// target reports whether a cluster may receive a Workload that fails over: it has answered
// without a break for the hold-down.
func (f *failover) target(name string) bool {
	up := f.byName[name].UpSince
	return !up.IsZero() && f.in.Now.Sub(up) >= f.holdDown
}

// failOver places a Workload whose cluster is lost: on a target chosen by the policy, or,
// with none, where it is.
func (f *failover) failOver(res *Result, matching []string) {
	var targets []string
	for _, n := range matching {
		if n != f.in.Current && f.target(n) {
			targets = append(targets, n)
		}
	}
	if len(targets) == 0 {
		res.Cluster = f.in.Current
		return
	}
	res.Cluster = res.choose(targets, f.in)
	res.FailedOver, res.Silence = true, f.silence(f.in.Current)
}

// avoiding are the matching clusters a Workload placed anew may go to: those not lost, when
// there are any.
func (f *failover) avoiding(matching []string) []string {
	if f == nil {
		return matching
	}
	var out []string
	for _, n := range matching {
		if !f.lost(n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return matching
	}
	return out
}

// recheck is when the placement may change by time alone: the Workload's cluster, silent,
// becomes lost; or, lost with no target, the first matching cluster's hold-down ends.
func (f *failover) recheck(res Result, matching []string) time.Time {
	if f == nil || res.Cluster != f.in.Current || !f.down(f.in.Current) {
		return time.Time{}
	}
	current := f.in.Current
	if !f.lost(current) {
		return f.byName[current].DownSince.Add(f.after)
	}
	var at time.Time
	for _, n := range matching {
		up := f.byName[n].UpSince
		if n == current || up.IsZero() || f.target(n) {
			continue
		}
		if due := up.Add(f.holdDown); at.IsZero() || due.Before(at) {
			at = due
		}
	}
	return at
}

// why says what failover made of a matching candidate; "" leaves it to placement's own words.
func (f *failover) why(c *Candidate, res Result) string {
	if f == nil || !c.Matches {
		return ""
	}
	name, current := c.Name, f.in.Current
	lostCurrent := current != "" && f.lost(current)
	switch {
	case name == res.Cluster && name == current && lostCurrent:
		return fmt.Sprintf("Chosen: the workload runs there; it has not answered for %s (failover after %s), but no other matching cluster has answered for the hold-down (%s).",
			round(f.silence(name)), f.after, f.holdDown)
	case name == res.Cluster && name == current && f.down(name):
		return fmt.Sprintf("Chosen: the workload runs there and it still matches; it has not answered for %s (failover after %s).", round(f.silence(name)), f.after)
	case name == res.Cluster && res.FailedOver && res.Policy == orchconfig.PlacementOrdered:
		return fmt.Sprintf("Chosen: the workload fails over from %s; the first matching cluster by name that has answered for the hold-down (Ordered).", current)
	case name == res.Cluster && res.FailedOver:
		return fmt.Sprintf("Chosen: the workload fails over from %s; the highest rendezvous weight among the matching clusters that have answered for the hold-down (Spread).", current)
	case name == res.Cluster:
		return ""
	case name == current && res.FailedOver:
		return fmt.Sprintf("Matches, but has not answered for %s (failover after %s): the workload fails over to %s.", round(f.silence(name)), f.after, res.Cluster)
	case f.lost(name):
		return fmt.Sprintf("Matches, but has not answered for %s (failover after %s).", round(f.silence(name)), f.after)
	case !lostCurrent || f.target(name):
		return ""
	case f.down(name):
		return "Matches, but does not answer: no failover to it."
	case f.byName[name].UpSince.IsZero():
		return "Matches, but since when it answers is not known yet: no failover to it."
	}
	return fmt.Sprintf("Matches, but has answered only for %s (hold-down %s): no failover to it yet.", round(f.in.Now.Sub(f.byName[name].UpSince)), f.holdDown)
}

func round(d time.Duration) time.Duration {
	return d.Round(time.Second)
}
