package controlplane

import (
	"fmt"
	"slices"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/shard"
)

// A shard's cache holds its own Workloads, plans and exposures only where no controller of the
// process needs the others': the provisioner reads every Workload and claim, the orchestrator
// every plan and exposure of a Workload moving into its shard.
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
