package orchestrator

// Fleet rollouts, as the orchestrator follows them: the rollout controller
// (internal/controller/rollout) starts, advances, halts and completes one ConfigRollout per
// revision; every orchestrator instance, sharded or not, reads the governing rollout's status
// and renders each of its Workloads from the revision it gives (rollout.Choose), reading an
// earlier revision back from the ConfigMap the rollout controller keeps it in. Nothing here
// writes a rollout.

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/provisionermatch"
	"github.com/score-orchestrator/score-orchestrator/internal/rollout"
	"github.com/score-orchestrator/score-orchestrator/internal/values"
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
	if s.plan != nil {
		planned = s.plan.Spec.ConfigRevision
	}
	key := s.workload.Namespace + "/" + s.workload.Name
	revision := rollout.Choose(gov, key, planned)
	reached = rollout.Reached(gov, key)
	if revision == "" || revision == current.Revision {
		return current, reached, nil
	}
	render, err = r.revisions.Get(ctx, revision)
	return render, reached, err
}

// claimRevisions records in each desired claim the revision whose provisioner definitions
// provision it: none without a rollout policy (the provisioner takes the current one), else
// the revision the Workload is rendered from — or the one the claim already names when the
// two provision it the same, so that a change that does not touch a claim writes nothing to
// it. A claim always names one under a policy: a new revision then reaches it only through
// the rollout.
func (r *Reconciler) claimRevisions(ctx context.Context, s *scope, desired []planner.DesiredClaim, render, current *configsource.Loaded) error {
	if current.Config.Rollout == nil {
		return nil
	}
	owned := s.owned()
	for i := range desired {
		d := &desired[i]
		d.Spec.ConfigRevision = render.Revision
		existing := owned[d.Name]
		if existing == nil || existing.Spec.ConfigRevision == "" || existing.Spec.ConfigRevision == render.Revision {
			continue
		}
		have, err := r.revisions.Get(ctx, existing.Spec.ConfigRevision)
		if apierrors.IsNotFound(err) {
			continue // no longer kept: the claim takes the Workload's revision
		}
		if err != nil {
			return err
		}
		params, _ := values.Object(d.Spec.Params)
		if provisionermatch.Same(have.Config, render.Config, provisionermatch.Claim{Type: d.Spec.Type, Class: d.Spec.Class, ID: d.Spec.ID, Params: params}) {
			d.Spec.ConfigRevision = existing.Spec.ConfigRevision
		}
	}
	return nil
}
