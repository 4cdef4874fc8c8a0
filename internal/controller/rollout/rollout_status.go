package rollout

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/statuspatch"
	core "github.com/score-orchestrator/score-orchestrator/internal/planning/rollout"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

// writeStatus writes the rollout's status as the pass decided it, through statuspatch: only
// when it changed (an unconditional write would trigger the rollout's own watch and loop), with
// the transitions' events and a halt counted. The events go first: recorded asynchronously, an
// event queued after the write could be lost to a shutdown that follows it, and "one
// WavePassed per wave" is what shows that a restart ran no wave twice and skipped none. The
// write is made at the version read (statuspatch.AtVersionRead): fresh is false when the API
// server has a newer one (the cache was behind) or no longer has the rollout, and the pass
// stops there; the newer copy's event brings the fleet back.
func (r *Reconciler) writeStatus(ctx context.Context, read *scorev1b1.ConfigRollout, status scorev1b1.ConfigRolloutStatus, events []core.Event) (fresh bool, err error) {
	next := read.DeepCopy()
	patch := statuspatch.Begin(next)
	next.Status = status
	if !patch.Changed() {
		return true, nil
	}
	if next.Status.Phase != read.Status.Phase {
		ctrl.LoggerFrom(ctx).Info("Rollout", "rollout", read.Name, "phase", status.Phase, "wave", status.Wave, "message", status.Message)
	}
	for _, e := range events {
		if e.Reason == core.ReasonHalted {
			rolloutHalts.Inc()
		}
		r.event(read, e)
	}
	wrote, err := patch.Finish(ctx, r.Client, &r.written, statuspatch.AtVersionRead())
	if apierrors.IsConflict(err) {
		return false, nil
	}
	return wrote, err
}

func (r *Reconciler) event(on *scorev1b1.ConfigRollout, e core.Event) {
	if r.Recorder == nil {
		return
	}
	typ := corev1.EventTypeNormal
	if e.Warning {
		typ = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(on, nil, typ, e.Reason, "Rollout", "%s", termtext.Escape(e.Message))
}
