package provisioner

import (
	"context"
	"fmt"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/config/runnable"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/apply"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/prepare"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
)

// judgeRun finishes the runnable:// strategy once its run is applied (the run is named after
// its content, so it is created once and never changed: an input change stamps a new run, an
// unchanged input never runs again). The run's health in the inventory becomes its outcome
// by the definition's success condition; the earlier runs are kept up to the history limit
// (older ones deleted) and added to the inventory; once the run succeeded, its outputs are
// read from it. A failed run is an error naming it (provisioning.ErrRunFailed).
func (r *Reconciler) judgeRun(ctx context.Context, a *apply.Applier, def orchconfig.Provisioner, applied *apply.Result, marks prepare.Marks) (map[string]any, error) {
	if len(applied.Live) != 1 {
		return nil, nil // the definitions of its stage are not served yet
	}
	run := applied.Live[0]
	outcome, message := runnable.Judge(run, runnable.SuccessCondition(def.Runnable.SuccessCondition, run.GetKind()))
	applied.Objects[0].Health = map[runnable.Outcome]string{runnable.Succeeded: scorev1b1.HealthCurrent, runnable.Running: scorev1b1.HealthInProgress, runnable.Failed: scorev1b1.HealthFailed}[outcome]
	applied.Objects[0].Message = message
	history, err := a.KeepRuns(ctx, run, def.Runnable.HistoryLimit, marks)
	if err != nil {
		return nil, err
	}
	applied.Objects = append(applied.Objects, history...)
	switch outcome {
	case runnable.Failed:
		return nil, fmt.Errorf("%w: %s %s: %s", provisioning.ErrRunFailed, run.GetKind(), run.GetName(), message)
	case runnable.Running:
		return nil, nil
	}
	return runnable.Outputs(run, def.Runnable.Outputs)
}
