package placement

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

func several(policy, clusters string) *orchconfig.Placement {
	p := eu(policy)
	p.Clusters = clusters
	return p
}

var edge = []Cluster{
	{Name: "us-1", Labels: map[string]string{"region": "us"}},
	{Name: "eu-3", Labels: map[string]string{"region": "eu"}},
	{Name: "eu-2", Labels: map[string]string{"region": "eu"}},
	{Name: "eu-1", Labels: map[string]string{"region": "eu"}},
}

// where writes copies as slot@cluster (and <from when moved), in placement order.
func where(copies []Copy) []string {
	out := []string{}
	for _, c := range copies {
		s := fmt.Sprintf("%d@%s", c.Slot, c.Cluster)
		if c.From != "" {
			s += "<" + c.From
		}
		out = append(out, s)
	}
	return out
}

func TestSeveralClustersPlacement(t *testing.T) {
	ordered := orchconfig.PlacementOrdered
	for _, tc := range []struct {
		name    string
		in      SeveralInput
		ok      bool
		want    []string
		removed []int
	}{
		{name: "ordered takes the first N by name", in: SeveralInput{Placement: several(ordered, "2"), Clusters: edge}, ok: true, want: []string{"0@eu-1", "1@eu-2"}},
		{name: "All takes every match", in: SeveralInput{Placement: several(ordered, "All"), Clusters: edge}, ok: true, want: []string{"0@eu-1", "1@eu-2", "2@eu-3"}},
		{name: "more asked for than match: every match", in: SeveralInput{Placement: several(ordered, "5"), Clusters: edge}, ok: true, want: []string{"0@eu-1", "1@eu-2", "2@eu-3"}},
		{name: "copies stay where they are while they match", in: SeveralInput{Placement: several(ordered, "2"), Clusters: edge,
			Current: []Copy{{Slot: 0, Cluster: "eu-3"}, {Slot: 1, Cluster: "eu-2"}}}, ok: true, want: []string{"1@eu-2", "0@eu-3"}},
		{name: "a new matching cluster gets a copy under All, in the lowest free slot", in: SeveralInput{Placement: several(ordered, "All"), Clusters: edge,
			Current: []Copy{{Slot: 0, Cluster: "eu-2"}, {Slot: 2, Cluster: "eu-3"}}}, ok: true, want: []string{"1@eu-1", "0@eu-2", "2@eu-3"}},
		{name: "a cluster that stops matching under All loses its copy, the others stay", in: SeveralInput{Placement: several(ordered, "All"), Clusters: edge,
			Current: []Copy{{Slot: 0, Cluster: "eu-1"}, {Slot: 1, Cluster: "eu-2"}, {Slot: 2, Cluster: "eu-3"}, {Slot: 3, Cluster: "us-1"}}}, ok: true,
			want: []string{"0@eu-1", "1@eu-2", "2@eu-3"}, removed: []int{3}},
		{name: "a copy whose cluster stops matching moves to a free one", in: SeveralInput{Placement: several(ordered, "2"), Clusters: edge,
			Current: []Copy{{Slot: 0, Cluster: "us-1"}, {Slot: 1, Cluster: "eu-1"}}}, ok: true, want: []string{"1@eu-1", "0@eu-2<us-1"}},
		{name: "a copy whose cluster is no longer registered moves", in: SeveralInput{Placement: several(ordered, "2"), Clusters: edge,
			Current: []Copy{{Slot: 0, Cluster: "eu-1"}, {Slot: 1, Cluster: "eu-9"}}}, ok: true, want: []string{"0@eu-1", "1@eu-2<eu-9"}},
		{name: "with no free cluster a copy that stops matching is removed", in: SeveralInput{Placement: several(ordered, "3"), Clusters: edge[:3],
			Current: []Copy{{Slot: 0, Cluster: "eu-3"}, {Slot: 1, Cluster: "eu-2"}, {Slot: 2, Cluster: "eu-1"}}}, ok: true,
			want: []string{"1@eu-2", "0@eu-3"}, removed: []int{2}},
		{name: "fewer copies asked for: the highest slots are removed", in: SeveralInput{Placement: several(ordered, "1"), Clusters: edge,
			Current: []Copy{{Slot: 0, Cluster: "eu-3"}, {Slot: 1, Cluster: "eu-1"}}}, ok: true, want: []string{"0@eu-3"}, removed: []int{1}},
		{name: "no copy where another holds objects", in: SeveralInput{Placement: several(ordered, "2"), Clusters: edge,
			Current: []Copy{{Slot: 0, Cluster: "eu-2"}}, Held: map[string][]int{"eu-1": {1}, "eu-2": {0}}}, ok: true, want: []string{"0@eu-2", "2@eu-3"}},
		{name: "a copy moves back where it holds objects itself", in: SeveralInput{Placement: several(ordered, "1"), Clusters: edge,
			Current: []Copy{{Slot: 0, Cluster: "us-1"}}, Held: map[string][]int{"eu-1": {0}, "us-1": {0}}}, ok: true, want: []string{"0@eu-1<us-1"}},
		{name: "two copies never share a cluster", in: SeveralInput{Placement: several(ordered, "2"), Clusters: edge,
			Current: []Copy{{Slot: 0, Cluster: "eu-1"}, {Slot: 1, Cluster: "eu-1"}}}, ok: true, want: []string{"0@eu-1", "1@eu-2<eu-1"}},
		{name: "nothing matches: nothing changes", in: SeveralInput{Placement: several(ordered, "All"), Clusters: edge[:1],
			Current: []Copy{{Slot: 0, Cluster: "eu-1"}, {Slot: 1, Cluster: "eu-2"}}}, ok: false, want: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Namespace, tc.in.Name = "shop", "web"
			res := PlaceSeveral(tc.in)
			if res.OK != tc.ok {
				t.Fatalf("ok = %v, want %v", res.OK, tc.ok)
			}
			if got := where(res.Copies); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("copies %v, want %v", got, tc.want)
			}
			if !reflect.DeepEqual(res.Removed, tc.removed) {
				t.Fatalf("removed %v, want %v", res.Removed, tc.removed)
			}
			chosen := 0
			for _, c := range res.Candidates {
				if c.Chosen {
					chosen++
				}
				if c.Why == "" && (c.Matches || !c.Chosen) && tc.ok {
					t.Errorf("candidate %s has no why", c.Name)
				}
			}
			if chosen != len(res.Copies) {
				t.Errorf("%d candidates chosen, %d copies", chosen, len(res.Copies))
			}
		})
	}
}

