package placement

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// severalFailingOver is failingOver's placement with clusters N.
func severalFailingOver(policy, clusters string) *orchconfig.Placement {
	p := failingOver(policy)
	p.Clusters = clusters
	return p
}

func TestSeveralClustersFailover(t *testing.T) {
	ordered, hour := orchconfig.PlacementOrdered, time.Hour
	us := Cluster{Name: "us-1", Labels: map[string]string{"region": "us"}, UpSince: now.Add(-hour)}
	for _, tc := range []struct {
		name       string
		in         SeveralInput
		want       []string
		failedOver []int // slots
		removed    []int
		recheck    time.Time
		why        map[string]string
	}{
		{name: "a lost copy fails over to the first free target; the copy that answers is untouched",
			in: SeveralInput{Placement: severalFailingOver(ordered, "2"), Clusters: []Cluster{down("eu-1", hour), up("eu-2", hour), up("eu-3", hour)},
				Current: []Copy{{Slot: 0, Cluster: "eu-1"}, {Slot: 1, Cluster: "eu-2"}}},
			want: []string{"1@eu-2", "0@eu-3<eu-1"}, failedOver: []int{0},
			why: map[string]string{"eu-1": "has not answered for 1h0m0s (failover after 1m0s): its copy fails over to eu-3", "eu-2": "runs there and it still matches",
				"eu-3": "fails over from eu-1; the first free matching cluster under Ordered that has answered for the hold-down"}},
		{name: "without failover a silent cluster keeps its copy",
			in: SeveralInput{Placement: several(ordered, "2"), Clusters: []Cluster{down("eu-1", hour), up("eu-2", hour), up("eu-3", hour)},
				Current: []Copy{{Slot: 0, Cluster: "eu-1"}, {Slot: 1, Cluster: "eu-2"}}},
			want: []string{"0@eu-1", "1@eu-2"}},
		{name: "silent for less than after: kept, looked at again when after is reached",
			in: SeveralInput{Placement: severalFailingOver(ordered, "2"), Clusters: []Cluster{down("eu-1", 20*time.Second), up("eu-2", hour), up("eu-3", hour)},
				Current: []Copy{{Slot: 0, Cluster: "eu-1"}, {Slot: 1, Cluster: "eu-2"}}},
			want: []string{"0@eu-1", "1@eu-2"}, recheck: now.Add(40 * time.Second),
			why: map[string]string{"eu-1": "has not answered for 20s (failover after 1m0s)"}},
		{name: "hold-down: no free target, the copy stays and waits for the hold-down's end",
			in: SeveralInput{Placement: severalFailingOver(ordered, "2"), Clusters: []Cluster{down("eu-1", hour), up("eu-2", hour), up("eu-3", 2*time.Minute)},
				Current: []Copy{{Slot: 0, Cluster: "eu-1"}, {Slot: 1, Cluster: "eu-2"}}},
			want: []string{"0@eu-1", "1@eu-2"}, recheck: now.Add(3 * time.Minute),
			why: map[string]string{"eu-1": "no other free matching cluster has answered for the hold-down (5m0s)", "eu-3": "has answered only for 2m0s (hold-down 5m0s): no failover to it yet"}},
		{name: "a silent cluster and one whose time is not known are no targets",
			in: SeveralInput{Placement: severalFailingOver(ordered, "2"), Clusters: []Cluster{down("eu-1", hour), up("eu-2", hour), down("eu-3", time.Second), {Name: "eu-4", Labels: map[string]string{"region": "eu"}}},
				Current: []Copy{{Slot: 0, Cluster: "eu-1"}, {Slot: 1, Cluster: "eu-2"}}},
			want: []string{"0@eu-1", "1@eu-2"},
			why:  map[string]string{"eu-3": "does not answer: no failover to it", "eu-4": "not known yet"}},
		{name: "a failover never takes the cluster of a copy that answers, whatever its slot",
			in: SeveralInput{Placement: severalFailingOver(ordered, "2"), Clusters: []Cluster{up("eu-1", hour), down("eu-2", hour), up("eu-3", hour), up("eu-4", hour)},
				Current: []Copy{{Slot: 0, Cluster: "eu-2"}, {Slot: 1, Cluster: "eu-1"}}},
			want: []string{"1@eu-1", "0@eu-3<eu-2"}, failedOver: []int{0}},
		{name: "a target where another copy holds objects is not free",
			in: SeveralInput{Placement: severalFailingOver(ordered, "2"), Clusters: []Cluster{down("eu-1", hour), up("eu-2", hour), up("eu-3", hour), up("eu-4", hour)},
				Current: []Copy{{Slot: 0, Cluster: "eu-1"}, {Slot: 1, Cluster: "eu-2"}}, Held: map[string][]int{"eu-1": {0}, "eu-2": {1}, "eu-3": {2}}},
			want: []string{"1@eu-2", "0@eu-4<eu-1"}, failedOver: []int{0}},
		{name: "never back: copies that failed over stay when the lost cluster answers again",
			in: SeveralInput{Placement: severalFailingOver(ordered, "2"), Clusters: []Cluster{up("eu-1", hour), up("eu-2", hour), up("eu-3", hour)},
				Current: []Copy{{Slot: 0, Cluster: "eu-3"}, {Slot: 1, Cluster: "eu-2"}}},
			want: []string{"1@eu-2", "0@eu-3"}},
		{name: "new copies are not placed on a lost cluster",
			in:   SeveralInput{Placement: severalFailingOver(ordered, "2"), Clusters: []Cluster{down("eu-1", hour), up("eu-2", time.Second), up("eu-3", time.Second)}},
			want: []string{"0@eu-2", "1@eu-3"},
			why:  map[string]string{"eu-1": "has not answered for 1h0m0s (failover after 1m0s)."}},
		{name: "a new copy goes to a lost cluster when no other is free",
			in:   SeveralInput{Placement: severalFailingOver(ordered, "2"), Clusters: []Cluster{down("eu-1", hour), up("eu-2", hour)}},
			want: []string{"1@eu-1", "0@eu-2"}},
		{name: "the cluster a copy failed over from is given to no new copy",
			in: SeveralInput{Placement: severalFailingOver(ordered, "2"), Clusters: []Cluster{down("eu-1", hour), up("eu-2", hour)},
				Current: []Copy{{Slot: 0, Cluster: "eu-1"}}},
			want: []string{"0@eu-2<eu-1"}, failedOver: []int{0}},
		{name: "a relabel move avoids a lost cluster and is no failover",
			in: SeveralInput{Placement: severalFailingOver(ordered, "2"), Clusters: []Cluster{us, down("eu-1", hour), up("eu-2", hour), up("eu-3", hour)},
				Current: []Copy{{Slot: 0, Cluster: "us-1"}, {Slot: 1, Cluster: "eu-2"}}},
			want: []string{"1@eu-2", "0@eu-3<us-1"}},
		{name: "All: every matching cluster runs a copy, so a lost one's stays",
			in: SeveralInput{Placement: severalFailingOver(ordered, "All"), Clusters: []Cluster{down("eu-1", hour), up("eu-2", hour), up("eu-3", hour)},
				Current: []Copy{{Slot: 0, Cluster: "eu-1"}, {Slot: 1, Cluster: "eu-2"}, {Slot: 2, Cluster: "eu-3"}}},
			want: []string{"0@eu-1", "1@eu-2", "2@eu-3"}},
		{name: "two lost copies fail over in slot order to the free targets",
			in: SeveralInput{Placement: severalFailingOver(ordered, "2"), Clusters: []Cluster{down("eu-1", hour), down("eu-2", 2*time.Minute), up("eu-3", hour), up("eu-4", hour)},
				Current: []Copy{{Slot: 1, Cluster: "eu-1"}, {Slot: 0, Cluster: "eu-2"}}},
			want: []string{"0@eu-3<eu-2", "1@eu-4<eu-1"}, failedOver: []int{0, 1}},
		{name: "two copies on one lost cluster: the first fails over, the other moves as another copy's would",
			in: SeveralInput{Placement: severalFailingOver(ordered, "2"), Clusters: []Cluster{down("eu-1", hour), up("eu-2", hour), up("eu-3", hour)},
				Current: []Copy{{Slot: 0, Cluster: "eu-1"}, {Slot: 1, Cluster: "eu-1"}}},
			want: []string{"0@eu-2<eu-1", "1@eu-3<eu-1"}, failedOver: []int{0}},
		{name: "no time given (an offline render): no failover",
			in: SeveralInput{Placement: severalFailingOver(ordered, "2"), Clusters: []Cluster{down("eu-1", hour), up("eu-2", hour), up("eu-3", hour)},
				Current: []Copy{{Slot: 0, Cluster: "eu-1"}, {Slot: 1, Cluster: "eu-2"}}},
			want: []string{"0@eu-1", "1@eu-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Namespace, tc.in.Name = "shop", "web"
			if !strings.HasPrefix(tc.name, "no time") {
				tc.in.Now = now
			}
			res := PlaceSeveral(tc.in)
			if !res.OK {
				t.Fatal("not placed")
			}
			if got := where(res.Copies); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("copies %v, want %v", got, tc.want)
			}
			if !reflect.DeepEqual(res.Removed, tc.removed) {
				t.Fatalf("removed %v, want %v", res.Removed, tc.removed)
			}
			var failedOver []int
			for _, c := range res.Copies {
				if c.FailedOver {
					failedOver = append(failedOver, c.Slot)
					if c.Silence < time.Minute || c.From == "" {
						t.Errorf("copy %d: from %q, silence %s", c.Slot, c.From, c.Silence)
					}
				}
			}
			if fmt.Sprint(failedOver) != fmt.Sprint(tc.failedOver) {
				t.Fatalf("failed over %v, want %v", failedOver, tc.failedOver)
			}
			if !res.RecheckAt.Equal(tc.recheck) {
				t.Fatalf("recheck %v, want %v", res.RecheckAt, tc.recheck)
			}
			chosen := 0
			for _, c := range res.Candidates {
				if c.Chosen {
					chosen++
				}
				if c.Why == "" {
					t.Errorf("candidate %s has no why", c.Name)
				}
				if want, ok := tc.why[c.Name]; ok && !strings.Contains(c.Why, want) {
					t.Errorf("%s: %q, want it to say %q", c.Name, c.Why, want)
				}
			}
			if chosen != len(res.Copies) {
				t.Errorf("%d candidates chosen, %d copies", chosen, len(res.Copies))
			}
		})
	}
}

