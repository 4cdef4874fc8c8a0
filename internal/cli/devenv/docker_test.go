package devenv

import (
	"os"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// The docker backend goes first in web-service, once, for the namespaces given, and the config
// still validates.
func TestAddDockerBackend(t *testing.T) {
	doc := map[string]any{}
	raw := `apiVersion: score.dev/v1b1
kind: OrchestratorConfig
allowMutableRefs: true
profiles:
  - name: web-service
    backends:
      - {backendId: k8s-web, runtimeClass: kubernetes, version: 1.0.0, template: {kind: manifests, ref: "configmap://score-system/t/web.yaml"}}
`
	if err := yaml.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := AddDockerBackend(doc, "docker-web", "shop"); err != nil {
			t.Fatal(err)
		}
	}
	out, _ := yaml.Marshal(doc)
	cfg, err := orchconfig.Parse(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	backends := cfg.Profiles[0].Backends
	if len(backends) != 2 || backends[0].BackendID != "docker-web" || backends[0].RuntimeClass != "docker" || backends[0].Constraints.Selectors[0].Namespaces[0] != "shop" {
		t.Errorf("backends %+v", backends)
	}
	if err := AddDockerBackend(map[string]any{}, "docker-web", "shop"); err == nil {
		t.Error("a config without web-service took the backend")
	}
}

// The Docker hosts' catalog joins the development config once, and the config still
// validates with it.
func TestAddDockerCatalog(t *testing.T) {
	assembled, err := orchconfig.DevelopmentConfig(os.DirFS("../../.."))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(assembled, &doc); err != nil {
		t.Fatal(err)
	}
	before := len(doc["provisioners"].([]any))
	for range 2 {
		if err := AddDockerCatalog(doc, os.DirFS("../../..")); err != nil {
			t.Fatal(err)
		}
	}
	if added := len(doc["provisioners"].([]any)) - before; added != 3 {
		t.Fatalf("%d definitions added, want the catalog's 3, once", added)
	}
	out, _ := yaml.Marshal(doc)
	if _, err := orchconfig.Parse(out); err != nil {
		t.Fatal(err)
	}
}
