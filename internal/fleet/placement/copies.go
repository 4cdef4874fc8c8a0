package placement

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// Several clusters: a placement with clusters N (or All) runs a copy of each Workload on N of
// the matching clusters (or on every one). Each copy has a slot, which names its objects (slot
// 0 keeps the Workload's own names, so that one copy is what a single-cluster placement makes),
// and a cluster, never another copy's. The copies are kept where they are while their clusters
// match; the policy ranks the matching clusters (Spread: by rendezvous weight for the
// Workload; Ordered: by name), and new copies go to the first free ones in that order.

// Copy is one copy of a Workload placed on several clusters.
type Copy struct {
	// Slot names the copy's objects (its plan, exposure and claims); 0 is the Workload's own
	// names.
	Slot int
	// Cluster is where the copy runs, Labels its labels (for the backend's overrides).
	Cluster string
	Labels  map[string]string
	// From is the cluster the copy ran on when it moves ("" when it does not): that cluster no
	// longer matches, or it is lost (FailedOver), and the copy's plan moves as a single
	// Workload's does.
	From string
	// FailedOver is set when the copy moves because From has not answered for Silence, longer
	// than the backend's failover.after (copies_failover.go).
	FailedOver bool
	Silence    time.Duration
}

// SeveralInput is what a placement on several clusters decides from.
type SeveralInput struct {
	// Placement is the selected backend's (not nil).
	Placement *orchconfig.Placement
	// Clusters are the registered clusters, in any order.
	Clusters []Cluster
	// Namespace and Name are the Workload's.
	Namespace, Name string
	// Current are the Workload's copies as their plans name them (slot and cluster), a plan
	// being deleted excepted.
	Current []Copy
	// Held are, by cluster, the slots of the copies that hold objects there: where a copy
	// runs, where it ran before a move until the runtime deleted its objects there, and where
	// a copy being removed runs until its plan is gone. No copy is placed where another holds
	// objects: two copies of a Workload render the same objects.
	Held map[string][]int
	// Now is the time a failover is judged at; zero judges none (an offline render).
	Now time.Time
}

// Several is a placement on several clusters.
type Several struct {
	// OK is false when no registered cluster matches: then nothing changes (no copy is
	// placed, moved or removed).
	OK bool
	// Copies are the copies placed, in placement order (the policy's rank of their
	// clusters): the first one's endpoint is the Workload's.
	Copies []Copy
	// Removed are the slots of current copies that are not placed any more: their cluster
	// stopped matching and no free one is left, or fewer copies are asked for.
	Removed []int
	// Want is how many copies the placement asks for (All: the matching clusters).
	Want int
	// RecheckAt is when the same inputs may place the copies otherwise, by time alone (a
	// copy's failover coming due, a hold-down ending), as Result's. Zero: never.
	RecheckAt time.Time
	// Candidates are every registered cluster, by name; Selector and Policy as Result's.
	Candidates       []Candidate
	Selector, Policy string
}

// First is the first copy in placement order, the one whose endpoint the Workload shows.
func (s Several) First() (Copy, bool) {
	if len(s.Copies) == 0 {
		return Copy{}, false
	}
	return s.Copies[0], true
}

// PlaceSeveral places the copies of a Workload: the current copies stay on their clusters while
// these match (the Want of the lowest slots, when fewer are asked for); a copy whose
// cluster stopped matching moves to the first free matching cluster while copies are missing,
// else it is removed; then new copies take the first free matching clusters, in the lowest
// free slots, until Want copies run or no free cluster is left. A cluster is free when no copy
// runs there or holds objects there. With failover (copies_failover.go) a copy whose cluster is
// lost moves to the first free matching cluster that has answered for the hold-down, else
// stays; and moves and new copies take a free cluster that is not lost when there is one.
func PlaceSeveral(in SeveralInput) Several {
	res := Several{Selector: SelectorString(in.Placement.ClusterSelector), Policy: policyOf(in.Placement)}
	clusters, cands, matching := candidates(in.Placement, in.Clusters)
	res.Candidates = cands
	if len(matching) == 0 {
		return res
	}
	res.OK = true
	n, all := in.Placement.Copies()
	res.Want = n
	if all || n > len(matching) {
		res.Want = len(matching)
	}
	p := newCopyPlacer(in, res.Want, rank(matching, res.Policy, in.Namespace+"/"+in.Name))
	left := p.keep()
	// The copies kept on a lost cluster fail over, once every kept copy holds its cluster: a
	// copy that answers is never taken from.
	p.fo = failoverOf(in.Placement, in.Now, clusters)
	p.vacated = p.fo.failOverCopies(p.placed, p.ranked, p.used, p.heldByOther)
	res.Removed = p.move(left)
	p.add()
	res.Copies = p.inOrder(clusters)
	res.RecheckAt = p.fo.recheckCopies(res.Copies, matching)
	res.explain(in, p.used, p.fo)
	sort.Ints(res.Removed)
	return res
}

// copyPlacer places a Workload's copies on the matching clusters, ranked: the clusters used,
// the slots taken, and the copies placed so far.
type copyPlacer struct {
	in     SeveralInput
	want   int
	ranked []string
	order  map[string]int
	used   map[string]bool
	// slots are the slots taken: a slot is taken while a plan of that name exists, being
	// deleted included.
	slots  map[int]bool
	placed []Copy
	// fo is the placement's failover (nil without), and vacated the clusters the copies it
	// moved left.
	fo      *failover
	vacated map[string]bool
}

