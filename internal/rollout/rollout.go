// Package rollout decides how a change of the Orchestrator Config reaches the fleet: which
// Workloads fall in which wave, which revision each Workload is rendered from while a rollout
// is under way, and whether a wave passed its health gate. It is pure: the rollout controller
// and the orchestrator feed it what they read.
package rollout

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"slices"
	"sort"
	"time"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/selection"
)

// Assign puts the affected Workloads ("namespace/name") in waves of the policy's cumulative
// sizes. The order is the rank of each name's digest: stable, spread over namespaces, and the
// same wherever it is computed (the rollout controller, `scorectl config diff`). A wave that
// would take nobody is left out; the last wave takes everyone left.
func Assign(sizes []string, affected []string) []scorev1b1.RolloutWave {
	ranked := slices.Clone(affected)
	sort.Slice(ranked, func(i, j int) bool { return rank(ranked[i]) < rank(ranked[j]) })
	n := len(ranked)
	var waves []scorev1b1.RolloutWave
	taken := 0
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
		upTo = min(upTo, n)
		if upTo <= taken {
			continue
		}
		waves = append(waves, scorev1b1.RolloutWave{Size: size, Workloads: ranked[taken:upTo]})
		taken = upTo
	}
	return waves
}

func rank(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}

// Affected reports whether the change from one config to another renders a Workload
// differently: another profile or backend is selected, or the same backend with another
// template or values — what its plan is made of.
func Affected(w *scorev1b1.Workload, from, to *selection.Selector, region string) bool {
	a, b := from.Select(selection.Input{Workload: w, Region: region}), to.Select(selection.Input{Workload: w, Region: region})
	return a.OK != b.OK || a.Profile != b.Profile || !reflect.DeepEqual(a.Backend, b.Backend)
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
// or aborted.
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
	// Revision is the one its plan was rendered from ("" without a plan).
	Revision string
	// Settled is true when the runtime has reported on the plan as it is now.
	Settled bool
	// Ready is the Workload's Ready; Since when it last changed.
	Ready bool
	Since time.Time
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
// later). A member not so by the progress deadline, counted from the bake's start, fails.
func Gate(to string, members []Member, bakeStarted *time.Time, now time.Time, policy orchconfig.RolloutPolicy) Verdict {
	bake, deadline := policy.Durations()
	for _, m := range members {
		if m.Revision != to {
			return Verdict{} // the orchestrator renders it; its plan's change brings the rollout back
		}
	}
	v := Verdict{}
	start := now
	if bakeStarted != nil {
		start = *bakeStarted
	} else {
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
		if m.Ready && m.Settled {
			passAt := start.Add(bake)
			if m.Since.After(start) {
				passAt = m.Since.Add(bake)
			}
			if !now.Before(passAt) {
				continue
			}
			pending++
			soonest(passAt.Sub(now))
			continue
		}
		if failAt := start.Add(deadline); !now.Before(failAt) {
			v.Failed = append(v.Failed, m.Key)
			continue
		} else {
			soonest(failAt.Sub(now))
		}
		pending++
	}
	switch {
	case len(v.Failed) > policy.FailureBudget:
		v.Fail = true
	case pending == 0:
		v.Pass = true
	default:
		v.After = next
	}
	return v
}
