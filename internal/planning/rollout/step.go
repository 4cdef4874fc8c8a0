package rollout

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// The reasons of the events a rollout records, one per transition.
const (
	ReasonWavePassed = "WavePassed"
	ReasonCompleted  = "Completed"
	ReasonHalted     = "Halted"
	ReasonRetried    = "Retried"
	ReasonAborted    = "Aborted"
)

// Observed is what one pass of the rollout controller reads: the config, the rollouts, and
// for the latest rollout while it is under way what its step needs (Assigning, Judging).
type Observed struct {
	// Now is when the pass runs.
	Now time.Time
	// Current is the revision the control plane runs; Policy is its rollout policy (nil:
	// none).
	Current string
	Policy  *orchconfig.RolloutPolicy
	// Rollouts counts the rollouts there are (the next one is numbered after them); Last is
	// the latest of them (nil: none yet).
	Rollouts int
	Last     *scorev1b1.ConfigRollout

	// To is the revision Last rolls out (with a policy: the current one's when To has none);
	// read while Last is under way.
	To Revision
	// From and Fleet are what Last's waves are assigned from, read while Assigning(Last);
	// FromMissing says why From is not there (not kept, or not loadable): the change is then
	// applied at once.
	From        Revision
	FromMissing error
	Fleet       Fleet
	// Members are the Workloads of Last's wave under way as the gate reads them, read while
	// Judging(Last).
	Members []Member
}

// Event is one transition of the latest rollout, recorded on it once its status is written.
type Event struct {
	Warning bool
	Reason  string
	Message string
}

// Requeue says when the controller looks again without a change: Now at once (a step that
// must be followed by another), or After a while (a bake or a deadline); zero on a change only.
type Requeue struct {
	Now   bool
	After time.Duration
}

// Decision is what a pass does.
type Decision struct {
	// Status is the latest rollout's status as the pass leaves it: written when it differs
	// from the status read.
	Status scorev1b1.ConfigRolloutStatus
	// Start is a rollout to create, after that write (nil: none): numbered after the others,
	// from the revision the fleet runs to the current one. Its waves are assigned on the next
	// pass, which its creation brings.
	Start *scorev1b1.ConfigRollout
	// Events are the transitions, recorded once the status is written.
	Events []Event
	// Prune is set when no rollout is under way: the kept revisions no one uses may go.
	Prune bool
	// Requeue is when to look again.
	Requeue Requeue
}

// Terminal reports whether a rollout in phase is over: it governs the revisions it names, but
// nothing moves it any more.
func Terminal(phase string) bool {
	return phase == scorev1b1.RolloutCompleted || phase == scorev1b1.RolloutAborted || phase == scorev1b1.RolloutSuperseded
}

// Latest is the rollout the Workloads are rendered under: the last by name (they are numbered
// in order). Nil when there is none: the current revision.
func Latest(rollouts []scorev1b1.ConfigRollout) *scorev1b1.ConfigRollout {
	var latest *scorev1b1.ConfigRollout
	for i := range rollouts {
		if latest == nil || rollouts[i].Name > latest.Name {
			latest = &rollouts[i]
		}
	}
	return latest
}

// Assigning reports whether r is under way with its waves still to assign: Step then reads
// Observed.From and Observed.Fleet.
func Assigning(r *scorev1b1.ConfigRollout) bool {
	return r != nil && r.Status.Phase == "" && r.Spec.From != ""
}

// Judging reports whether r has a wave under way whose gate Step judges: Step then reads
// Observed.Members, the Workloads of r's wave under way.
func Judging(r *scorev1b1.ConfigRollout) bool {
	switch {
	case r == nil || r.Spec.Aborted || r.Spec.Paused:
		return false
	case r.Status.Phase == "" || r.Status.Phase == scorev1b1.RolloutHalted || Terminal(r.Status.Phase):
		return false
	}
	return int(r.Status.Wave) < len(r.Status.Waves)
}

// Reached reports whether the Workload key is in a wave r has reached (under way, passed,
// halted or aborted) while r is not over: its plan then records the revision it is rendered
// from even when its content is the same, since the gate reads it there.
func Reached(r *scorev1b1.ConfigRollout, key string) bool {
	if r == nil || r.Status.Phase == scorev1b1.RolloutCompleted || r.Status.Phase == scorev1b1.RolloutSuperseded {
		return false
	}
	wave := WaveOf(r.Status.Waves, key)
	return wave >= 0 && wave <= int(r.Status.Wave)
}