// Spread ranks by rendezvous weight: its first copy is the cluster Place chooses, and a
// new cluster takes a copy only from the Workloads whose first N it enters.
func TestSeveralClustersSpreadRanksAsPlace(t *testing.T) {
	for i := 0; i < 50; i++ {
		name := fmt.Sprintf("web-%d", i)
		one := Place(Input{Placement: eu(""), Clusters: edge, Namespace: "shop", Name: name})
		res := PlaceSeveral(SeveralInput{Placement: several("", "2"), Clusters: edge, Namespace: "shop", Name: name})
		if len(res.Copies) != 2 || res.Copies[0].Cluster != one.Cluster {
			t.Fatalf("%s: copies %v, Place chose %s", name, where(res.Copies), one.Cluster)
		}
		if res.Copies[0].Cluster == res.Copies[1].Cluster {
			t.Fatalf("%s: two copies on %s", name, res.Copies[0].Cluster)
		}
		// Stable: placed again from where they are, nothing moves.
		again := PlaceSeveral(SeveralInput{Placement: several("", "2"), Clusters: edge, Namespace: "shop", Name: name, Current: res.Copies})
		if !reflect.DeepEqual(where(again.Copies), where(res.Copies)) || len(again.Removed) > 0 {
			t.Fatalf("%s: placed again %v, was %v", name, where(again.Copies), where(res.Copies))
		}
	}
}
