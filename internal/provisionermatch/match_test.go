package provisionermatch

import (
	"testing"

	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
)

func p(uri, typ string, class, id *string, match map[string]any) orchconfig.Provisioner {
	return orchconfig.Provisioner{URI: uri, Type: typ, Class: class, ID: id, MatchParams: match}
}

func s(v string) *string { return &v }

func TestMatch(t *testing.T) {
	provs := []orchconfig.Provisioner{
		p("template://any-pg", "postgres", nil, nil, nil),
		p("template://aws-pg", "postgres", nil, nil, map[string]any{"provider": "aws"}),
		p("template://aws-pg-large", "postgres", nil, nil, map[string]any{"provider": "aws", "size": "large"}),
		p("template://pg-ha", "postgres", s("ha"), nil, nil),
		p("template://pg-shared", "postgres", nil, s("main"), nil),
		p("template://redis", "redis", nil, nil, nil),
		p("template://redis-second", "redis", nil, nil, nil),
		p("template://num", "queue", nil, nil, map[string]any{"partitions": 3}),
	}
	cases := []struct {
		name string
		c    Claim
		want string
	}{
		{"no params: the one without matchParams", Claim{Type: "postgres"}, "template://any-pg"},
		{"subset match beats none", Claim{Type: "postgres", Params: map[string]any{"provider": "aws", "size": "small"}}, "template://aws-pg"},
		{"exact match beats subset", Claim{Type: "postgres", Params: map[string]any{"provider": "aws", "size": "large"}}, "template://aws-pg-large"},
		{"exact match on one key", Claim{Type: "postgres", Params: map[string]any{"provider": "aws"}}, "template://aws-pg"},
		{"other params fall back", Claim{Type: "postgres", Params: map[string]any{"provider": "gcp"}}, "template://any-pg"},
		{"class-specific definitions need the class", Claim{Type: "postgres", Class: "ha"}, "template://any-pg"},
		{"first match in document order", Claim{Type: "redis"}, "template://redis"},
		{"unknown type", Claim{Type: "mongodb"}, ""},
		{"numbers compare across YAML and JSON", Claim{Type: "queue", Params: map[string]any{"partitions": float64(3)}}, "template://num"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			i := Match(provs, tc.c)
			got := ""
			if i >= 0 {
				got = provs[i].URI
			}
			if got != tc.want {
				t.Fatalf("want %q, got %q", tc.want, got)
			}
		})
	}
	// The first definition of a class wins over a later classless one only when it comes first.
	ordered := []orchconfig.Provisioner{p("template://ha", "postgres", s("ha"), nil, nil), p("template://any", "postgres", nil, nil, nil)}
	if i := Match(ordered, Claim{Type: "postgres", Class: "ha"}); ordered[i].URI != "template://ha" {
		t.Fatalf("got %s", ordered[i].URI)
	}
}