// Step is one step of the fleet's rollouts, decided from what was read: start a rollout for
// a new revision, assign its waves, follow the platform engineer's instructions (pause,
// resume, retry, abort), judge the wave under way, and halt, advance or complete it.
func Step(o Observed) Decision {
	d := Decision{}
	last := o.Last
	if last != nil {
		d.Status = *last.Status.DeepCopy()
	}
	active := last != nil && !Terminal(last.Status.Phase)
	switch {
	case o.Policy == nil && active:
		d.Status.Phase, d.Status.Message = scorev1b1.RolloutCompleted, "The config no longer has a rollout policy: every Workload is rendered from the current revision."
	case o.Policy == nil:
		d.Prune = true
	case last == nil:
		// The first revision seen: nothing to roll out from.
		d.Start = o.start("", nil)
	case !active && last.Spec.To != o.Current:
		d.Start = o.start(lastGood(last), last.Spec.Pins)
	case active && last.Spec.To != o.Current && (last.Status.Phase == scorev1b1.RolloutHalted || last.Spec.Aborted):
		// A new revision supersedes a halted or aborted rollout; one under way goes on, and
		// the new revision waits for it.
		d.Status.Phase, d.Status.Message = scorev1b1.RolloutSuperseded, "Superseded by revision "+o.Current+"."
		d.Start = o.start(cmp.Or(last.Spec.From, last.Spec.To), last.Spec.Pins)
	case !active:
		d.Prune = true
	case last.Status.Phase == "":
		o.assign(&d)
	default:
		o.advance(&d)
	}
	return d
}

// lastGood is the revision the fleet runs after a rollout that is over: its To, or its From
// when it was aborted or superseded (its Workloads are back on From).
func lastGood(r *scorev1b1.ConfigRollout) string {
	if (r.Status.Phase == scorev1b1.RolloutAborted || r.Status.Phase == scorev1b1.RolloutSuperseded) && r.Spec.From != "" {
		return r.Spec.From
	}
	return r.Spec.To
}

// start is the rollout of the current revision from the revision from, with the pins carried
// over; its name is one a second pass on a stale list cannot create again.
func (o Observed) start(from string, pins map[string]string) *scorev1b1.ConfigRollout {
	return &scorev1b1.ConfigRollout{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("rollout-%04d", o.Rollouts+1)},
		Spec: scorev1b1.ConfigRolloutSpec{From: from, To: o.Current, Pins: pins}}
}

// assign lists the Workloads the change affects in their waves.
func (o Observed) assign(d *Decision) {
	st, now := &d.Status, metav1.NewTime(o.Now)
	switch {
	case o.Last.Spec.From == "":
		st.Phase, st.Message, st.Progress = scorev1b1.RolloutCompleted, "The first revision with a rollout policy: nothing to roll out from.", "-"
		return
	case o.FromMissing != nil:
		// The revision the fleet runs is not kept: the change cannot be staged.
		st.Phase, st.Message, st.Progress = scorev1b1.RolloutCompleted, fmt.Sprintf("Applied at once: %v.", o.FromMissing), "-"
		return
	}
	fleet := o.Fleet
	fleet.Pins = o.Last.Spec.Pins
	affected, waves := Waves(fleet, o.From, o.To)
	st.Affected, st.Waves, st.Wave, st.WaveStarted = int32(affected), waves, 0, &now
	st.Phase, st.Progress = scorev1b1.RolloutProgressing, progress(0, len(waves))
	if len(waves) == 0 {
		st.Phase, st.Message, st.Progress = scorev1b1.RolloutCompleted, "The change renders no Workload differently.", "-"
	}
}