func newCopyPlacer(in SeveralInput, want int, ranked []string) *copyPlacer {
	p := &copyPlacer{in: in, want: want, ranked: ranked, order: map[string]int{}, used: map[string]bool{}, slots: map[int]bool{}}
	for i, c := range ranked {
		p.order[c] = i
	}
	for _, held := range in.Held {
		for _, s := range held {
			p.slots[s] = true
		}
	}
	return p
}

// matches reports whether cluster is one of the matching clusters.
func (p *copyPlacer) matches(cluster string) bool {
	_, ok := p.order[cluster]
	return ok && cluster != ""
}

// heldByOther reports whether a copy other than slot holds objects on cluster (slot -1: any
// copy).
func (p *copyPlacer) heldByOther(cluster string, slot int) bool {
	return slices.ContainsFunc(p.in.Held[cluster], func(s int) bool { return s != slot })
}

// keep keeps the current copies on their clusters while these match, the lowest slots first
// (fewer copies asked for remove the highest, so one copy asked for again is slot 0, the
// Workload's own names), and returns the others, by slot.
func (p *copyPlacer) keep() []Copy {
	current := append([]Copy(nil), p.in.Current...)
	sort.SliceStable(current, func(i, j int) bool { return current[i].Slot < current[j].Slot })
	var left []Copy
	for _, c := range current {
		p.slots[c.Slot] = true
		if p.matches(c.Cluster) && !p.used[c.Cluster] && len(p.placed) < p.want {
			p.used[c.Cluster] = true
			p.placed = append(p.placed, Copy{Slot: c.Slot, Cluster: c.Cluster})
			continue
		}
		left = append(left, c)
	}
	return left
}

// free is the first free matching cluster for the copy of slot (-1: a new copy), one that is
// not lost when there is one; "" when none is free.
func (p *copyPlacer) free(slot int) string {
	var lost string
	for _, c := range p.ranked {
		switch {
		case p.used[c] || p.vacated[c] || p.heldByOther(c, slot):
		case !p.fo.lost(c):
			return c
		case lost == "":
			lost = c
		}
	}
	return lost
}

// move moves each copy not kept whose cluster stopped matching (or is another copy's) to a
// free cluster while copies are missing, and returns the slots of those removed: the surplus
// ones (fewer asked for), and those with no free cluster to go to.
func (p *copyPlacer) move(left []Copy) []int {
	var removed []int
	for _, c := range left {
		if to := p.free(c.Slot); (!p.matches(c.Cluster) || p.used[c.Cluster] || p.vacated[c.Cluster]) && len(p.placed) < p.want && to != "" {
			p.used[to] = true
			p.placed = append(p.placed, Copy{Slot: c.Slot, Cluster: to, From: c.Cluster})
			continue
		}
		removed = append(removed, c.Slot)
	}
	return removed
}

// add places new copies on free clusters, in the lowest free slots, until the copies asked for
// run or no free cluster is left.
func (p *copyPlacer) add() {
	for slot := 0; len(p.placed) < p.want; slot++ {
		if p.slots[slot] {
			continue
		}
		to := p.free(-1)
		if to == "" {
			break
		}
		p.used[to], p.slots[slot] = true, true
		p.placed = append(p.placed, Copy{Slot: slot, Cluster: to})
	}
}

// inOrder is the copies placed in placement order, each with its cluster's labels.
func (p *copyPlacer) inOrder(clusters []Cluster) []Copy {
	labels := map[string]map[string]string{}
	for _, c := range clusters {
		labels[c.Name] = c.Labels
	}
	sort.SliceStable(p.placed, func(i, j int) bool { return p.order[p.placed[i].Cluster] < p.order[p.placed[j].Cluster] })
	for i := range p.placed {
		p.placed[i].Labels = labels[p.placed[i].Cluster]
	}
	return p.placed
}

// explain says for each matching candidate why it runs a copy or not.
func (res *Several) explain(in SeveralInput, used map[string]bool, fo *failover) {
	kept := map[string]bool{}
	for _, c := range in.Current {
		kept[c.Cluster] = true
	}
	for i := range res.Candidates {
		c := &res.Candidates[i]
		if why := fo.whyCopies(c, *res, kept); why != "" {
			c.Chosen, c.Why = used[c.Name], why
			continue
		}
		switch {
		case !c.Matches:
		case used[c.Name] && kept[c.Name]:
			c.Chosen, c.Why = true, "Chosen: a copy of the workload runs there and it still matches."
		case used[c.Name]:
			c.Chosen, c.Why = true, fmt.Sprintf("Chosen: among the first %d matching clusters under %s.", res.Want, res.Policy)
		case len(in.Held[c.Name]) > 0:
			c.Why = "Matches; a copy of the workload still has objects there, being removed."
		default:
			c.Why = fmt.Sprintf("Matches; the workload's %d copies run on other clusters (%s; copies stay where they are while they match).", res.Want, res.Policy)
		}
	}
}

// rank orders the matching clusters by the policy: Ordered by name, Spread by rendezvous
// weight for key, highest first.
func rank(matching []string, policy, key string) []string {
	out := slices.Clone(matching)
	if policy == orchconfig.PlacementOrdered {
		return out
	}
	w := map[string]uint64{}
	for _, n := range out {
		w[n] = weight(n, key)
	}
	sort.SliceStable(out, func(i, j int) bool { return w[out[i]] > w[out[j]] })
	return out
}

// weight is a cluster's rendezvous weight for key: the hash of its name with key (rendezvous
// hashing: each key's rank depends on the candidates only, and a new candidate takes only the
// keys it now wins).
func weight(name, key string) uint64 {
	sum := sha256.Sum256([]byte(name + "\x00" + key))
	return binary.BigEndian.Uint64(sum[:8])
}
