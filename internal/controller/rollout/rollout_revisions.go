package rollout

import (
	"context"
	"fmt"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	core "github.com/score-orchestrator/score-orchestrator/internal/planning/rollout"
)

// pruneOnce prunes the kept revisions once for each state of the config and its rollouts
// (oldest first).
func (r *Reconciler) pruneOnce(ctx context.Context, rollouts []scorev1b1.ConfigRollout, current string) error {
	key := current
	if last := core.Latest(rollouts); last != nil {
		key += "/" + last.Name + "/" + last.Status.Phase
	}
	if r.pruned == key {
		return nil
	}
	if err := r.prune(ctx, rollouts); err != nil {
		return err
	}
	r.pruned = key
	return nil
}

// prune drops the kept revisions no plan, claim or recent rollout uses, beyond the newest
// few (configsource.KeptRevisions). The claims are read from the API server: a pruning is
// rare, and a process that runs only this controller need not cache every claim for it.
func (r *Reconciler) prune(ctx context.Context, rollouts []scorev1b1.ConfigRollout) error {
	inUse := map[string]bool{}
	for _, ro := range rollouts[max(0, len(rollouts)-2):] {
		inUse[ro.Spec.From], inUse[ro.Spec.To] = true, true
		for _, pinned := range ro.Spec.Pins {
			inUse[pinned] = true
		}
	}
	var plans scorev1b1.WorkloadPlanList
	if err := r.Client.List(ctx, &plans); err != nil {
		return fmt.Errorf("listing the plans' revisions: %w", err)
	}
	for _, p := range plans.Items {
		inUse[p.Spec.ConfigRevision] = true
	}
	var claims scorev1b1.ResourceClaimList
	if err := r.APIReader.List(ctx, &claims); err != nil {
		return fmt.Errorf("listing the claims' revisions: %w", err)
	}
	for _, c := range claims.Items {
		inUse[c.Spec.ConfigRevision] = true
	}
	return r.revisions.Prune(ctx, inUse)
}
