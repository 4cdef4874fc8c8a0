package workloaddecision

import (
	"encoding/json"
	"testing"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// regionReplicas gives the placed backend a replica count per region.
func regionReplicas(eu, us int) func(*orchconfig.Config) {
	return func(c *orchconfig.Config) {
		p := c.Profiles[1].Backends[0].Placement
		p.Overrides = []orchconfig.Override{
			{ClusterSelector: orchconfig.Selector{MatchLabels: map[string]string{"region": "eu"}}, Values: map[string]any{"replicas": eu}},
			{ClusterSelector: orchconfig.Selector{MatchLabels: map[string]string{"region": "us"}}, Values: map[string]any{"replicas": us}},
		}
	}
}

func replicasOf(t *testing.T, spec scorev1b1.WorkloadPlanSpec) any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(spec.Values.Raw, &v); err != nil {
		t.Fatal(err)
	}
	return v["replicas"]
}

// The plan of a Workload placed on eu-1 (region=eu) carries the eu override; a config that
// changes only the us override writes nothing for it, one that changes the eu override
// writes its plan with the new value.
func TestClusterOverridesReplanOnlyMatchingPlans(t *testing.T) {
	placed := withAnnotation(scorev1b1.AnnotationProfile, "placed")
	o := settled(t, loaded(t, revOne, regionReplicas(3, 5)), placed)
	if o.Plan.Spec.Cluster != "eu-1" || replicasOf(t, o.Plan.Spec) != float64(3) {
		t.Fatalf("plan on %q with replicas %v, want eu-1 with the eu override's 3", o.Plan.Spec.Cluster, replicasOf(t, o.Plan.Spec))
	}

	o.Config = loaded(t, revTwo, regionReplicas(3, 9))
	if d := From(o); d.Next != Done || d.Plan != nil {
		t.Fatalf("another region's override changed: %s, want no write", d.Next)
	}

	o.Config = loaded(t, revTwo, regionReplicas(4, 5))
	d := From(o)
	if d.Next != WritePlan || d.Plan == nil || d.Plan.Create {
		t.Fatalf("its region's override changed: %s, want the plan updated", d.Next)
	}
	if got := replicasOf(t, *d.Plan.Spec); got != float64(4) {
		t.Fatalf("replicas %v, want 4", got)
	}
}
