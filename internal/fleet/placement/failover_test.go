package placement

import (
	"strings"
	"testing"
	"time"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

var now = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)

// failingOver is an eu placement that fails over after a minute, with a hold-down of five.
func failingOver(policy string) *orchconfig.Placement {
	p := eu(policy)
	p.Failover = &orchconfig.Failover{After: "1m", HoldDown: "5m"}
	return p
}

// up is an eu cluster answering for d; down one silent for d.
func up(name string, d time.Duration) Cluster {
	return Cluster{Name: name, Labels: map[string]string{"region": "eu"}, UpSince: now.Add(-d)}
}

func down(name string, d time.Duration) Cluster {
	return Cluster{Name: name, Labels: map[string]string{"region": "eu"}, DownSince: now.Add(-d)}
}

func TestMemberFailoverPlacement(t *testing.T) {
	hour := time.Hour
	for _, tc := range []struct {
		name       string
		in         Input
		cluster    string
		failedOver bool
		recheck    time.Time
		why        map[string]string
	}{
		{name: "without failover a silent cluster keeps its Workloads",
			in:      Input{Placement: eu(orchconfig.PlacementOrdered), Clusters: []Cluster{down("eu-1", hour), up("eu-2", hour)}, Current: "eu-1", Now: now},
			cluster: "eu-1", why: map[string]string{"eu-1": "still matches."}},
		{name: "silent for less than after: kept, looked at again when after is reached",
			in:      Input{Placement: failingOver(orchconfig.PlacementOrdered), Clusters: []Cluster{down("eu-1", 20*time.Second), up("eu-2", hour)}, Current: "eu-1", Now: now},
			cluster: "eu-1", recheck: now.Add(40 * time.Second), why: map[string]string{"eu-1": "has not answered for 20s (failover after 1m0s)"}},
		{name: "silent for after: fails over to a cluster that answers",
			in:      Input{Placement: failingOver(orchconfig.PlacementOrdered), Clusters: []Cluster{down("eu-1", time.Minute), up("eu-3", hour)}, Current: "eu-1", Now: now},
			cluster: "eu-3", failedOver: true,
			why: map[string]string{"eu-1": "has not answered for 1m0s (failover after 1m0s): the workload fails over to eu-3", "eu-3": "fails over from eu-1; the first matching cluster by name that has answered for the hold-down (Ordered)"}},
		{name: "the policy chooses among the clusters that answer: a silent one is passed over",
			in:      Input{Placement: failingOver(orchconfig.PlacementOrdered), Clusters: []Cluster{down("eu-1", hour), down("eu-2", 10*time.Second), up("eu-3", hour)}, Current: "eu-1", Now: now},
			cluster: "eu-3", failedOver: true, why: map[string]string{"eu-2": "does not answer: no failover to it"}},
		{name: "a cluster that does not match is no target",
			in:      Input{Placement: failingOver(orchconfig.PlacementOrdered), Clusters: []Cluster{down("eu-1", hour), {Name: "us-1", Labels: map[string]string{"region": "us"}, UpSince: now.Add(-hour)}}, Current: "eu-1", Now: now},
			cluster: "eu-1", why: map[string]string{"us-1": "do not match"}},
		{name: "hold-down: a cluster back for less than it is no target; the Workload waits for its end",
			in:      Input{Placement: failingOver(orchconfig.PlacementOrdered), Clusters: []Cluster{down("eu-1", hour), up("eu-2", 2*time.Minute)}, Current: "eu-1", Now: now},
			cluster: "eu-1", recheck: now.Add(3 * time.Minute),
			why: map[string]string{"eu-1": "no other matching cluster has answered for the hold-down (5m0s)", "eu-2": "has answered only for 2m0s (hold-down 5m0s): no failover to it yet"}},
		{name: "hold-down: a cluster whose time is not known yet is no target",
			in:      Input{Placement: failingOver(orchconfig.PlacementOrdered), Clusters: []Cluster{down("eu-1", hour), {Name: "eu-2", Labels: map[string]string{"region": "eu"}}}, Current: "eu-1", Now: now},
			cluster: "eu-1", why: map[string]string{"eu-2": "not known yet"}},
		{name: "no move back: the cluster a Workload failed over to is kept when the lost one answers again",
			in:      Input{Placement: failingOver(orchconfig.PlacementOrdered), Clusters: []Cluster{up("eu-1", hour), up("eu-2", hour)}, Current: "eu-2", Now: now},
			cluster: "eu-2", why: map[string]string{"eu-2": "runs there and it still matches."}},
		{name: "a new Workload is not placed on a lost cluster",
			in:      Input{Placement: failingOver(orchconfig.PlacementOrdered), Clusters: []Cluster{down("eu-1", hour), up("eu-2", time.Second)}, Now: now},
			cluster: "eu-2", why: map[string]string{"eu-1": "has not answered for 1h0m0s (failover after 1m0s)."}},
		{name: "a new Workload goes to a lost cluster when nothing else matches",
			in:      Input{Placement: failingOver(orchconfig.PlacementOrdered), Clusters: []Cluster{down("eu-1", hour)}, Now: now},
			cluster: "eu-1"},
		{name: "a relabel move avoids a lost cluster",
			in:      Input{Placement: failingOver(orchconfig.PlacementOrdered), Clusters: []Cluster{{Name: "us-1", Labels: map[string]string{"region": "us"}}, down("eu-1", hour), up("eu-2", hour)}, Current: "us-1", Now: now},
			cluster: "eu-2"},
		{name: "no time given (an offline render): no failover",
			in:      Input{Placement: failingOver(orchconfig.PlacementOrdered), Clusters: []Cluster{down("eu-1", hour), up("eu-2", hour)}, Current: "eu-1"},
			cluster: "eu-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Place(tc.in)
			if !res.OK || res.Cluster != tc.cluster || res.FailedOver != tc.failedOver || !res.RecheckAt.Equal(tc.recheck) {
				t.Fatalf("cluster %q, failed over %v, recheck %v; want %q, %v, %v", res.Cluster, res.FailedOver, res.RecheckAt, tc.cluster, tc.failedOver, tc.recheck)
			}
			if res.Moved != (tc.in.Current != "" && tc.in.Current != tc.cluster) {
				t.Fatalf("moved %v", res.Moved)
			}
			if tc.failedOver && res.Silence < time.Minute {
				t.Fatalf("silence %s", res.Silence)
			}
			chosen := 0
			for _, c := range res.Candidates {
				if c.Chosen {
					chosen++
				}
				if c.Chosen != (c.Name == res.Cluster) || c.Why == "" {
					t.Errorf("candidate %+v", c)
				}
				if want, ok := tc.why[c.Name]; ok && !strings.Contains(c.Why, want) {
					t.Errorf("%s: %q, want it to say %q", c.Name, c.Why, want)
				}
			}
			if chosen != 1 {
				t.Errorf("%d chosen", chosen)
			}
		})
	}
}

