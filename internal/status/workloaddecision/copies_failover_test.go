package workloaddecision

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/score-orchestrator/score-orchestrator/internal/fleet/placement"
)

// A copy whose cluster is lost fails over as a single Workload does: its claim and its plan
// move to the free cluster that answers, the plan's write carries Placed and FailedOver, and
// the other copy is not written; before the failover is due, nothing is written and the pass
// comes back when it is.
func TestSeveralClustersFailoverDecision(t *testing.T) {
	wd := newWorld(t, "2", eu("eu-1", true, time.Hour), eu("eu-2", true, time.Hour), eu("eu-3", true, time.Hour))
	wd.o.Config = loaded(t, revOne, onClusters("2"), failingOver)
	wd.settle()
	if wd.plan("web").Spec.Cluster != "eu-1" || wd.plan("web.1").Spec.Cluster != "eu-2" {
		t.Fatalf("copies on %s and %s", wd.plan("web").Spec.Cluster, wd.plan("web.1").Spec.Cluster)
	}
	db := wd.o.Claims[0].Name
	other := *wd.plan("web.1")

	// Silent for 20s: nothing written, back when the failover is due (40s on).
	wd.o.Clusters[0] = eu("eu-1", false, 20*time.Second)
	d := wd.pass()
	if len(wd.writes) > 0 || d.RequeueAfter < 40*time.Second || d.RequeueAfter > 42*time.Second {
		t.Fatalf("writes %v, requeue after %s", wd.writes, d.RequeueAfter)
	}

	// Silent for 2m: slot 0 fails over to eu-3, its claim first.
	wd.o.Clusters[0] = eu("eu-1", false, 2*time.Minute)
	wd.events = nil
	d = wd.settle()
	if want := []string{"updating claim " + db + " on eu-3", "updating plan web on eu-3"}; !slices.Equal(wd.writes, want) {
		t.Fatalf("writes %v, want %v", wd.writes, want)
	}
	events := wd.events["web"]
	if len(events) != 2 || events[0].Reason != "Placed" || !strings.Contains(events[0].Message, "cluster eu-1 has not answered for 2m0s") ||
		events[1].Reason != "FailedOver" || events[1].Type != Warning || !strings.Contains(events[1].Message, "from cluster eu-1 to cluster eu-3") {
		t.Fatalf("events %+v", events)
	}
	if _, written := wd.events["web.1"]; written || wd.plan("web.1").Spec.Cluster != other.Spec.Cluster || d.RequeueAfter != 0 {
		t.Fatalf("the other copy: written %v, on %s; requeue after %s", written, wd.plan("web.1").Spec.Cluster, d.RequeueAfter)
	}
	if got := wd.ready(); got != "True/Succeeded: The workload is ready." {
		t.Fatalf("Ready %s", got)
	}

	// eu-1 answers again: nothing moves back.
	wd.o.Clusters[0] = eu("eu-1", true, time.Hour)
	if wd.settle(); len(wd.writes) > 0 {
		t.Fatalf("writes %v when the lost cluster answers again", wd.writes)
	}
}

// A lost cluster's copy with no free target stays, writing nothing, and comes back when the
// first hold-down ends.
func TestSeveralClustersFailoverWaitsForTheHoldDown(t *testing.T) {
	wd := newWorld(t, "2", eu("eu-1", true, time.Hour), eu("eu-2", true, time.Hour))
	wd.o.Config = loaded(t, revOne, onClusters("2"), failingOver)
	wd.settle()
	wd.o.Clusters = []placement.Cluster{eu("eu-1", false, 2*time.Minute), eu("eu-2", true, time.Hour), eu("eu-3", true, 20*time.Second)}
	d := wd.pass()
	// failingOver's hold-down is its after: a minute, 40s left on eu-3.
	if len(wd.writes) > 0 || d.RequeueAfter < 40*time.Second || d.RequeueAfter > 42*time.Second {
		t.Fatalf("writes %v, requeue after %s", wd.writes, d.RequeueAfter)
	}
}