// advance takes a rollout under way one step: the platform engineer's instructions first,
// then the gate of the wave under way.
func (o Observed) advance(d *Decision) {
	r, st, now := o.Last, &d.Status, metav1.NewTime(o.Now)
	switch {
	case r.Spec.Aborted:
		d.event(true, ReasonAborted, "Every Workload of the rollout is rendered from %s again.", r.Spec.From)
		st.Phase, st.Message = scorev1b1.RolloutAborted, "Aborted: every Workload is rendered from the previous revision."
	case r.Status.Phase == scorev1b1.RolloutHalted && r.Spec.Retry > r.Status.Retried:
		d.event(false, ReasonRetried, "Wave %d is tried again.", r.Status.Wave+1)
		st.Phase, st.Retried, st.WaveStarted, st.BakeStarted, st.Message = scorev1b1.RolloutProgressing, r.Spec.Retry, &now, nil, "Retried."
		st.Waves[st.Wave].Failed = nil
		d.Requeue.Now = true
	case r.Status.Phase == scorev1b1.RolloutHalted:
		// A person decides: resume (retry) or abort.
	case r.Spec.Paused:
		// The bake stops: a wave resumed bakes for the whole bake time again.
		st.Phase, st.WaveStarted, st.BakeStarted = scorev1b1.RolloutPaused, nil, nil
		st.Message = fmt.Sprintf("Paused at wave %d; its bake and progress deadline start again on resume.", st.Wave+1)
	case int(r.Status.Wave) >= len(r.Status.Waves):
		st.Phase, st.Message = scorev1b1.RolloutCompleted, "Completed: no wave is left."
	default:
		o.judge(d)
	}
}

// judge applies the gate's verdict on the wave under way, under the policy of the revision
// rolled out (a newer one may be waiting behind it): halted, passed (the last wave completes
// the rollout), or still rendering or baking.
func (o Observed) judge(d *Decision) {
	r, st, now := o.Last, &d.Status, metav1.NewTime(o.Now)
	policy := *o.To.Config.Rollout
	v := Gate(r.Spec.To, o.Members, timeOf(r.Status.WaveStarted), timeOf(r.Status.BakeStarted), o.Now, policy)
	wave, of := int(r.Status.Wave), len(r.Status.Waves)
	switch {
	case v.Fail:
		failed := strings.Join(v.Failed, ", ")
		d.event(true, ReasonHalted, "Wave %d of %d failed its health gate (%s): its Workloads are rendered from the previous revision again.", wave+1, of, failed)
		st.Phase, st.Waves[wave].Failed = scorev1b1.RolloutHalted, v.Failed
		st.Message = fmt.Sprintf("Halted at wave %d: %s not Ready by the progress deadline; pinned back to the previous revision. `scorectl rollout resume` tries the wave again, `abort` pins every Workload back.", wave+1, failed)
	case v.Pass && wave == of-1:
		d.event(false, ReasonCompleted, "All %d waves passed: %d Workloads are rendered from %s.", of, r.Status.Affected, r.Spec.To)
		st.Phase, st.WaveStarted, st.BakeStarted, st.Message = scorev1b1.RolloutCompleted, nil, nil, fmt.Sprintf("Completed: %d Workloads in %d waves.", st.Affected, of)
	case v.Pass:
		d.event(false, ReasonWavePassed, "Wave %d of %d passed; wave %d starts.", wave+1, of, wave+2)
		st.Phase, st.Wave, st.WaveStarted, st.BakeStarted, st.Progress = scorev1b1.RolloutProgressing, int32(wave+1), &now, nil, progress(wave+1, of)
		st.Message = fmt.Sprintf("Wave %d of %d started.", wave+2, of)
		d.Requeue.Now = true
	default:
		// The message names the step, not how many Workloads are through it: a count would be
		// a write for each Workload rendered or Ready.
		bake, _ := policy.Durations()
		st.Phase, st.Message = scorev1b1.RolloutProgressing, fmt.Sprintf("Wave %d of %d: its Workloads are being rendered from the new revision.", wave+1, of)
		if v.Start || st.BakeStarted != nil {
			st.Message = fmt.Sprintf("Wave %d of %d baking: each of its Workloads must be Ready for %s.", wave+1, of, bake)
		}
		if st.WaveStarted == nil {
			st.WaveStarted = &now
		}
		if v.Start {
			st.BakeStarted = &now
		}
		d.Requeue.After = v.After
	}
}

func (d *Decision) event(warning bool, reason, format string, args ...any) {
	d.Events = append(d.Events, Event{Warning: warning, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

func timeOf(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	return &t.Time
}

func progress(wave, of int) string { return fmt.Sprintf("%d/%d", wave+1, of) }
