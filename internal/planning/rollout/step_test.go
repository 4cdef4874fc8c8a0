package rollout

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

const (
	revA = "sha256:a"
	revB = "sha256:b"
	revC = "sha256:c"
)

var stepT0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// rolloutOf is a rollout from → to with options.
func rolloutOf(name, from, to string, opts ...func(*scorev1b1.ConfigRollout)) *scorev1b1.ConfigRollout {
	r := &scorev1b1.ConfigRollout{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: scorev1b1.ConfigRolloutSpec{From: from, To: to}}
	for _, o := range opts {
		o(r)
	}
	return r
}

func inPhase(phase string) func(*scorev1b1.ConfigRollout) {
	return func(r *scorev1b1.ConfigRollout) { r.Status.Phase = phase }
}

// atWave puts the rollout at wave (of three, one Workload each: a/one, a/two, a/three),
// started at started and baking since bake (nil: not baking).
func atWave(wave int32, started time.Time, bake *time.Time) func(*scorev1b1.ConfigRollout) {
	return func(r *scorev1b1.ConfigRollout) {
		r.Status.Wave, r.Status.Affected, r.Status.Progress = wave, 3, fmt.Sprintf("%d/3", wave+1)
		r.Status.Waves = []scorev1b1.RolloutWave{{Size: "1", Workloads: []string{"a/one"}}, {Size: "50%", Workloads: []string{"a/two"}}, {Size: "100%", Workloads: []string{"a/three"}}}
		r.Status.WaveStarted = &metav1.Time{Time: started}
		if bake != nil {
			r.Status.BakeStarted = &metav1.Time{Time: *bake}
		}
	}
}

func withSpec(change func(*scorev1b1.ConfigRolloutSpec)) func(*scorev1b1.ConfigRollout) {
	return func(r *scorev1b1.ConfigRollout) { change(&r.Spec) }
}

func failedIn(wave int, keys ...string) func(*scorev1b1.ConfigRollout) {
	return func(r *scorev1b1.ConfigRollout) { r.Status.Waves[wave].Failed = keys }
}

func member(key, revision string, ready bool, since time.Time) Member {
	return Member{Key: key, Revision: revision, Settled: true, Ready: ready, Since: since}
}

