package placement

import (
	"fmt"
	"testing"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

func eu(policy string) *orchconfig.Placement {
	return &orchconfig.Placement{ClusterSelector: orchconfig.Selector{MatchLabels: map[string]string{"region": "eu"}}, Policy: policy}
}

var fleet = []Cluster{
	{Name: "us-1", Labels: map[string]string{"region": "us"}},
	{Name: "eu-2", Labels: map[string]string{"region": "eu"}},
	{Name: "eu-1", Labels: map[string]string{"region": "eu"}},
}

func TestPlace(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        Input
		ok        bool
		cluster   string
		moved     bool
		anyOf     []string
		unmatched string
	}{
		{name: "no placement is the hub", in: Input{Clusters: fleet}, ok: true, cluster: ""},
		{name: "ordered takes the first by name", in: Input{Placement: eu(orchconfig.PlacementOrdered), Clusters: fleet, Name: "web"}, ok: true, cluster: "eu-1", unmatched: "us-1"},
		{name: "spread takes a matching cluster", in: Input{Placement: eu(""), Clusters: fleet, Namespace: "shop", Name: "web"}, ok: true, anyOf: []string{"eu-1", "eu-2"}},
		{name: "the current cluster is kept while it matches", in: Input{Placement: eu(orchconfig.PlacementOrdered), Clusters: fleet, Current: "eu-2"}, ok: true, cluster: "eu-2"},
		{name: "a cluster that stops matching is left", in: Input{Placement: eu(orchconfig.PlacementOrdered), Clusters: fleet, Current: "us-1"}, ok: true, cluster: "eu-1", moved: true},
		{name: "a cluster no longer registered is left", in: Input{Placement: eu(orchconfig.PlacementOrdered), Clusters: fleet, Current: "eu-9"}, ok: true, cluster: "eu-1", moved: true},
		{name: "nothing matches", in: Input{Placement: eu(""), Clusters: fleet[:1], Current: "us-1"}, ok: false},
		{name: "no cluster registered", in: Input{Placement: eu("")}, ok: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Place(tc.in)
			if res.OK != tc.ok || res.Moved != tc.moved {
				t.Fatalf("ok, moved = %v, %v; want %v, %v (%+v)", res.OK, res.Moved, tc.ok, tc.moved, res)
			}
			switch {
			case tc.anyOf != nil:
				if res.Cluster != tc.anyOf[0] && res.Cluster != tc.anyOf[1] {
					t.Fatalf("cluster %q, want one of %v", res.Cluster, tc.anyOf)
				}
			case res.Cluster != tc.cluster:
				t.Fatalf("cluster %q, want %q", res.Cluster, tc.cluster)
			}
			chosen := 0
			for _, c := range res.Candidates {
				if c.Chosen {
					chosen++
					if c.Name != res.Cluster {
						t.Errorf("candidate %s chosen, result says %s", c.Name, res.Cluster)
					}
				}
				if c.Why == "" {
					t.Errorf("candidate %s has no reason", c.Name)
				}
				if c.Name == tc.unmatched && c.Matches {
					t.Errorf("%s matches", c.Name)
				}
			}
			if tc.ok && tc.in.Placement != nil && chosen != 1 {
				t.Errorf("%d candidates chosen", chosen)
			}
			// The chosen cluster's labels come with it: the backend's overrides match them.
			for _, c := range tc.in.Clusters {
				if c.Name == res.Cluster && res.Labels["region"] != c.Labels["region"] {
					t.Errorf("labels %v, want %s's %v", res.Labels, c.Name, c.Labels)
				}
			}
			if res.Cluster == "" && res.Labels != nil {
				t.Errorf("the hub has no labels, got %v", res.Labels)
			}
		})
	}
}

// Spread is deterministic whatever the order clusters are listed in, spreads Workloads over
// the candidates, and a new cluster takes Workloads only to itself.
func TestSpread(t *testing.T) {
	reversed := []Cluster{fleet[2], fleet[1], fleet[0]}
	before := map[string]string{}
	count := map[string]int{}
	for i := 0; i < 300; i++ {
		name := fmt.Sprintf("app-%d", i)
		a := Place(Input{Placement: eu(""), Clusters: fleet, Namespace: "ns", Name: name})
		b := Place(Input{Placement: eu(""), Clusters: reversed, Namespace: "ns", Name: name})
		if a.Cluster != b.Cluster {
			t.Fatalf("%s: %s listed one way, %s the other", name, a.Cluster, b.Cluster)
		}
		before[name] = a.Cluster
		count[a.Cluster]++
	}
	if count["eu-1"] < 100 || count["eu-2"] < 100 {
		t.Fatalf("uneven spread over two clusters: %v", count)
	}
	grown := append(append([]Cluster(nil), fleet...), Cluster{Name: "eu-3", Labels: map[string]string{"region": "eu"}})
	for name, was := range before {
		if now := Place(Input{Placement: eu(""), Clusters: grown, Namespace: "ns", Name: name}).Cluster; now != was && now != "eu-3" {
			t.Fatalf("%s moved from %s to %s when eu-3 joined", name, was, now)
		}
	}
}

func TestSelectorString(t *testing.T) {
	s := orchconfig.Selector{MatchLabels: map[string]string{"tier": "gold", "env": "prod"}, MatchExpressions: []orchconfig.SelectorRequirement{
		{Key: "region", Operator: "In", Values: []string{"eu", "us"}}, {Key: "gpu", Operator: "Exists"}, {Key: "legacy", Operator: "DoesNotExist"}}}
	if got, want := SelectorString(s), "env=prod,tier=gold,region in (eu,us),gpu,!legacy"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}