// Spread fails each Workload over to one of the clusters that answer, by its rendezvous
// weight among them: the Workloads of a lost cluster spread over the others, and those on a
// cluster that answers do not move.
func TestMemberFailoverSpreads(t *testing.T) {
	fleet := []Cluster{down("eu-1", time.Hour), up("eu-2", time.Hour), up("eu-3", time.Hour)}
	count := map[string]int{}
	for i := range 200 {
		name := "app-" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune('a'+i/26))
		before := Place(Input{Placement: failingOver(""), Clusters: []Cluster{up("eu-1", time.Hour), fleet[1], fleet[2]}, Namespace: "ns", Name: name})
		after := Place(Input{Placement: failingOver(""), Clusters: fleet, Current: before.Cluster, Namespace: "ns", Name: name, Now: now})
		if before.Cluster != "eu-1" {
			if after.Cluster != before.Cluster {
				t.Fatalf("%s moved from %s, which answers, to %s", name, before.Cluster, after.Cluster)
			}
			continue
		}
		if !after.FailedOver || after.Cluster == "eu-1" {
			t.Fatalf("%s stayed on the lost cluster: %+v", name, after)
		}
		count[after.Cluster]++
	}
	if count["eu-2"] < 15 || count["eu-3"] < 15 {
		t.Fatalf("uneven failover: %v", count)
	}
}
