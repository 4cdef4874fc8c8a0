package rollout

import (
	"fmt"
	"slices"
	"testing"
	"time"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

func keys(n int) []Entry {
	out := make([]Entry, n)
	for i := range out {
		out[i] = Entry{Key: fmt.Sprintf("team-%d/web-%d", i%3, i)}
	}
	return out
}

func TestAssign(t *testing.T) {
	for _, tc := range []struct {
		sizes []string
		n     int
		want  []int
	}{
		{orchconfig.DefaultWaves, 200, []int{1, 19, 80, 100}},
		{orchconfig.DefaultWaves, 6, []int{1, 2, 3}}, // 10% of 6 is one, taken by the first wave
		{orchconfig.DefaultWaves, 1, []int{1}},       // one Workload: one wave
		{orchconfig.DefaultWaves, 0, nil},            // nothing affected: no wave
		{[]string{"1", "2"}, 10, []int{1, 9}},        // the last wave takes the rest, whatever its size
		{[]string{"50%", "100%"}, 3, []int{2, 1}},    // shares round up
		{[]string{"100%"}, 5, []int{5}},
	} {
		waves := Assign(tc.sizes, keys(tc.n))
		var got []int
		seen := map[string]bool{}
		for _, w := range waves {
			got = append(got, len(w.Workloads))
			for _, k := range w.Workloads {
				if seen[k] {
					t.Fatalf("%v of %d: %s in two waves", tc.sizes, tc.n, k)
				}
				seen[k] = true
			}
		}
		if !slices.Equal(got, tc.want) || len(seen) != tc.n {
			t.Errorf("%v of %d: waves %v (%d Workloads), want %v", tc.sizes, tc.n, got, len(seen), tc.want)
		}
	}
	// The order does not depend on how the Workloads were listed.
	a, b := keys(50), keys(50)
	slices.Reverse(b)
	if wa, wb := Assign(orchconfig.DefaultWaves, a), Assign(orchconfig.DefaultWaves, b); !slices.Equal(wa[0].Workloads, wb[0].Workloads) || !slices.Equal(wa[2].Workloads, wb[2].Workloads) {
		t.Fatalf("the waves depend on the listing order: %v / %v", wa[0].Workloads, wb[0].Workloads)
	}
}

func TestChoose(t *testing.T) {
	const from, to = "sha256:from", "sha256:to"
	r := func(phase string, wave int32, aborted bool) *scorev1b1.ConfigRollout {
		return &scorev1b1.ConfigRollout{Spec: scorev1b1.ConfigRolloutSpec{From: from, To: to, Aborted: aborted},
			Status: scorev1b1.ConfigRolloutStatus{Phase: phase, Wave: wave, Waves: []scorev1b1.RolloutWave{{Workloads: []string{"a/one"}}, {Workloads: []string{"a/two"}}, {Workloads: []string{"a/three"}}}}}
	}
	for _, tc := range []struct {
		name         string
		r            *scorev1b1.ConfigRollout
		key, current string
		want         string
	}{
		{"no rollout", nil, "a/one", from, ""},
		{"waves not assigned yet: nobody is reached", r("", 0, false), "a/one", "sha256:older", from},
		{"a reached wave", r(scorev1b1.RolloutProgressing, 1, false), "a/two", from, to},
		{"an earlier wave", r(scorev1b1.RolloutProgressing, 1, false), "a/one", to, to},
		{"a later wave waits", r(scorev1b1.RolloutProgressing, 1, false), "a/three", from, from},
		{"paused like progressing", r(scorev1b1.RolloutPaused, 0, false), "a/two", from, from},
		{"not affected keeps its revision", r(scorev1b1.RolloutProgressing, 0, false), "b/other", from, from},
		{"created during the rollout", r(scorev1b1.RolloutProgressing, 0, false), "b/new", "", to},
		{"halted: the halted wave pinned back", r(scorev1b1.RolloutHalted, 1, false), "a/two", to, from},
		{"halted: a passed wave keeps to", r(scorev1b1.RolloutHalted, 1, false), "a/one", to, to},
		{"halted: a new Workload gets from", r(scorev1b1.RolloutHalted, 1, false), "b/new", "", from},
		{"aborted: everyone back", r(scorev1b1.RolloutProgressing, 2, true), "a/one", to, from},
		{"completed", r(scorev1b1.RolloutCompleted, 2, false), "a/three", from, to},
		{"pinned", func() *scorev1b1.ConfigRollout {
			p := r(scorev1b1.RolloutProgressing, 2, false)
			p.Spec.Pins = map[string]string{"a/one": "sha256:older"}
			return p
		}(), "a/one", to, "sha256:older"},
	} {
		if got := Choose(tc.r, tc.key, tc.current); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestGate(t *testing.T) {
	const to = "sha256:to"
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	policy := orchconfig.RolloutPolicy{RolloutTiming: orchconfig.RolloutTiming{BakeTime: "30s", ProgressDeadline: "2m"}}
	ready := func(key string, since time.Time) Member {
		return Member{Key: key, Revision: to, Settled: true, Ready: true, Since: since}
	}
	notReady := Member{Key: "a/bad", Revision: to, Settled: true, Since: t0}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	start := t0
	for _, tc := range []struct {
		name    string
		members []Member
		started *time.Time
		now     time.Time
		budget  int
		check   func(Verdict) bool
	}{
		{"not rendered yet", []Member{{Key: "a/one", Revision: "sha256:from"}}, nil, t0, 0, func(v Verdict) bool { return !v.Start && !v.Pass && !v.Fail && v.After == 2*time.Minute }},
		{"not rendered by the deadline fails; a healthy one does not", []Member{{Key: "a/one", Revision: "sha256:from"}, ready("a/two", at(-time.Hour))}, nil, at(2 * time.Minute), 0, func(v Verdict) bool {
			return !v.Start && v.Fail && slices.Equal(v.Failed, []string{"a/one"})
		}},
		{"rendered: the bake starts", []Member{ready("a/one", at(-time.Hour))}, nil, t0, 0, func(v Verdict) bool { return v.Start && !v.Pass && v.After == 30*time.Second }},
		{"Ready through the bake", []Member{ready("a/one", at(-time.Hour))}, &start, at(30 * time.Second), 0, func(v Verdict) bool { return v.Pass }},
		{"Ready again during the bake: counts from then", []Member{ready("a/one", at(20*time.Second))}, &start, at(40 * time.Second), 0, func(v Verdict) bool { return !v.Pass && v.After == 10*time.Second }},
		{"not settled is not Ready", []Member{{Key: "a/one", Revision: to, Ready: true, Since: at(-time.Hour)}}, &start, at(time.Minute), 0, func(v Verdict) bool { return !v.Pass && !v.Fail }},
		{"not Ready before the deadline waits", []Member{notReady}, &start, at(time.Minute), 0, func(v Verdict) bool { return !v.Fail && v.After == time.Minute }},
		{"not Ready at the deadline fails", []Member{ready("a/one", at(-time.Hour)), notReady}, &start, at(2 * time.Minute), 0, func(v Verdict) bool {
			return v.Fail && slices.Equal(v.Failed, []string{"a/bad"})
		}},
		{"within the failure budget", []Member{ready("a/one", at(-time.Hour)), notReady}, &start, at(2 * time.Minute), 1, func(v Verdict) bool { return !v.Fail && v.Pass }},
		{"one never rendered, within the budget: the bake starts for the rest", []Member{{Key: "a/one", Revision: "sha256:from"}, ready("a/two", at(-time.Hour))}, nil, at(2 * time.Minute), 1, func(v Verdict) bool {
			return v.Start && !v.Fail && slices.Equal(v.Failed, []string{"a/one"}) && v.After == 30*time.Second
		}},
		{"a member's longer bake", []Member{ready("a/one", at(-time.Hour)), {Key: "a/db", Revision: to, Settled: true, Ready: true, Since: at(-time.Hour), Bake: 5 * time.Minute}}, &start, at(time.Minute), 0, func(v Verdict) bool {
			return !v.Pass && v.After == 4*time.Minute
		}},
		{"a member's longer deadline", []Member{{Key: "a/db", Revision: to, Settled: true, Since: t0, Deadline: 10 * time.Minute}}, &start, at(3 * time.Minute), 0, func(v Verdict) bool {
			return !v.Fail && v.After == 7*time.Minute
		}},
	} {
		p := policy
		p.FailureBudget = tc.budget
		if v := Gate(to, tc.members, &start, tc.started, tc.now, p); !tc.check(v) {
			t.Errorf("%s: %+v", tc.name, v)
		}
	}
	// The deadline counts from the wave's start, not the bake's.
	waveAt, bakeAt := t0, at(time.Minute)
	if v := Gate(to, []Member{ready("a/one", at(-time.Hour)), {Key: "a/late", Revision: to, Settled: true}}, &waveAt, &bakeAt, at(2*time.Minute), policy); !v.Fail {
		t.Errorf("not Ready two minutes after its wave started, one after its bake: %+v", v)
	}
	// Without a wave start (after a pause), it starts now.
	if v := Gate(to, []Member{{Key: "a/one", Revision: "sha256:from"}}, nil, nil, at(time.Hour), policy); v.Fail || v.After != 2*time.Minute {
		t.Errorf("no wave start: %+v", v)
	}
}
