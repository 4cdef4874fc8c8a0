package main

// --clusters K (with --members K or more): every backend places each Workload on K members
// (placement.clusters: K, Spread), a copy on each with its own plan, exposure and dependencies
// there. A Workload counts as Ready when every copy is: Ready True and not RuntimeDegraded
// (one copy ready of two is Ready with RuntimeDegraded). After the load the run checks that
// every Workload has K plans on K distinct members, and reports our writes per Workload on the
// hub and on each member, as --members does.

import (
	"context"
	"fmt"
	"strconv"

	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// copiesPlacement is the placement --clusters gives every backend.
func copiesPlacement(k int) map[string]any {
	return map[string]any{"clusterSelector": map[string]any{"matchLabels": map[string]any{"bench": "member"}},
		"policy": "Spread", "clusters": strconv.Itoa(k)}
}

// allReady reports whether a Workload counts as Ready for the run: Ready, and with copies
// (--clusters) every copy ready.
func (s *runState) allReady(w *scorev1b1.Workload) bool {
	if !readyNow(w) {
		return false
	}
	return s.o.clusters < 2 || ready(w).Reason != string(scorev1b1.ReasonRuntimeDegraded)
}

// copiesPlaced counts the plans of the run's Workloads, and fails unless each has k of them
// on k distinct members.
func (s *runState) copiesPlaced(ctx context.Context, k int) (int, error) {
	var plans scorev1b1.WorkloadPlanList
	if err := s.c.List(ctx, &plans, client.InNamespace(benchNS)); err != nil {
		return 0, err
	}
	on := map[string]map[string]bool{}
	for _, p := range plans.Items {
		w := p.Spec.WorkloadRef.Name
		if on[w] == nil {
			on[w] = map[string]bool{}
		}
		on[w][p.Spec.Cluster] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range s.created {
		if n := len(on[name]); n != k || on[name][""] {
			return len(plans.Items), fmt.Errorf("workload %s has plans on %d members, want %d: %v", name, n, k, on[name])
		}
	}
	return len(plans.Items), nil
}