// One copy fails over as Place fails a Workload over: the same cluster, the same silence and
// the same recheck, under Spread for many Workloads and fleets.
func TestSeveralClustersFailoverOneCopyAsPlace(t *testing.T) {
	fleets := [][]Cluster{
		{down("eu-1", time.Hour), up("eu-2", time.Hour), up("eu-3", time.Hour), up("eu-4", time.Hour)},
		{down("eu-1", time.Hour), up("eu-2", time.Minute), up("eu-3", 2*time.Minute), down("eu-4", time.Hour)},
		{down("eu-1", 10*time.Second), up("eu-2", time.Hour), up("eu-3", time.Hour)},
	}
	for f, fleet := range fleets {
		for i := range 40 {
			name := fmt.Sprintf("web-%d", i)
			for _, current := range []string{"eu-1", "eu-2", "eu-3"} {
				one := Place(Input{Placement: failingOver(""), Clusters: fleet, Current: current, Namespace: "shop", Name: name, Now: now})
				res := PlaceSeveral(SeveralInput{Placement: severalFailingOver("", "1"), Clusters: fleet, Current: []Copy{{Cluster: current}}, Namespace: "shop", Name: name, Now: now})
				if len(res.Copies) != 1 {
					t.Fatalf("fleet %d, %s on %s: copies %v", f, name, current, where(res.Copies))
				}
				c := res.Copies[0]
				if c.Cluster != one.Cluster || c.FailedOver != one.FailedOver || c.Silence != one.Silence || !res.RecheckAt.Equal(one.RecheckAt) {
					t.Fatalf("fleet %d, %s on %s: copy %+v recheck %v; Place %s failed over %v (%s) recheck %v",
						f, name, current, c, res.RecheckAt, one.Cluster, one.FailedOver, one.Silence, one.RecheckAt)
				}
			}
		}
	}
}
