package placement

// Failover for copies: a placement on several clusters applies its backend's failover as Place
// does (failover.go), copy by copy:
//
//   - A copy whose cluster is lost (silent for after, without a break) moves to the first free
//     matching cluster, in the policy's rank, that has answered for the hold-down; none: it
//     stays, and waits. The copies on clusters that answer are kept first, so a failover never
//     takes another copy's cluster.
//   - The cluster a copy failed over from is given to no other copy in the same placement (its
//     objects are still there: Held says so on the next).
//   - A copy moved because its cluster stopped matching, and a new copy, take the first free
//     cluster that is not lost, when there is one (else the first free one: it waits there).
//   - Never back, no bounce: a copy stays where it runs while that cluster matches and is not
//     lost; a cluster that has just come back is no target until its hold-down ends.
//
// Under All every matching cluster runs a copy, so none is free: a lost cluster's copy stays.

import (
	"fmt"
	"time"
)

// failOverCopies moves the kept copies whose cluster is lost to the first free target in rank
// order, marking it used and their old cluster not; it returns the clusters they left.
func (f *failover) failOverCopies(placed []Copy, ranked []string, used map[string]bool, heldByOther func(string, int) bool) map[string]bool {
	vacated := map[string]bool{}
	if f == nil {
		return vacated
	}
	for i, c := range placed {
		if !f.lost(c.Cluster) {
			continue
		}
		for _, to := range ranked {
			if used[to] || vacated[to] || heldByOther(to, c.Slot) || !f.target(to) {
				continue
			}
			used[to], used[c.Cluster], vacated[c.Cluster] = true, false, true
			placed[i] = Copy{Slot: c.Slot, Cluster: to, From: c.Cluster, FailedOver: true, Silence: f.silence(c.Cluster)}
			break
		}
	}
	return vacated
}

// recheckCopies is the earliest time a copy that stays may be placed otherwise by time alone:
// its cluster, silent, becoming lost; or, lost with no target, a hold-down ending.
func (f *failover) recheckCopies(placed []Copy, matching []string) time.Time {
	var at time.Time
	for _, c := range placed {
		if c.From != "" {
			continue
		}
		if due := f.recheck(c.Cluster, matching); !due.IsZero() && (at.IsZero() || due.Before(at)) {
			at = due
		}
	}
	return at
}

// whyCopies says what failover made of a matching candidate of a placement on several
// clusters; "" leaves it to PlaceSeveral's own words. kept are the clusters copies ran on.
func (f *failover) whyCopies(c *Candidate, res Several, kept map[string]bool) string {
	if f == nil || !c.Matches {
		return ""
	}
	name := c.Name
	var s seen
	var from string
	for _, cp := range res.Copies {
		switch {
		case cp.FailedOver && cp.From == name:
			s.to = cp.Cluster
		case cp.FailedOver && cp.Cluster == name:
			from = cp.From
		case cp.Cluster == name:
			s.runs = true
		}
		if cp.From == "" && kept[cp.Cluster] && f.lost(cp.Cluster) {
			s.waiting = true
		}
	}
	if from != "" {
		return fmt.Sprintf("Chosen: a copy of the workload fails over from %s; the first free matching cluster under %s that has answered for the hold-down.", from, res.Policy)
	}
	s.stays = s.runs && kept[name]
	return f.why(name, s, false)
}
