// Package rollout decides how a change of the Orchestrator Config reaches the fleet: which
// Workloads fall in which wave, which revision each Workload is rendered from while a rollout
// is under way, and whether a wave passed its health gate. It is pure: the rollout controller
// and the orchestrator feed it what they read.
package rollout

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sort"
	"strings"
	"time"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// Entry is an affected Workload as Assign orders it.
type Entry struct {
	// Key is "namespace/name".
	Key string
	// Order is the rank of its label's value among the policy's orderBy values (0 without
	// an order; the number of values for another value or none).
	Order int
	// Group joins Workloads that share an instance the change provisions differently: they
	// take the same wave ("" alone).
	Group string
}

// Assign puts the affected Workloads in waves of the policy's cumulative sizes. The order is
// each entry's Order, then the rank of its key's digest: stable, spread over namespaces, and
// the same wherever it is computed (the rollout controller, `scorectl config diff`). A group
// moves as one, at the place of its first member, and may make its wave larger than the size
// says. A wave that would take nobody is left out; the last wave takes everyone left.
func Assign(sizes []string, entries []Entry) []scorev1b1.RolloutWave {
	type unit struct {
		order int
		rank  string
		keys  []string
	}
	var units []*unit
	groups := map[string]*unit{}
	for _, e := range entries {
		u := groups[e.Group]
		if u == nil || e.Group == "" {
			u = &unit{order: e.Order, rank: rank(e.Key)}
			units = append(units, u)
			if e.Group != "" {
				groups[e.Group] = u
			}
		}
		u.keys = append(u.keys, e.Key)
		u.order, u.rank = min(u.order, e.Order), min(u.rank, rank(e.Key))
	}
	sort.Slice(units, func(i, j int) bool {
		if units[i].order != units[j].order {
			return units[i].order < units[j].order
		}
		return units[i].rank < units[j].rank
	})
	n := len(entries)
	var waves []scorev1b1.RolloutWave
	taken, next := 0, 0
	for i, size := range sizes {
		count, percent, err := orchconfig.ParseWave(size)
		if err != nil {
			continue // validated with the config
		}
		upTo := count
		if percent > 0 {
			upTo = (n*percent + 99) / 100
		}
		if i == len(sizes)-1 {
			upTo = n
		}
		var wave []string
		for next < len(units) && taken < min(upTo, n) {
			u := units[next]
			slices.SortFunc(u.keys, func(a, b string) int { return strings.Compare(rank(a), rank(b)) })
			wave = append(wave, u.keys...)
			taken += len(u.keys)
			next++
		}
		if len(wave) > 0 {
			waves = append(waves, scorev1b1.RolloutWave{Size: size, Workloads: wave})
		}
	}
	return waves
}

func rank(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}

// WaveOf returns the index of the wave that takes key, or -1.
func WaveOf(waves []scorev1b1.RolloutWave, key string) int {
	for i, w := range waves {
		if slices.Contains(w.Workloads, key) {
			return i
		}
	}
	return -1
}

// Choose is the revision a Workload (key, its plan rendered from current, "" without a plan)
// is rendered from under the rollout r (nil: none; the caller renders from the latest
// revision). A pin wins. Reached waves render To, later ones From. A halted rollout pins the halted wave
// back to From (the waves that passed before it keep To); an aborted one pins every Workload.
// A Workload in no wave — the change does not affect it, or it was created since the rollout
// began — keeps the revision it has, and a new one gets To, or From when the rollout is halted
// or aborted. Before the rollout's waves are assigned every Workload gets From.
func Choose(r *scorev1b1.ConfigRollout, key, current string) string {
	if r == nil {
		return ""
	}
	if pinned, ok := r.Spec.Pins[key]; ok {
		return pinned
	}
	from, to := r.Spec.From, r.Spec.To
	if from == "" {
		from = to
	}
	stopped := r.Status.Phase == scorev1b1.RolloutHalted || r.Status.Phase == scorev1b1.RolloutAborted || r.Spec.Aborted
	wave := WaveOf(r.Status.Waves, key)
	switch {
	case r.Status.Phase == scorev1b1.RolloutCompleted:
		return to
	case r.Status.Phase == "":
		// Created, its waves not assigned yet: nobody is reached. (A plan whose content an
		// earlier revision did not change still names that one: it says nothing here.)
		return from
	case wave < 0 && (current == from || current == to):
		return current
	case wave < 0 && stopped:
		return from
	case wave < 0:
		return to
	case r.Spec.Aborted || r.Status.Phase == scorev1b1.RolloutAborted:
		return from
	case r.Status.Phase == scorev1b1.RolloutHalted:
		if wave < int(r.Status.Wave) {
			return to
		}
		return from
	case wave <= int(r.Status.Wave):
		return to
	}
	return from
}

