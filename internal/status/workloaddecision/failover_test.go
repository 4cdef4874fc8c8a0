package workloaddecision

import (
	"strings"
	"testing"
	"time"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/placement"
)

// failingOver makes the placed profile's backend fail over after a minute, hold-down a minute.
func failingOver(c *orchconfig.Config) {
	for i := range c.Profiles {
		for j := range c.Profiles[i].Backends {
			if p := c.Profiles[i].Backends[j].Placement; p != nil {
				p.Failover = &orchconfig.Failover{After: "1m"}
			}
		}
	}
}

// placedOn is a pass over a Workload without dependencies, its plan on eu-1, under the
// config with edits, the clusters then as given.
func placedOn(t *testing.T, clusters []placement.Cluster, edits ...func(*orchconfig.Config)) Observed {
	t.Helper()
	o := fresh(t, withAnnotation(scorev1b1.AnnotationProfile, "placed"))
	o.Config = loaded(t, revOne, edits...)
	o.Clusters = []placement.Cluster{{Name: "eu-1", Labels: map[string]string{"region": "eu"}}}
	d := From(o)
	o.Exposure = exposureOf(o.Workload, d.Exposure.Spec, endpoint)
	o.Plan = planOf(o.Workload, From(o).Plan.Spec)
	o.Clusters = clusters
	return o
}

func eu(name string, up bool, since time.Duration) placement.Cluster {
	c := placement.Cluster{Name: name, Labels: map[string]string{"region": "eu"}}
	if up {
		c.UpSince = now.Add(-since)
	} else {
		c.DownSince = now.Add(-since)
	}
	return c
}

func TestMemberFailoverDecision(t *testing.T) {
	t.Run("a cluster silent for failover.after: the plan moves, with Placed and FailedOver naming both clusters", func(t *testing.T) {
		o := placedOn(t, []placement.Cluster{eu("eu-1", false, 2*time.Minute), eu("eu-2", true, time.Hour)}, failingOver)
		d := From(o)
		if d.Next != WritePlan || d.Plan.Spec.Cluster != "eu-2" || len(d.Plan.Events) != 2 {
			t.Fatalf("%s %+v", d.Next, d.Plan)
		}
		if e := d.Plan.Events[1]; e.Reason != "FailedOver" || e.Type != Warning || !strings.Contains(e.Message, "from cluster eu-1 to cluster eu-2") || !strings.Contains(e.Message, "2m0s") {
			t.Fatalf("%+v", e)
		}
		if e := d.Plan.Events[0]; e.Reason != "Placed" || !strings.Contains(e.Message, "cluster eu-1 has not answered") {
			t.Fatalf("%+v", e)
		}
	})
	t.Run("silent for less: nothing written, the pass comes back when the failover is due", func(t *testing.T) {
		o := placedOn(t, []placement.Cluster{eu("eu-1", false, 20*time.Second), eu("eu-2", true, time.Hour)}, failingOver)
		d := From(o)
		if d.Next != Done || d.Plan != nil || d.RequeueAfter < 40*time.Second || d.RequeueAfter > 42*time.Second {
			t.Fatalf("%s, requeue after %s", d.Next, d.RequeueAfter)
		}
	})
	t.Run("without failover: nothing moves and nothing is timed", func(t *testing.T) {
		o := placedOn(t, []placement.Cluster{eu("eu-1", false, time.Hour), eu("eu-2", true, time.Hour)})
		if d := From(o); d.Next != Done || d.RequeueAfter != 0 {
			t.Fatalf("%s, requeue after %s", d.Next, d.RequeueAfter)
		}
	})
	t.Run("a relabel move says Placed only", func(t *testing.T) {
		o := placedOn(t, []placement.Cluster{{Name: "eu-1", Labels: map[string]string{"region": "us"}}, eu("eu-2", true, time.Hour)}, failingOver)
		d := From(o)
		if d.Next != WritePlan || len(d.Plan.Events) != 1 || d.Plan.Events[0].Reason != "Placed" {
			t.Fatalf("%s %+v", d.Next, d.Plan)
		}
	})
}