func TestStep(t *testing.T) {
	policy := &orchconfig.RolloutPolicy{Waves: []string{"1", "50%", "100%"}, RolloutTiming: orchconfig.RolloutTiming{BakeTime: "30s", ProgressDeadline: "2m"}}
	to := fleetConfig(t, func(c *orchconfig.Config) { c.Rollout = policy })
	at := func(d time.Duration) time.Time { return stepT0.Add(d) }
	bakeAt := at(10 * time.Second)
	// observed is a pass at now with the config at current under policy, and the rollouts.
	observed := func(now time.Time, current string, policy *orchconfig.RolloutPolicy, rollouts ...*scorev1b1.ConfigRollout) Observed {
		o := Observed{Now: now, Current: current, Policy: policy, Rollouts: len(rollouts), To: to}
		if len(rollouts) > 0 {
			o.Last = rollouts[len(rollouts)-1]
		}
		return o
	}
	withMembers := func(o Observed, members ...Member) Observed { o.Members = members; return o }

	for _, tc := range []struct {
		name string
		in   Observed
		// want changes a copy of the latest rollout's status as read into the status wanted.
		want      func(*scorev1b1.ConfigRolloutStatus)
		start     *scorev1b1.ConfigRolloutSpec
		startName string
		events    []string // reasons
		prune     bool
		requeue   Requeue
	}{
		{name: "no policy, no rollout: prune", in: observed(stepT0, revA, nil), prune: true},
		{name: "start: the first revision with a policy", in: observed(stepT0, revA, policy),
			start: &scorev1b1.ConfigRolloutSpec{To: revA}, startName: "rollout-0001"},
		{name: "first revision: nothing to roll out from", in: observed(stepT0, revA, policy, rolloutOf("rollout-0001", "", revA)),
			want: func(st *scorev1b1.ConfigRolloutStatus) {
				st.Phase, st.Progress, st.Message = scorev1b1.RolloutCompleted, "-", "The first revision with a rollout policy: nothing to roll out from."
			}},
		{name: "start: a new revision after a completed rollout, from its To, pins carried over",
			in: observed(stepT0, revB, policy, rolloutOf("rollout-0001", "", revA, inPhase(scorev1b1.RolloutCompleted), withSpec(func(s *scorev1b1.ConfigRolloutSpec) {
				s.Pins = map[string]string{"a/one": revA}
			}))),
			start: &scorev1b1.ConfigRolloutSpec{From: revA, To: revB, Pins: map[string]string{"a/one": revA}}, startName: "rollout-0002"},
		{name: "start: a new revision after an aborted rollout, from its From",
			in:    observed(stepT0, revC, policy, rolloutOf("rollout-0001", "", revA, inPhase(scorev1b1.RolloutCompleted)), rolloutOf("rollout-0002", revA, revB, inPhase(scorev1b1.RolloutAborted))),
			start: &scorev1b1.ConfigRolloutSpec{From: revA, To: revC}, startName: "rollout-0003"},
		{name: "nothing new after a completed rollout: prune", in: observed(stepT0, revB, policy, rolloutOf("rollout-0002", revA, revB, inPhase(scorev1b1.RolloutCompleted))), prune: true},
		{name: "initialize: the affected Workloads in their waves", in: func() Observed {
			o := observed(stepT0, revB, policy, rolloutOf("rollout-0002", revA, revB))
			o.From = fleetConfig(t, func(c *orchconfig.Config) { c.Rollout = policy; c.Provisioners[0].State = "v: 0" })
			o.Fleet = Fleet{Workloads: []*scorev1b1.Workload{fleetWorkload("a", "db", nil, "db:postgres"), fleetWorkload("a", "web", nil)}}
			return o
		}(), want: func(st *scorev1b1.ConfigRolloutStatus) {
			st.Phase, st.Progress, st.Affected, st.Wave, st.WaveStarted = scorev1b1.RolloutProgressing, "1/1", 1, 0, &metav1.Time{Time: stepT0}
			st.Waves = []scorev1b1.RolloutWave{{Size: "1", Workloads: []string{"a/db"}}}
		}},
		{name: "initialize: a change that renders no Workload differently completes", in: func() Observed {
			o := observed(stepT0, revB, policy, rolloutOf("rollout-0002", revA, revB))
			o.From = to
			o.Fleet = Fleet{Workloads: []*scorev1b1.Workload{fleetWorkload("a", "web", nil)}}
			return o
		}(), want: func(st *scorev1b1.ConfigRolloutStatus) {
			st.Phase, st.Progress, st.Message, st.WaveStarted = scorev1b1.RolloutCompleted, "-", "The change renders no Workload differently.", &metav1.Time{Time: stepT0}
		}},
		{name: "initialize: the revision the fleet runs is not kept: applied at once", in: func() Observed {
			o := observed(stepT0, revB, policy, rolloutOf("rollout-0002", revA, revB))
			o.FromMissing = errors.New("revision sha256:a is not kept")
			return o
		}(), want: func(st *scorev1b1.ConfigRolloutStatus) {
			st.Phase, st.Progress, st.Message = scorev1b1.RolloutCompleted, "-", "Applied at once: revision sha256:a is not kept."
		}},
		{name: "policy removed: completed at once", in: observed(stepT0, revB, nil, rolloutOf("rollout-0002", revA, revB, atWave(1, stepT0, nil), inPhase(scorev1b1.RolloutProgressing))),
			want: func(st *scorev1b1.ConfigRolloutStatus) {
				st.Phase, st.Message = scorev1b1.RolloutCompleted, "The config no longer has a rollout policy: every Workload is rendered from the current revision."
			}},
		{name: "a newer revision waits for a rollout under way",
			in:      withMembers(observed(at(time.Minute), revC, policy, rolloutOf("rollout-0002", revA, revB, atWave(0, stepT0, nil), inPhase(scorev1b1.RolloutProgressing))), member("a/one", revA, true, stepT0)),
			requeue: Requeue{After: time.Minute}, want: func(st *scorev1b1.ConfigRolloutStatus) {
				st.Message = "Wave 1 of 3: its Workloads are being rendered from the new revision."
			}},
		{name: "superseded: a halted rollout, by a newer revision, from its From",
			in: observed(stepT0, revC, policy, rolloutOf("rollout-0002", revA, revB, atWave(0, stepT0, nil), inPhase(scorev1b1.RolloutHalted), failedIn(0, "a/one"), withSpec(func(s *scorev1b1.ConfigRolloutSpec) {
				s.Pins = map[string]string{"a/two": revA}
			}))),
			want: func(st *scorev1b1.ConfigRolloutStatus) {
				st.Phase, st.Message = scorev1b1.RolloutSuperseded, "Superseded by revision sha256:c."
			},
			start: &scorev1b1.ConfigRolloutSpec{From: revA, To: revC, Pins: map[string]string{"a/two": revA}}, startName: "rollout-0002"},
		{name: "start: after a superseded rollout left last, from its From",
			in:    observed(stepT0, revC, policy, rolloutOf("rollout-0002", revA, revB, inPhase(scorev1b1.RolloutSuperseded))),
			start: &scorev1b1.ConfigRolloutSpec{From: revA, To: revC}, startName: "rollout-0002"},
		{name: "aborted", in: observed(stepT0, revB, policy, rolloutOf("rollout-0002", revA, revB, atWave(1, stepT0, nil), inPhase(scorev1b1.RolloutProgressing), withSpec(func(s *scorev1b1.ConfigRolloutSpec) { s.Aborted = true }))),
			events: []string{ReasonAborted}, want: func(st *scorev1b1.ConfigRolloutStatus) {
				st.Phase, st.Message = scorev1b1.RolloutAborted, "Aborted: every Workload is rendered from the previous revision."
			}},
		{name: "halted stays halted", in: observed(at(time.Hour), revB, policy, rolloutOf("rollout-0002", revA, revB, atWave(0, stepT0, nil), inPhase(scorev1b1.RolloutHalted), failedIn(0, "a/one")))},
		{name: "retried: the halted wave again, from now",
			in:     observed(at(time.Hour), revB, policy, rolloutOf("rollout-0002", revA, revB, atWave(0, stepT0, &bakeAt), inPhase(scorev1b1.RolloutHalted), failedIn(0, "a/one"), withSpec(func(s *scorev1b1.ConfigRolloutSpec) { s.Retry = 1 }))),
			events: []string{ReasonRetried}, requeue: Requeue{Now: true}, want: func(st *scorev1b1.ConfigRolloutStatus) {
				st.Phase, st.Retried, st.WaveStarted, st.BakeStarted, st.Message = scorev1b1.RolloutProgressing, 1, &metav1.Time{Time: at(time.Hour)}, nil, "Retried."
				st.Waves[0].Failed = nil
			}},
		{name: "paused: the bake and the deadline stop",
			in: observed(at(20*time.Second), revB, policy, rolloutOf("rollout-0002", revA, revB, atWave(1, stepT0, &bakeAt), inPhase(scorev1b1.RolloutProgressing), withSpec(func(s *scorev1b1.ConfigRolloutSpec) { s.Paused = true }))),
			want: func(st *scorev1b1.ConfigRolloutStatus) {
				st.Phase, st.WaveStarted, st.BakeStarted, st.Message = scorev1b1.RolloutPaused, nil, nil, "Paused at wave 2; its bake and progress deadline start again on resume."
			}},
		{name: "resumed: the wave starts again now, its Workloads rendered: the bake starts",
			in:      withMembers(observed(at(time.Hour), revB, policy, rolloutOf("rollout-0002", revA, revB, atWave(1, stepT0, nil), inPhase(scorev1b1.RolloutPaused), func(r *scorev1b1.ConfigRollout) { r.Status.WaveStarted = nil })), member("a/two", revB, true, stepT0)),
			requeue: Requeue{After: 30 * time.Second}, want: func(st *scorev1b1.ConfigRolloutStatus) {
				st.Phase, st.WaveStarted, st.BakeStarted = scorev1b1.RolloutProgressing, &metav1.Time{Time: at(time.Hour)}, &metav1.Time{Time: at(time.Hour)}
				st.Message = "Wave 2 of 3 baking: each of its Workloads must be Ready for 30s."
			}},
		{name: "rendering: waits for the deadline",
			in:      withMembers(observed(at(30*time.Second), revB, policy, rolloutOf("rollout-0002", revA, revB, atWave(0, stepT0, nil), inPhase(scorev1b1.RolloutProgressing))), member("a/one", revA, true, stepT0)),
			requeue: Requeue{After: 90 * time.Second}, want: func(st *scorev1b1.ConfigRolloutStatus) {
				st.Message = "Wave 1 of 3: its Workloads are being rendered from the new revision."
			}},
		{name: "baking: starts when every Workload of the wave is rendered",
			in:      withMembers(observed(at(10*time.Second), revB, policy, rolloutOf("rollout-0002", revA, revB, atWave(0, stepT0, nil), inPhase(scorev1b1.RolloutProgressing))), member("a/one", revB, true, stepT0)),
			requeue: Requeue{After: 30 * time.Second}, want: func(st *scorev1b1.ConfigRolloutStatus) {
				st.BakeStarted = &metav1.Time{Time: bakeAt}
				st.Message = "Wave 1 of 3 baking: each of its Workloads must be Ready for 30s."
			}},
		{name: "baking: still baking writes nothing new",
			in: withMembers(observed(at(20*time.Second), revB, policy, rolloutOf("rollout-0002", revA, revB, atWave(0, stepT0, &bakeAt), inPhase(scorev1b1.RolloutProgressing), func(r *scorev1b1.ConfigRollout) {
				r.Status.Message = "Wave 1 of 3 baking: each of its Workloads must be Ready for 30s."
			})), member("a/one", revB, true, stepT0)),
			requeue: Requeue{After: 20 * time.Second}},
		{name: "wave passed: the next starts",
			in:     withMembers(observed(at(40*time.Second), revB, policy, rolloutOf("rollout-0002", revA, revB, atWave(0, stepT0, &bakeAt), inPhase(scorev1b1.RolloutProgressing))), member("a/one", revB, true, stepT0)),
			events: []string{ReasonWavePassed}, requeue: Requeue{Now: true}, want: func(st *scorev1b1.ConfigRolloutStatus) {
				st.Wave, st.WaveStarted, st.BakeStarted, st.Progress, st.Message = 1, &metav1.Time{Time: at(40 * time.Second)}, nil, "2/3", "Wave 2 of 3 started."
			}},
		{name: "completed: the last wave passed",
			in:     withMembers(observed(at(40*time.Second), revB, policy, rolloutOf("rollout-0002", revA, revB, atWave(2, stepT0, &bakeAt), inPhase(scorev1b1.RolloutProgressing))), member("a/three", revB, true, stepT0)),
			events: []string{ReasonCompleted}, want: func(st *scorev1b1.ConfigRolloutStatus) {
				st.Phase, st.WaveStarted, st.BakeStarted, st.Message = scorev1b1.RolloutCompleted, nil, nil, "Completed: 3 Workloads in 3 waves."
			}},
		{name: "completed: no wave is left", in: observed(stepT0, revB, policy, rolloutOf("rollout-0002", revA, revB, atWave(0, stepT0, nil), inPhase(scorev1b1.RolloutProgressing), func(r *scorev1b1.ConfigRollout) { r.Status.Wave = 3 })),
			want: func(st *scorev1b1.ConfigRolloutStatus) {
				st.Phase, st.Message = scorev1b1.RolloutCompleted, "Completed: no wave is left."
			}},
		{name: "deadline: not Ready by it halts and pins back",
			in:     withMembers(observed(at(2*time.Minute), revB, policy, rolloutOf("rollout-0002", revA, revB, atWave(0, stepT0, &bakeAt), inPhase(scorev1b1.RolloutProgressing))), member("a/one", revB, false, at(time.Minute))),
			events: []string{ReasonHalted}, want: func(st *scorev1b1.ConfigRolloutStatus) {
				st.Phase, st.Waves[0].Failed = scorev1b1.RolloutHalted, []string{"a/one"}
				st.Message = "Halted at wave 1: a/one not Ready by the progress deadline; pinned back to the previous revision. `scorectl rollout resume` tries the wave again, `abort` pins every Workload back."
			}},
		{name: "deadline: never rendered from the new revision halts too",
			in:     withMembers(observed(at(2*time.Minute), revB, policy, rolloutOf("rollout-0002", revA, revB, atWave(1, stepT0, nil), inPhase(scorev1b1.RolloutProgressing))), member("a/two", revA, true, stepT0)),
			events: []string{ReasonHalted}, want: func(st *scorev1b1.ConfigRolloutStatus) {
				st.Phase, st.Waves[1].Failed = scorev1b1.RolloutHalted, []string{"a/two"}
				st.Message = "Halted at wave 2: a/two not Ready by the progress deadline; pinned back to the previous revision. `scorectl rollout resume` tries the wave again, `abort` pins every Workload back."
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.in.Last.DeepCopy()
			got := Step(tc.in)
			want := scorev1b1.ConfigRolloutStatus{}
			if tc.in.Last != nil {
				want = *tc.in.Last.Status.DeepCopy()
			}
			if tc.want != nil {
				tc.want(&want)
			}
			if !reflect.DeepEqual(got.Status, want) {
				t.Errorf("status\n got %+v\nwant %+v", got.Status, want)
			}
			if !reflect.DeepEqual(tc.in.Last, before) {
				t.Errorf("Step changed the rollout it read")
			}
			switch {
			case tc.start == nil && got.Start != nil:
				t.Errorf("started %s %+v", got.Start.Name, got.Start.Spec)
			case tc.start != nil && (got.Start == nil || got.Start.Name != tc.startName || !reflect.DeepEqual(got.Start.Spec, *tc.start)):
				t.Errorf("start %+v, want %s %+v", got.Start, tc.startName, *tc.start)
			}
			var reasons []string
			for _, e := range got.Events {
				reasons = append(reasons, e.Reason)
				if e.Warning != (e.Reason == ReasonHalted || e.Reason == ReasonAborted) {
					t.Errorf("event %s: warning %v", e.Reason, e.Warning)
				}
			}
			if strings.Join(reasons, ",") != strings.Join(tc.events, ",") {
				t.Errorf("events %v, want %v", reasons, tc.events)
			}
			if got.Prune != tc.prune || got.Requeue != tc.requeue {
				t.Errorf("prune %v, requeue %+v; want %v, %+v", got.Prune, got.Requeue, tc.prune, tc.requeue)
			}
		})
	}
}

