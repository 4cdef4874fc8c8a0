package offline

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/scorefile"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/placement"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/render"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/templates"
)

// devConfig is the sample config with the development catalog, as make dev assembles it.
func devConfig(t *testing.T) *orchconfig.Config {
	t.Helper()
	doc, err := orchconfig.DevelopmentConfig(os.DirFS("../../.."))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := orchconfig.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// score converts a Score document written as YAML into a Workload of namespace shop.
func score(t *testing.T, doc string) *scorev1b1.Workload {
	t.Helper()
	docs, err := scorefile.DecodeDocuments([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	res, err := scorefile.ToWorkload(docs[0], scorefile.Options{Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	res.Workload.Generation = 1
	return res.Workload
}

func run(t *testing.T, cfg *orchconfig.Config, workloads ...*scorev1b1.Workload) ([]Result, error) {
	t.Helper()
	return Run(context.Background(), Input{Workloads: workloads, Config: cfg, Template: func(ref scorev1b1.TemplateRef) (render.Template, error) {
		return templates.FromDir(context.Background(), ref, "../../../config/templates", nil)
	}})
}

const (
	backend = `
apiVersion: score.dev/v1b1
metadata: {name: backend}
containers: {main: {image: ghcr.io/example/backend:1}}
service: {ports: {grpc: {port: 50051}, http: {port: 8080}}}`
	frontend = `
apiVersion: score.dev/v1b1
metadata: {name: frontend}
containers: {main: {image: ghcr.io/example/frontend:1, variables: {BACKEND: "${resources.backend.host}:${resources.backend.port}"}}}
service: {ports: {web: {port: 80}}}
resources: {backend: {type: service}}`
)

// An app renders as a whole: a Workload's service dependency reads the other Workload of the
// same render, and its outputs reach the plan.
func TestAnAppRendersTogether(t *testing.T) {
	results, err := run(t, devConfig(t), score(t, frontend), score(t, backend))
	if err != nil {
		t.Fatal(err)
	}
	front := results[0].Copies[0]
	if results[0].Workload.Name != "frontend" || len(results[0].Copies) != 1 || len(front.Claims) != 1 {
		t.Fatalf("results %+v", front)
	}
	if out := front.Claims[0].Outputs; out["host"] != "backend.shop.svc.cluster.local" || out["port"] != 8080 {
		t.Fatalf("the service dependency's outputs: %v", out)
	}
	dep := byKind(front.Objects, "Deployment")
	if dep == nil || !strings.Contains(mustJSON(t, dep.Object), `"value":"backend.shop.svc.cluster.local:8080"`) {
		t.Fatalf("the frontend's Deployment does not reach the backend: %v", dep)
	}
	if dep.GetNamespace() != "shop" || dep.GetAnnotations()[scorev1b1.AnnotationWorkloadUID] != "<uid of Workload shop/frontend>" || len(dep.GetOwnerReferences()) != 1 {
		t.Fatalf("the Deployment is not prepared as the applier prepares it: %v", dep.Object["metadata"])
	}
}

// Rendered alone, the frontend says what its dependency waits for and what to do, and the
// other Workloads of the render still render.
func TestAMissingWorkloadIsNamed(t *testing.T) {
	results, err := run(t, devConfig(t), score(t, frontend), score(t, `
apiVersion: score.dev/v1b1
metadata: {name: other}
containers: {main: {image: nginx}}`))
	if err == nil || !strings.Contains(err.Error(), "workload shop/frontend: resource backend: provisioner template://score-dev/service is waiting for workload backend to be deployed in namespace shop; render the Score file of what it waits for together with this one") {
		t.Fatalf("error %v", err)
	}
	if len(results) != 2 || results[0].Err == nil || results[1].Err != nil || len(results[1].Copies[0].Objects) == 0 {
		t.Fatalf("the other Workload does not render: %+v", results)
	}
}

// What only the cluster knows renders as a reference, not a failure: a platform Secret's value
// (the catalog's environment type), and a command provisioner's outputs.
func TestWhatOnlyTheClusterKnowsIsAReference(t *testing.T) {
	cfg := devConfig(t)
	cfg.Provisioners = append([]orchconfig.Provisioner{{URI: "cmd:///opt/provisioners/dns#team-dns", Type: "team-dns", ExpectedOutputs: []string{"host"}}}, cfg.Provisioners...)
	results, err := run(t, cfg, score(t, `
apiVersion: score.dev/v1b1
metadata: {name: envy}
containers: {main: {image: nginx, variables: {TOKEN: "${resources.env.API_TOKEN}", HOST: "${resources.dns.host}"}}}
resources: {env: {type: environment}, dns: {type: team-dns}}`))
	if err != nil {
		t.Fatal(err)
	}
	claims := map[string]Claim{}
	for _, c := range results[0].Copies[0].Claims {
		claims[c.Key] = c
	}
	if got := claims["dns"].Outputs["host"]; got != "<output host of cmd:///opt/provisioners/dns#team-dns, known in the cluster>" {
		t.Fatalf("the command's output: %v", got)
	}
	if keys := claims["env"].SecretKeys; len(keys) != 1 || keys[0] != "API_TOKEN" {
		t.Fatalf("the platform Secret's key is not a secret output: %v", keys)
	}
}

func byKind(objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	return nil
}

func mustJSON(t *testing.T, v map[string]any) string {
	t.Helper()
	b, err := (&unstructured.Unstructured{Object: v}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// placeAll places every backend on env=prod clusters, with three replicas on region=eu.
func placeAll(cfg *orchconfig.Config) {
	for i := range cfg.Profiles {
		for j := range cfg.Profiles[i].Backends {
			cfg.Profiles[i].Backends[j].Placement = &orchconfig.Placement{
				ClusterSelector: orchconfig.Selector{MatchLabels: map[string]string{"env": "prod"}},
				Overrides: []orchconfig.Override{{ClusterSelector: orchconfig.Selector{MatchLabels: map[string]string{"region": "eu"}},
					Values: map[string]any{"replicas": 3}}},
			}
		}
	}
}

// The offline pipeline places as the orchestrator does, among the members it is given, and
// composes the values the chosen cluster gets: the Deployment on an eu cluster carries the
// override, on another cluster it does not; with no member that matches, the Workload fails
// naming each cluster's reason; with no members given, placement is not decided.
func TestClusterOverridesOffline(t *testing.T) {
	cfg := devConfig(t)
	placeAll(cfg)
	eu := []placement.Cluster{{Name: "eu-1", Labels: map[string]string{"env": "prod", "region": "eu"}}}
	us := []placement.Cluster{{Name: "us-1", Labels: map[string]string{"env": "prod", "region": "us"}}}
	dev := []placement.Cluster{{Name: "dev-1", Labels: map[string]string{"env": "dev"}}}
	cases := []struct {
		name     string
		members  []placement.Cluster
		placed   func(namespace, name string) []placement.Copy
		cluster  string
		replicas int64
		err      string
	}{
		{name: "on an eu cluster", members: eu, cluster: "eu-1", replicas: 3},
		{name: "on a us cluster", members: us, cluster: "us-1", replicas: 1},
		{name: "kept where it runs while it matches", members: append(append([]placement.Cluster{}, eu...), us...),
			placed: func(string, string) []placement.Copy { return []placement.Copy{{Cluster: "us-1"}} }, cluster: "us-1", replicas: 1},
		{name: "no member matches", members: dev, err: "placement: backend k8s-web-v2 places on clusters matching env=prod, and no cluster given does; dev-1: Its labels (env=dev) do not match the selector."},
		{name: "no members: not decided", members: nil, cluster: "", replicas: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			results, err := Run(context.Background(), Input{Workloads: []*scorev1b1.Workload{score(t, backend)}, Config: cfg, Members: tc.members, Placed: tc.placed,
				Template: func(ref scorev1b1.TemplateRef) (render.Template, error) {
					return templates.FromDir(context.Background(), ref, "../../../config/templates", nil)
				}})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(results[0].Copies) != 1 {
				t.Fatalf("%d copies, want 1", len(results[0].Copies))
			}
			res := results[0].Copies[0]
			if res.Plan.Spec.Cluster != tc.cluster || res.Cluster != tc.cluster {
				t.Fatalf("placed on %q, want %q", res.Plan.Spec.Cluster, tc.cluster)
			}
			replicas, _, _ := unstructured.NestedInt64(byKind(res.Objects, "Deployment").Object, "spec", "replicas")
			if replicas != tc.replicas {
				t.Fatalf("replicas %d, want %d", replicas, tc.replicas)
			}
		})
	}
}

// Every copy renders: a backend on two clusters gives two copies, in placement order, each
// with its plan (the Workload's name, then NAME.1), its claims named after its slot with an
// instance of its own cluster, and its cluster's overrides; without members, as many copies
// as asked for, on no cluster.
func TestEveryCopyRenders(t *testing.T) {
	cfg := devConfig(t)
	placeAll(cfg)
	for i := range cfg.Profiles {
		for j := range cfg.Profiles[i].Backends {
			cfg.Profiles[i].Backends[j].Placement.Clusters = "2"
		}
	}
	members := []placement.Cluster{{Name: "eu-1", Labels: map[string]string{"env": "prod", "region": "eu"}}, {Name: "us-1", Labels: map[string]string{"env": "prod", "region": "us"}}}
	db := score(t, `
apiVersion: score.dev/v1b1
metadata: {name: web}
containers: {main: {image: nginx, variables: {DB: "${resources.db.host}"}}}
service: {ports: {web: {port: 80}}}
resources: {db: {type: postgres}}`)
	run := func(members []placement.Cluster) Result {
		t.Helper()
		results, err := Run(context.Background(), Input{Workloads: []*scorev1b1.Workload{db}, Config: cfg, Members: members,
			Template: func(ref scorev1b1.TemplateRef) (render.Template, error) {
				return templates.FromDir(context.Background(), ref, "../../../config/templates", nil)
			}})
		if err != nil {
			t.Fatal(err)
		}
		return results[0]
	}
	res := run(members)
	if len(res.Copies) != 2 {
		t.Fatalf("%d copies, want 2", len(res.Copies))
	}
	replicas := map[string]int64{}
	plans := map[string]string{}
	instances := map[string]bool{}
	for _, c := range res.Copies {
		if c.Plan.Spec.Cluster != c.Cluster || len(c.Claims) != 1 || c.Claims[0].Spec.Cluster != c.Cluster {
			t.Fatalf("copy %d on %s: plan on %s, claims %+v", c.Slot, c.Cluster, c.Plan.Spec.Cluster, c.Claims)
		}
		if strings.HasSuffix(c.Claims[0].Name, ".1") != (c.Slot == 1) {
			t.Fatalf("copy %d's claim %s", c.Slot, c.Claims[0].Name)
		}
		plans[c.Cluster] = c.Plan.Name
		instances[c.Claims[0].Instance] = true
		replicas[c.Cluster], _, _ = unstructured.NestedInt64(byKind(c.Objects, "Deployment").Object, "spec", "replicas")
	}
	if replicas["eu-1"] != 3 || replicas["us-1"] != 1 {
		t.Fatalf("replicas %v, want eu-1's override only", replicas)
	}
	if names := []string{plans["eu-1"], plans["us-1"]}; !slices.Contains(names, "web") || !slices.Contains(names, "web.1") {
		t.Fatalf("plans %v", plans)
	}
	if len(instances) != 2 {
		t.Fatalf("the copies share an instance: %v", instances)
	}

	undecided := run(nil)
	if len(undecided.Copies) != 2 || undecided.Copies[0].Cluster != "" || undecided.Copies[1].Plan.Name != "web.1" {
		t.Fatalf("without members: %+v", undecided.Copies)
	}
}