// Member is what the gate reads of one Workload of a wave.
type Member struct {
	Key string
	// Revision is the one its plans were rendered from ("" without a plan, or while its
	// copies' plans name different ones).
	Revision string
	// Settled is true when the runtime has reported on every plan as it is now.
	Settled bool
	// Ready is the Workload's Ready, not degraded, with every plan's objects healthy (and the
	// policy's gate expression, when it has one, holds); Since when Ready or a plan's health
	// last changed.
	Ready bool
	Since time.Time
	// Bake and Deadline are its bake time and progress deadline (zero: the policy's).
	Bake, Deadline time.Duration
}

// Verdict is the gate's judgement of a wave.
type Verdict struct {
	// Pass: every member has been Ready through the bake time.
	Pass bool
	// Failed are the members past the progress deadline and not Ready; the wave fails when
	// they are more than the failure budget.
	Failed []string
	Fail   bool
	// Start is set when the bake starts now: every member is rendered from To.
	Start bool
	// After is when to look again (0: only on a change).
	After time.Duration
}

// Gate judges a wave: its members must be rendered from to, then each must be Ready, settled
// and Ready for the bake time since the bake started (or since it last became Ready, if
// later). A member not so by the progress deadline, counted from the wave's start (nil: it
// starts now), fails — one never rendered from to included (its dependency fails, its
// template does not render); the bake waits for the members that have not failed.
func Gate(to string, members []Member, waveStarted, bakeStarted *time.Time, now time.Time, policy orchconfig.RolloutPolicy) Verdict {
	wave := now
	if waveStarted != nil {
		wave = *waveStarted
	}
	bake, deadline := policy.Durations()
	timing := func(m Member) (time.Duration, time.Duration) { return max(bake, m.Bake), max(deadline, m.Deadline) }
	healthy := func(m Member) bool { return m.Revision == to && m.Ready && m.Settled }
	v := Verdict{}
	rendered := true
	for _, m := range members {
		if _, deadline := timing(m); !healthy(m) && !now.Before(wave.Add(deadline)) {
			v.Failed = append(v.Failed, m.Key)
			continue
		}
		rendered = rendered && m.Revision == to
	}
	if len(v.Failed) > policy.FailureBudget {
		v.Fail = true
		return v
	}
	start := now
	switch {
	case rendered && bakeStarted != nil:
		start = *bakeStarted
	case rendered:
		v.Start = true
	}
	pending := 0
	next := time.Duration(0)
	soonest := func(d time.Duration) {
		if d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	for _, m := range members {
		bake, deadline := timing(m)
		switch {
		case slices.Contains(v.Failed, m.Key):
			continue // within the budget
		case healthy(m) && !rendered:
			pending++ // the bake waits for the rest of the wave, whose deadlines wake it
		case healthy(m):
			passAt := start.Add(bake)
			if m.Since.After(start) {
				passAt = m.Since.Add(bake)
			}
			if now.Before(passAt) {
				pending++
				soonest(passAt.Sub(now))
			}
		default:
			pending++
			soonest(wave.Add(deadline).Sub(now))
		}
	}
	if pending == 0 {
		v.Pass = true
	} else {
		v.After = next
	}
	return v
}
