package orchconfig

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestSeveralClustersValidation(t *testing.T) {
	const path = "profiles[0].backends[0].placement.clusters"
	cases := []struct {
		clusters string
		wantErr  bool
		n        int
		all      bool
	}{
		{"", false, 1, false},
		{"1", false, 1, false},
		{"2", false, 2, false},
		{"100", false, 100, false},
		{"All", false, 0, true},
		{"0", true, 0, false},
		{"-1", true, 0, false},
		{"101", true, 0, false},
		{"02", true, 0, false},
		{"all", true, 0, false},
		{"2.5", true, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.clusters, func(t *testing.T) {
			cfg := validConfig()
			placed()(cfg)
			p := cfg.Profiles[0].Backends[0].Placement
			p.Clusters = tc.clusters
			errs := Validate(cfg)
			found := false
			for _, e := range errs {
				found = found || e.Path == path && strings.Contains(e.Message, "not a number of clusters")
			}
			if found != tc.wantErr || (!tc.wantErr && len(errs) > 0) {
				t.Fatalf("clusters %q: want error %v, got %v", tc.clusters, tc.wantErr, errs)
			}
			if tc.wantErr {
				return
			}
			if n, all := p.Copies(); n != tc.n || all != tc.all {
				t.Fatalf("Copies() = %d, %v; want %d, %v", n, all, tc.n, tc.all)
			}
		})
	}
}

func TestSeveralClustersParsesANumberOrAll(t *testing.T) {
	for _, v := range []string{"2", "All"} {
		var p Placement
		dec := yaml.NewDecoder(strings.NewReader("clusterSelector: {matchLabels: {env: prod}}\nclusters: " + v + "\n"))
		dec.KnownFields(true)
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("clusters: %s: %v", v, err)
		}
		if p.Clusters != v {
			t.Fatalf("clusters: %s parsed as %q", v, p.Clusters)
		}
	}
}
