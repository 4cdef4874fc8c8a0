package runtime

import (
	"slices"
	"testing"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/inventory"
)

// A plan that moved lists its objects on both clusters until the old ones are deleted; each
// cluster's entries are pruned only by that cluster's applier, and the same object on two
// clusters is two entries.
func TestInventoryAcrossClusters(t *testing.T) {
	deploy := func(cluster string) scorev1b1.AppliedObject {
		return scorev1b1.AppliedObject{Cluster: cluster, APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "web"}
	}
	p := &scorev1b1.WorkloadPlan{Spec: scorev1b1.WorkloadPlanSpec{Cluster: "us"}, Status: scorev1b1.WorkloadPlanStatus{Objects: []scorev1b1.AppliedObject{deploy("eu"), deploy("")}}}
	on, others := clusters.Split(p.Status.Objects, "us")
	if len(on) != 0 || len(others) != 2 {
		t.Fatalf("on us %v, elsewhere %v", on, others)
	}
	if inventory.Key(deploy("eu")) == inventory.Key(deploy("us")) || inventory.Key(deploy("")) != "apps/Deployment/team/web" {
		t.Fatalf("keys %q %q %q", inventory.Key(deploy("eu")), inventory.Key(deploy("us")), inventory.Key(deploy("")))
	}
	if got := planClusters(p); !slices.Equal(got, []string{"us", "eu"}) {
		t.Fatalf("the plan's clusters %v, want [us eu] (the hub is not indexed)", got)
	}
	if got := clusters.Tag([]scorev1b1.AppliedObject{deploy("")}, "eu"); got[0].Cluster != "eu" {
		t.Fatalf("tagged %v", got)
	}
}
