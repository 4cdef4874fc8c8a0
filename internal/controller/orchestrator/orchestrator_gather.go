package orchestrator

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/placement"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/status/workloaddecision"
)

// gather reads everything the pass decides from; all reads of a pass happen here. A deleted
// Workload needs its objects only. A read the decision may not need (the revision a rollout
// gives the Workload, the clusters, the kept revisions) records its error for the decision,
// which stops on it only when it needs what failed.
func (r *Reconciler) gather(ctx context.Context, s *scope) error {
	if err := r.observe(ctx, s); err != nil {
		return err
	}
	if !s.Workload.DeletionTimestamp.IsZero() {
		return nil
	}
	if err := r.uncached(ctx, s); err != nil {
		return err
	}
	loaded, ok := r.Config.Get()
	if !ok {
		return nil
	}
	s.Config = configOf(loaded)
	standing, err := r.previewOf(ctx, s.Workload.Namespace, loaded.Config.Previews)
	if err != nil {
		return err
	}
	s.Preview = standing
	if s.ProbeHosts, err = r.probeHosts(ctx, s.Workload.Namespace, loaded.Config); err != nil {
		return err
	}
	if err := r.namedVolumes(ctx, s); err != nil {
		return err
	}
	render, reached, err := r.renderFrom(ctx, s, loaded)
	if err != nil {
		s.RenderErr = err
		return nil
	}
	s.Render, s.Reached = configOf(render), reached
	s.Clusters, s.ClustersErr = r.placeable(ctx, render.Config)
	s.Kept = r.kept(ctx, s, loaded, render)
	return nil
}

// observe reads the Workload's objects as cached: the claims labelled for it, the plan it
// controls and the exposure of its name.
func (r *Reconciler) observe(ctx context.Context, s *scope) error {
	w := s.Workload
	var claims scorev1b1.ResourceClaimList
	if err := r.Client.List(ctx, &claims, client.InNamespace(w.Namespace), client.MatchingFields{indexWorkload: w.Name}); err != nil {
		return fmt.Errorf("listing claims: %w", err)
	}
	s.Claims = claims.Items
	for _, c := range s.Claims {
		r.memory.seen(w.UID, workloaddecision.Ref{Kind: workloaddecision.KindClaim, Name: c.Name})
	}
	plan := &scorev1b1.WorkloadPlan{}
	switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(w), plan); {
	case err == nil && metav1.IsControlledBy(plan, w):
		s.Plan, s.plan = plan, plan
		r.memory.seen(w.UID, workloaddecision.Ref{Kind: workloaddecision.KindPlan, Name: plan.Name})
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("reading the plan: %w", err)
	}
	exposure := &scorev1b1.WorkloadExposure{}
	switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(w), exposure); {
	case err == nil:
		s.Exposure = exposure
		r.memory.seen(w.UID, workloaddecision.Ref{Kind: workloaddecision.KindExposure, Name: exposure.Name})
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading the exposure: %w", err)
	}
	return r.observeCopies(ctx, s)
}

// uncached finds which of the objects the orchestrator created for the Workload, and that the
// cache does not show yet, exist (pending): they are not created again.
func (r *Reconciler) uncached(ctx context.Context, s *scope) error {
	for _, ref := range r.memory.uncached(s.Workload.UID) {
		var obj client.Object
		switch ref.Kind {
		case workloaddecision.KindClaim:
			obj = &scorev1b1.ResourceClaim{}
		case workloaddecision.KindPlan:
			obj = &scorev1b1.WorkloadPlan{}
		default:
			obj = &scorev1b1.WorkloadExposure{}
		}
		exists, err := r.pending(ctx, s.Workload, ref, obj)
		if err != nil {
			return fmt.Errorf("reading %s %s, created earlier: %w", ref.Kind, ref.Name, err)
		}
		if exists {
			if s.Created == nil {
				s.Created = map[workloaddecision.Ref]bool{}
			}
			s.Created[ref] = true
		}
	}
	return nil
}

// placeable reads the registered clusters the runtime publishes (clusters.StatusConfigMap)
// when a backend of cfg places its Workloads on members.
func (r *Reconciler) placeable(ctx context.Context, cfg *orchconfig.Config) ([]placement.Cluster, error) {
	if r.clusters == nil || !placesOnMembers(cfg) {
		return nil, nil // no clusters known: tests without a manager
	}
	cm := &corev1.ConfigMap{}
	if err := r.clusters.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: clusters.StatusConfigMap}, cm); client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("reading the clusters: %w", err)
	}
	return clusters.Placeable(clusters.Decode(cm)), nil
}

// placesOnMembers reports whether a backend of cfg places its Workloads on member clusters.
func placesOnMembers(cfg *orchconfig.Config) bool {
	for _, p := range cfg.Profiles {
		for _, b := range p.Backends {
			if b.Placement != nil {
				return true
			}
		}
	}
	return false
}

// kept reads, under a rollout policy, the kept revisions the Workload's own claims of its
// declared resources name, other than the one it is rendered from: whether such a revision
// provisions a claim as the Workload's does decides which one the claim names. A revision no
// longer kept is left out.
func (r *Reconciler) kept(ctx context.Context, s *scope, current, render *configsource.Loaded) map[string]workloaddecision.Kept {
	if current.Config.Rollout == nil {
		return nil
	}
	w := s.Workload
	declared := map[string]bool{}
	for key, res := range w.Spec.Resources {
		declared[planner.ClaimName(w.Name, key, res.Type)] = true
	}
	out := map[string]workloaddecision.Kept{}
	read := map[string]bool{render.Revision: true, "": true}
	for i := range s.Claims {
		c := &s.Claims[i]
		revision := c.Spec.ConfigRevision
		if read[revision] || !declared[claimBase(c.Name)] || !metav1.IsControlledBy(c, w) {
			continue
		}
		read[revision] = true
		switch l, err := r.revisions.Get(ctx, revision); {
		case apierrors.IsNotFound(err):
		case err != nil:
			out[revision] = workloaddecision.Kept{Err: err}
		default:
			out[revision] = workloaddecision.Kept{Config: l.Config}
		}
	}
	return out
}

// configOf is a loaded config as the decision uses it.
func configOf(l *configsource.Loaded) *workloaddecision.Config {
	return &workloaddecision.Config{Config: l.Config, Selector: l.Selector, Revision: l.Revision}
}
