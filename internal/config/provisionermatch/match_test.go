package provisionermatch

import (
	"reflect"
	"strings"
	"testing"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
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

const howToServe = " A platform engineer serves a new type by adding a provisioner definition (score-k8s's provisioner file format) to the Orchestrator Config's provisioners."

func TestClosest(t *testing.T) {
	served := []string{"amqp", "mongodb", "mysql", "postgres", "redis", "service", "service-port"}
	for typ, want := range map[string]string{
		"postgresql": "postgres", "Postgres": "postgres", "mongo": "mongodb", "reddis": "redis",
		"servce": "service", "service-ports": "service-port", "rabbitmq": "", "s3": "", "elasticsearch": "",
	} {
		if got := closest(typ, served); got != want {
			t.Errorf("closest(%q) = %q, want %q", typ, got, want)
		}
	}
}

func TestResolve(t *testing.T) {
	classes := []orchconfig.Class{
		{Type: "postgres", Name: "standard", Default: true, Params: map[string]any{"size": "small", "backup": map[string]any{"enabled": true, "days": 7}}},
		{Type: "postgres", Name: "ha", Params: map[string]any{"size": "large", "replicas": 3}, DeprovisionPolicy: "Retain"},
		{Type: "redis", Name: "cache"},
	}
	provs := []orchconfig.Provisioner{
		{URI: "template://pg-small", Type: "postgres", MatchParams: map[string]any{"size": "small"}, DeprovisionPolicy: "Orphan"},
		{URI: "template://pg-ha", Type: "postgres", Class: s("ha")},
		{URI: "template://pg", Type: "postgres"},
		{URI: "template://redis", Type: "redis"},
		{URI: "template://mq", Type: "amqp", DeprovisionPolicy: "Retain"},
	}
	cases := []struct {
		name        string
		claim       Claim
		wantURI     string
		wantClass   string
		wantParams  map[string]any
		wantPolicy  string
		wantMessage string
	}{
		{
			name:  "no class: the default class, its params routing on matchParams",
			claim: Claim{Type: "postgres"}, wantURI: "template://pg-small", wantClass: "standard",
			wantParams: map[string]any{"size": "small", "backup": map[string]any{"enabled": true, "days": 7}}, wantPolicy: "Orphan",
		},
		{
			name:  "the claim's params win, deep",
			claim: Claim{Type: "postgres", Params: map[string]any{"size": "medium", "backup": map[string]any{"days": 30}}}, wantURI: "template://pg", wantClass: "standard",
			wantParams: map[string]any{"size": "medium", "backup": map[string]any{"enabled": true, "days": 30}},
		},
		{
			name:  "a named class: its provisioner and its policy over the provisioner's",
			claim: Claim{Type: "postgres", Class: "ha"}, wantURI: "template://pg-ha", wantClass: "ha",
			wantParams: map[string]any{"size": "large", "replicas": 3}, wantPolicy: "Retain",
		},
		{
			name:        "an unknown class lists the type's classes",
			claim:       Claim{Type: "postgres", Class: "gold"},
			wantMessage: "Class gold is not a class of postgres. Available classes: ha, standard.",
		},
		{
			name:  "a type with classes but no default: no class, params as they are",
			claim: Claim{Type: "redis", Params: map[string]any{"x": 1}}, wantURI: "template://redis", wantParams: map[string]any{"x": 1},
		},
		{
			name:  "a type without classes passes any class through, as score-k8s does",
			claim: Claim{Type: "amqp", Class: "fast"}, wantURI: "template://mq", wantClass: "fast", wantPolicy: "Retain",
		},
		{
			name:        "no provisioner names the resolved class",
			claim:       Claim{Type: "mongodb"},
			wantMessage: "No provisioner serves mongodb. Available types: amqp, postgres, redis." + howToServe,
		},
		{
			name:        "a near miss names the closest served type",
			claim:       Claim{Type: "postgresql"},
			wantMessage: "No provisioner serves postgresql. Available types: amqp, postgres, redis. Did you mean postgres?" + howToServe,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, msg, ok := Resolve(Input{Classes: classes, Provisioners: provs, Claim: tc.claim})
			if tc.wantMessage != "" {
				if ok || msg != tc.wantMessage {
					t.Fatalf("want failure %q, got ok=%v %q", tc.wantMessage, ok, msg)
				}
				return
			}
			if !ok {
				t.Fatalf("unexpected failure: %s", msg)
			}
			if got := provs[res.Index].URI; got != tc.wantURI || res.Class != tc.wantClass || res.DeprovisionPolicy != tc.wantPolicy {
				t.Fatalf("got %s class %q policy %q", got, res.Class, res.DeprovisionPolicy)
			}
			if !reflect.DeepEqual(res.Params, tc.wantParams) {
				t.Fatalf("params %v, want %v", res.Params, tc.wantParams)
			}
		})
	}
	// The class's params are not modified by a merge.
	if classes[0].Params["size"] != "small" || classes[0].Params["backup"].(map[string]any)["days"] != 7 {
		t.Fatalf("a merge changed the class: %v", classes[0].Params)
	}
}

// A Docker Workload's claim is served by a Compose definition before any other, whatever
// their params; a Kubernetes Workload's never by one; score-compose's local-env:// by none.
func TestMatchByRuntime(t *testing.T) {
	k8s := p("template://k8s-pg", "postgres", nil, nil, map[string]any{"size": "large"})
	k8s.Manifests = "- {}"
	compose := p("template://compose-pg", "postgres", nil, nil, nil)
	compose.Services = "pg: {image: postgres}"
	env := p("local-env://env", "environment", nil, nil, nil)
	provs := []orchconfig.Provisioner{k8s, compose, env}
	large := map[string]any{"size": "large"}
	for _, tc := range []struct {
		claim Claim
		want  int
	}{
		{Claim{Type: "postgres", Params: large, RuntimeClass: "docker"}, 1},
		{Claim{Type: "postgres", Params: large}, 0},
		{Claim{Type: "postgres", Params: large, RuntimeClass: "kubernetes"}, 0},
		{Claim{Type: "environment", RuntimeClass: "docker"}, -1},
	} {
		if got := Match(provs, tc.claim); got != tc.want {
			t.Errorf("%+v: served by %d, want %d", tc.claim, got, tc.want)
		}
	}
	_, msg, _ := Resolve(Input{Provisioners: provs, Claim: Claim{Type: "environment"}})
	if !strings.Contains(msg, "local-env://") {
		t.Errorf("message %q does not say why local-env serves nothing", msg)
	}
}
