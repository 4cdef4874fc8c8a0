package placement

// Failover: a backend's placement.failover moves a Workload (each of its copies: one cluster is
// one copy, copies_failover.go) off a cluster that has not answered for failover.after, as a
// relabel moves it. The rules:
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

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// failover is a placement's failover rule at a moment; nil is none (every method holds).
type failover struct {
	after, holdDown time.Duration
	now             time.Time
	byName          map[string]Cluster
}

// failoverOf is p's failover rule at now, nil when its backend does not fail over or no time
// is given.
func failoverOf(p *orchconfig.Placement, now time.Time, clusters []Cluster) *failover {
	if p == nil || now.IsZero() {
		return nil
	}
	after, holdDown := p.Failover.Durations()
	if after <= 0 {
		return nil
	}
	f := &failover{after: after, holdDown: holdDown, now: now, byName: map[string]Cluster{}}
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
	return max(f.now.Sub(f.byName[name].DownSince), 0)
}

// lost reports whether a cluster has not answered for after or longer.
func (f *failover) lost(name string) bool {
	return f.down(name) && f.silence(name) >= f.after
}

// target reports whether a cluster may receive a Workload that fails over: it has answered
// without a break for the hold-down.
func (f *failover) target(name string) bool {
	up := f.byName[name].UpSince
	return !up.IsZero() && f.now.Sub(up) >= f.holdDown
}

// recheck is when a copy that stays on current may be placed otherwise by time alone:
// current, silent, becomes lost; or, lost with no target, the first matching cluster's
// hold-down ends. Zero: never.
func (f *failover) recheck(current string, matching []string) time.Time {
	if f == nil || !f.down(current) {
		return time.Time{}
	}
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

// seen is what placement made of a matching cluster, as failover tells it.
type seen struct {
	// runs: a copy runs there (not one failing over to it); stays: it ran there before and is
	// kept. to: the copy that ran there fails over to this cluster.
	runs, stays bool
	to          string
	// waiting: a copy waits on a lost cluster for a target, so the clusters that are none say
	// why.
	waiting bool
}

// why says what failover made of a matching cluster that no copy fails over to; "" leaves it to
// placement's own words. one tells it of a Workload on one cluster ("the workload"), else of
// one of its copies.
func (f *failover) why(name string, s seen, one bool) string {
	if f == nil {
		return ""
	}
	subject, its, others := "a copy of the workload", "its copy", "free matching"
	if one {
		subject, its, others = "the workload", "the workload", "matching"
	}
	switch {
	case s.stays && f.lost(name):
		return fmt.Sprintf("Chosen: %s runs there; it has not answered for %s (failover after %s), but no other %s cluster has answered for the hold-down (%s).",
			subject, round(f.silence(name)), f.after, others, f.holdDown)
	case s.stays && f.down(name):
		return fmt.Sprintf("Chosen: %s runs there and it still matches; it has not answered for %s (failover after %s).", subject, round(f.silence(name)), f.after)
	case s.runs:
		return ""
	case s.to != "":
		return fmt.Sprintf("Matches, but has not answered for %s (failover after %s): %s fails over to %s.", round(f.silence(name)), f.after, its, s.to)
	case f.lost(name):
		return fmt.Sprintf("Matches, but has not answered for %s (failover after %s).", round(f.silence(name)), f.after)
	case !s.waiting || f.target(name):
		return ""
	case f.down(name):
		return "Matches, but does not answer: no failover to it."
	case f.byName[name].UpSince.IsZero():
		return "Matches, but since when it answers is not known yet: no failover to it."
	}
	return fmt.Sprintf("Matches, but has answered only for %s (hold-down %s): no failover to it yet.", round(f.now.Sub(f.byName[name].UpSince)), f.holdDown)
}

func round(d time.Duration) time.Duration {
	return d.Round(time.Second)
}
