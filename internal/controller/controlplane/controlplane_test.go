package controlplane

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/shard"
)

// A shard's cache holds its own Workloads, plans and exposures only where no controller of the
// process needs the others': the provisioner reads every Workload and claim, the orchestrator
// every plan and exposure of a Workload moving into its shard, the rollout every Workload and
// plan of the fleet.
func TestCacheOptionsOfAShard(t *testing.T) {
	sel, err := shard.Selector("score.dev/shard=blue")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		controllers []string
		shard       bool
		narrowed    []string
	}{
		{All, false, nil},
		{All, true, nil},
		{[]string{Orchestrator}, true, []string{"Workload"}},
		{[]string{Provisioner}, true, []string{"WorkloadExposure", "WorkloadPlan"}},
		{[]string{Runtime}, true, []string{"Workload", "WorkloadExposure", "WorkloadPlan"}},
		{[]string{Runtime}, false, nil},
		{[]string{Orchestrator, Runtime}, true, []string{"Workload"}},
		// The rollout reads the whole fleet's Workloads and plans, whatever the shard.
		{[]string{Rollout}, true, []string{"WorkloadExposure"}},
		{[]string{Orchestrator, Rollout}, true, nil},
		{[]string{Runtime, Rollout}, true, []string{"WorkloadExposure"}},
	} {
		opts := Options{Controllers: tc.controllers}
		if tc.shard {
			opts.Shard = sel
		}
		var narrowed []string
		for obj, by := range CacheOptions(opts).ByObject {
			switch obj.(type) {
			case *scorev1b1.Workload, *scorev1b1.WorkloadPlan, *scorev1b1.WorkloadExposure, *scorev1b1.ResourceClaim:
				if by.Label == nil || by.Label.String() != sel.String() {
					t.Errorf("%v: %T selected by %v", tc.controllers, obj, by.Label)
				}
				narrowed = append(narrowed, kind(obj))
			}
		}
		slices.Sort(narrowed)
		if fmt.Sprint(narrowed) != fmt.Sprint(tc.narrowed) {
			t.Errorf("%v (shard %v): narrowed %v, want %v", tc.controllers, tc.shard, narrowed, tc.narrowed)
		}
	}
}

func kind(o client.Object) string { return fmt.Sprintf("%T", o)[len("*v1b1."):] }

// Unsharded, the Leases keep the names they had before shards (an upgrade elects no second
// leader); each shard has a Lease of its own.
func TestLeaderElectionID(t *testing.T) {
	blue, _ := shard.Selector("score.dev/shard=blue")
	rest, _ := shard.Selector("!score.dev/shard")
	if got := LeaderElectionID(All, nil); got != "score-orchestrator-provisioner-runtime.score.dev" {
		t.Errorf("all, unsharded (the rollout has a lease of its own): %s", got)
	}
	if got := LeaderElectionID([]string{Runtime}, nil); got != "score-runtime.score.dev" {
		t.Errorf("the runtime, unsharded: %s", got)
	}
	if got := Leases(All, blue); !slices.Equal(got, []string{LeaderElectionID(All, blue), "score-rollout.score.dev"}) {
		t.Errorf("every controller in a shard: %v (the rollout's lease is the fleet's)", got)
	}
	if got := Leases([]string{Rollout}, nil); !slices.Equal(got, []string{"score-rollout.score.dev"}) {
		t.Errorf("the rollout alone: %v", got)
	}
	ids := map[string]bool{}
	for _, sel := range []labels.Selector{nil, blue, rest} {
		ids[LeaderElectionID([]string{Runtime}, sel)] = true
	}
	if len(ids) != 3 {
		t.Errorf("one Lease per shard: %v", ids)
	}
}
