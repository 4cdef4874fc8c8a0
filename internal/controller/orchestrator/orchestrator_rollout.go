package orchestrator

// Fleet rollouts, as the orchestrator follows them: the rollout controller
// (internal/controller/rollout) starts, advances, halts and completes one ConfigRollout per
// revision; every orchestrator instance, sharded or not, reads the governing rollout's status
// and renders each of its Workloads from the revision it gives (rollout.Choose), reading an
// earlier revision back from the ConfigMap the rollout controller keeps it in (gather reads
// them; workloaddecision decides which revision each claim names). Nothing here writes a
// rollout.

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/rollout"
)

// The rollouts are read, never written, by the orchestrator.
//
// +kubebuilder:rbac:groups=score.dev,resources=configrollouts,verbs=get;list;watch

// governing is the rollout the Workloads are rendered under: the latest one. With a rollout
// policy and none yet (the first revision), nil: the current revision. The cache holds every
// rollout whatever the shard (controlplane.CacheOptions narrows only the Workloads' kinds).
func (r *Reconciler) governing(ctx context.Context) (*scorev1b1.ConfigRollout, error) {
	var list scorev1b1.ConfigRolloutList
	if err := r.Client.List(ctx, &list, client.InNamespace(r.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the config rollouts: %w", err)
	}
	return rollout.Latest(list.Items), nil
}

// renderFrom is the config a Workload is rendered from: the current one, or the revision the
// governing rollout gives it. reached is true when the Workload is in a wave the rollout has
// reached (rollout.Reached): its plan then records the revision even when its content is the
// same (a change of its claims' definitions alone), since the rollout's gate reads it there.
// A wave not reached yet keeps its plans as they are.
func (r *Reconciler) renderFrom(ctx context.Context, s *scope, current *configsource.Loaded) (render *configsource.Loaded, reached bool, err error) {
	if current.Config.Rollout == nil {
		return current, false, nil
	}
	gov, err := r.governing(ctx)
	if err != nil {
		return nil, false, err
	}
	planned := ""
	if s.Plan != nil {
		planned = s.Plan.Spec.ConfigRevision
	}
	key := s.Workload.Namespace + "/" + s.Workload.Name
	revision := rollout.Choose(gov, key, planned)
	reached = rollout.Reached(gov, key)
	if revision == "" || revision == current.Revision {
		return current, reached, nil
	}
	render, err = r.revisions.Get(ctx, revision)
	return render, reached, err
}
