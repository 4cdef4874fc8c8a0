package planner

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// overridingBackend places on env=prod clusters, with overrides for region=eu (a registry
// mirror, tolerations, and later a replica count) and tier=gold (a replica count), and one
// that tries to rename the Workload and rewrite a dependency's output.
func overridingBackend(euReplicas int) orchconfig.Backend {
	sel := func(k, v string) orchconfig.Selector {
		return orchconfig.Selector{MatchLabels: map[string]string{k: v}}
	}
	return orchconfig.Backend{BackendID: "k8s-web", RuntimeClass: "kubernetes", Version: "1.0.0",
		Template: orchconfig.Template{Kind: "manifests", Ref: "configmap://score-system/t/web.yaml", Digest: "sha256:" + strings.Repeat("a", 64),
			Values: map[string]any{"replicas": 2, "image": map[string]any{"registry": "registry.example", "pullPolicy": "IfNotPresent"}, "tolerations": []any{"a", "b"}}},
		Placement: &orchconfig.Placement{
			ClusterSelector: sel("env", "prod"),
			Overrides: []orchconfig.Override{
				{ClusterSelector: sel("region", "eu"), Values: map[string]any{"image": map[string]any{"registry": "eu.mirror.example"}, "tolerations": []any{"c"}}},
				{ClusterSelector: sel("tier", "gold"), Values: map[string]any{"replicas": 5}},
				{ClusterSelector: sel("region", "eu"), Values: map[string]any{"replicas": euReplicas}},
				{ClusterSelector: sel("hostile", "yes"), Values: map[string]any{"workload": map[string]any{"name": "other"}, "resources": map[string]any{"db": map[string]any{"outputs": map[string]any{"host": "evil"}}}}},
			},
		},
	}
}

func TestClusterOverridesCompose(t *testing.T) {
	w := workload(withResource("db", "postgres", ""))
	claims := map[string]ClaimView{"db": ready("web-db-x", map[string]any{"host": "db.ns"})}
	cases := []struct {
		name    string
		cluster string
		labels  map[string]string
		want    map[string]any // top-level values checked
	}{
		{"the hub: the template's values", "", map[string]string{"region": "eu"}, map[string]any{
			"replicas": 2.0, "image": map[string]any{"registry": "registry.example", "pullPolicy": "IfNotPresent"}, "tolerations": []any{"a", "b"}}},
		{"a cluster no override matches", "us-1", map[string]string{"env": "prod", "region": "us"}, map[string]any{
			"replicas": 2.0, "image": map[string]any{"registry": "registry.example", "pullPolicy": "IfNotPresent"}, "tolerations": []any{"a", "b"}}},
		{"maps merge key by key, lists are replaced", "eu-1", map[string]string{"env": "prod", "region": "eu"}, map[string]any{
			"replicas": 4.0, "image": map[string]any{"registry": "eu.mirror.example", "pullPolicy": "IfNotPresent"}, "tolerations": []any{"c"}}},
		{"several match: in list order, the later wins", "eu-gold", map[string]string{"env": "prod", "region": "eu", "tier": "gold"}, map[string]any{
			"replicas": 4.0}},
		{"one match of two", "us-gold", map[string]string{"env": "prod", "region": "us", "tier": "gold"}, map[string]any{
			"replicas": 5.0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := BuildPlan(PlanInput{Workload: w, Profile: "web-service", Claims: claims, Backend: overridingBackend(4), Cluster: tc.cluster, ClusterLabels: tc.labels})
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			_ = json.Unmarshal(res.Spec.Values.Raw, &got)
			for k, want := range tc.want {
				if !reflect.DeepEqual(got[k], want) {
					t.Errorf("%s: got %v, want %v", k, got[k], want)
				}
			}
		})
	}
}

// An override is the backend's defaults for the cluster: the Workload's own values and its
// dependencies' outputs still win over it.
func TestClusterOverridesYieldToTheWorkloadAndOutputs(t *testing.T) {
	w := workload(withResource("db", "postgres", ""))
	claims := map[string]ClaimView{"db": ready("web-db-x", map[string]any{"host": "db.ns"})}
	res, err := BuildPlan(PlanInput{Workload: w, Profile: "web-service", Claims: claims, Backend: overridingBackend(4),
		Cluster: "eu-1", ClusterLabels: map[string]string{"env": "prod", "hostile": "yes"}})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	_ = json.Unmarshal(res.Spec.Values.Raw, &got)
	if name := got["workload"].(map[string]any)["name"]; name != "web" {
		t.Fatalf("the Workload's name must win over an override: %v", name)
	}
	if host := got["resources"].(map[string]any)["db"].(map[string]any)["outputs"].(map[string]any)["host"]; host != "db.ns" {
		t.Fatalf("an output must win over an override: %v", host)
	}
}

// A change of one override's values changes the plans placed on the clusters it matches, and
// no other: the others stay byte for byte the same, so the orchestrator writes nothing for them.
func TestClusterOverridesChangeOnlyMatchingPlans(t *testing.T) {
	w := workload()
	build := func(euReplicas int, cluster string, labels map[string]string) []byte {
		res, err := BuildPlan(PlanInput{Workload: w, Profile: "web-service", Backend: overridingBackend(euReplicas), Cluster: cluster, ClusterLabels: labels})
		if err != nil {
			t.Fatal(err)
		}
		return res.Spec.Values.Raw
	}
	eu := map[string]string{"env": "prod", "region": "eu"}
	us := map[string]string{"env": "prod", "region": "us"}
	if string(build(4, "eu-1", eu)) == string(build(7, "eu-1", eu)) {
		t.Fatal("the plan on a matching cluster must change")
	}
	if string(build(4, "us-1", us)) != string(build(7, "us-1", us)) {
		t.Fatal("the plan on another cluster must not change")
	}
	if string(build(4, "", nil)) != string(build(7, "", nil)) {
		t.Fatal("the plan on the hub must not change")
	}
}

// Overrides are spent from the plan's budget with the rest of its values: together over it,
// the plan is refused as any plan too large is.
func TestClusterOverridesKeepThePlanBudget(t *testing.T) {
	b := overridingBackend(4)
	big := strings.Repeat("x", 600<<10)
	b.Template.Values["a"] = big
	b.Placement.Overrides = append(b.Placement.Overrides, orchconfig.Override{
		ClusterSelector: orchconfig.Selector{MatchLabels: map[string]string{"region": "eu"}}, Values: map[string]any{"b": big}})
	if _, err := BuildPlan(PlanInput{Workload: workload(), Profile: "web-service", Backend: b, Cluster: "us-1", ClusterLabels: map[string]string{"region": "us"}}); err != nil {
		t.Fatalf("without the override the plan fits: %v", err)
	}
	if _, err := BuildPlan(PlanInput{Workload: workload(), Profile: "web-service", Backend: b, Cluster: "eu-1", ClusterLabels: map[string]string{"region": "eu"}}); err == nil {
		t.Fatal("with it the plan is over its budget and must be refused")
	}
}
