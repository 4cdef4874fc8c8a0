package orchconfig

import (
	"reflect"
	"strings"
	"testing"
)

// placed is a valid placement on env=prod clusters with the given overrides.
func placed(overrides ...Override) func(*Config) {
	return func(c *Config) {
		c.Profiles[0].Backends[0].Placement = &Placement{
			ClusterSelector: Selector{MatchLabels: map[string]string{"env": "prod"}},
			Overrides:       overrides,
		}
	}
}

func region(r string) Selector { return Selector{MatchLabels: map[string]string{"region": r}} }

func TestClusterOverridesValidation(t *testing.T) {
	const path = "profiles[0].backends[0].placement.overrides[0]"
	values := map[string]any{"replicas": 3}
	cases := []validationCase{
		{"an override by region", placed(Override{ClusterSelector: region("eu"), Values: values}), "", ""},
		{"an override by expression", placed(Override{ClusterSelector: Selector{MatchExpressions: []SelectorRequirement{{Key: "tier", Operator: "In", Values: []string{"gold"}}}}, Values: values}), "", ""},
		{"an override the placement agrees with", placed(Override{ClusterSelector: Selector{MatchLabels: map[string]string{"env": "prod", "region": "eu"}}, Values: values}), "", ""},
		{"an empty selector", placed(Override{Values: values}), path + ".clusterSelector", "values for every cluster belong in template.values"},
		{"a selector by namespace", placed(Override{ClusterSelector: Selector{Namespaces: []string{"team-a"}}, Values: values}), path + ".clusterSelector.namespaces", "cluster labels only"},
		{"a bad label key", placed(Override{ClusterSelector: Selector{MatchLabels: map[string]string{"-bad": "x"}}, Values: values}), path + ".clusterSelector.matchLabels", "label key"},
		{"a bad operator", placed(Override{ClusterSelector: Selector{MatchExpressions: []SelectorRequirement{{Key: "tier", Operator: "Near"}}}, Values: values}), path + ".clusterSelector.matchExpressions[0].operator", "not an operator"},
		{"a selector the placement never chooses", placed(Override{ClusterSelector: Selector{MatchLabels: map[string]string{"env": "dev"}}, Values: values}), path + ".clusterSelector.matchLabels.env", "can never match"},
		{"no values", placed(Override{ClusterSelector: region("eu")}), path + ".values", "needs values"},
		{"values larger than a plan", placed(Override{ClusterSelector: region("eu"), Values: map[string]any{"blob": strings.Repeat("x", 1<<20)}}), path + ".values", "more than a plan may hold"},
	}
	checkValidation(t, cases)
}

func TestClusterOverridesFor(t *testing.T) {
	eu := map[string]any{"registry": "eu.mirror"}
	gold := map[string]any{"replicas": 5}
	p := &Placement{
		ClusterSelector: Selector{MatchLabels: map[string]string{"env": "prod"}},
		Overrides: []Override{
			{ClusterSelector: region("eu"), Values: eu},
			{ClusterSelector: Selector{MatchExpressions: []SelectorRequirement{{Key: "tier", Operator: "Exists"}}}, Values: gold},
			{ClusterSelector: Selector{MatchExpressions: []SelectorRequirement{{Key: "tier", Operator: "DoesNotExist"}}}, Values: map[string]any{"replicas": 1}},
		},
	}
	cases := []struct {
		name   string
		p      *Placement
		labels map[string]string
		placed bool
		want   []map[string]any
	}{
		{"no placement", nil, map[string]string{"region": "eu"}, true, nil},
		{"the hub, whose empty labels a DoesNotExist would match", p, nil, false, nil},
		{"one match", p, map[string]string{"env": "prod", "region": "us"}, true, []map[string]any{{"replicas": 1}}},
		{"several, in list order", p, map[string]string{"env": "prod", "region": "eu", "tier": "gold"}, true, []map[string]any{eu, gold}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.OverridesFor(tc.labels, tc.placed); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