// A rollout is judged when, and only when, its wave under way is: what the controller reads
// its members for.
func TestJudging(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *scorev1b1.ConfigRollout
		want bool
	}{
		{"none", nil, false},
		{"waves not assigned", rolloutOf("r", revA, revB), false},
		{"progressing", rolloutOf("r", revA, revB, atWave(1, stepT0, nil), inPhase(scorev1b1.RolloutProgressing)), true},
		{"resumed", rolloutOf("r", revA, revB, atWave(1, stepT0, nil), inPhase(scorev1b1.RolloutPaused)), true},
		{"pausing", rolloutOf("r", revA, revB, atWave(1, stepT0, nil), inPhase(scorev1b1.RolloutProgressing), withSpec(func(s *scorev1b1.ConfigRolloutSpec) { s.Paused = true })), false},
		{"aborting", rolloutOf("r", revA, revB, atWave(1, stepT0, nil), inPhase(scorev1b1.RolloutProgressing), withSpec(func(s *scorev1b1.ConfigRolloutSpec) { s.Aborted = true })), false},
		{"halted", rolloutOf("r", revA, revB, atWave(1, stepT0, nil), inPhase(scorev1b1.RolloutHalted)), false},
		{"no wave left", rolloutOf("r", revA, revB, atWave(1, stepT0, nil), inPhase(scorev1b1.RolloutProgressing), func(r *scorev1b1.ConfigRollout) { r.Status.Wave = 3 }), false},
		{"completed", rolloutOf("r", revA, revB, atWave(2, stepT0, nil), inPhase(scorev1b1.RolloutCompleted)), false},
	} {
		if got := Judging(tc.r); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestLatestAndReached(t *testing.T) {
	list := []scorev1b1.ConfigRollout{*rolloutOf("rollout-0002", revA, revB), *rolloutOf("rollout-0010", revB, revC), *rolloutOf("rollout-0009", revA, revB)}
	if got := Latest(list); got == nil || got.Name != "rollout-0010" {
		t.Fatalf("latest %v", got)
	}
	if Latest(nil) != nil {
		t.Fatal("a latest rollout of none")
	}
	r := rolloutOf("r", revA, revB, atWave(1, stepT0, nil), inPhase(scorev1b1.RolloutHalted))
	for key, want := range map[string]bool{"a/one": true, "a/two": true, "a/three": false, "b/other": false} {
		if got := Reached(r, key); got != want {
			t.Errorf("%s reached: %v, want %v", key, got, want)
		}
	}
	r.Status.Phase = scorev1b1.RolloutCompleted
	if Reached(r, "a/one") {
		t.Error("a completed rollout reaches no one: its plans record the revision only when their content changes")
	}
}
