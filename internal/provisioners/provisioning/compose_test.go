package provisioning

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/config/provisionermatch"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/compose"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/conformance"
)

// composeConfig is a config whose provisioners are score-compose's file, unchanged, beside a
// docker backend.
func composeConfig(t *testing.T, file string) *orchconfig.Config {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var provs []any
	if err := yaml.Unmarshal(data, &provs); err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{
		"apiVersion": "score.dev/v1b1", "kind": "OrchestratorConfig",
		"profiles":     []any{map[string]any{"name": "p", "backends": []any{map[string]any{"backendId": "b", "runtimeClass": "docker", "version": "1.0.0", "template": map[string]any{"kind": "compose"}}}}},
		"provisioners": provs,
	}
	raw, _ := yaml.Marshal(doc)
	cfg, err := orchconfig.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// fragmentOf renders the definition serving a docker claim and reads the fragment its Secret
// carries.
func fragmentOf(t *testing.T, cfg *orchconfig.Config, id Identity, shared map[string]any) (Result, compose.Fragment) {
	t.Helper()
	served, msg, ok := provisionermatch.Resolve(provisionermatch.Input{Classes: cfg.Classes, Provisioners: cfg.Provisioners,
		Claim: provisionermatch.Claim{Type: id.Type, RuntimeClass: scorev1b1.RuntimeClassDocker}})
	if !ok {
		t.Fatal(msg)
	}
	r, err := RenderTemplates(cfg.Provisioners[served.Index], NewData(DataInput{Identity: id, Source: "orders", Shared: shared}))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Manifests) != 1 || r.Manifests[0]["kind"] != "Secret" {
		t.Fatalf("a compose definition leaves one Secret, got %v", r.Manifests)
	}
	data := r.Manifests[0]["data"].(map[string]any)[scorev1b1.ComposeFragmentKey].(string)
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		t.Fatal(err)
	}
	var f compose.Fragment
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	return r, f
}

// score-compose's default provisioner file loads unchanged, and its postgres, redis and
// volume render into fragments the Docker runtime runs: postgres's shared instance with its
// init service and the database's script, redis with its config file and data volume.
func TestComposeProvisionersLoad(t *testing.T) {
	conformance.Require(t)
	files, err := conformance.ComposeProvisionerFiles()
	if err != nil || len(files) == 0 {
		t.Fatalf("no score-compose provisioner files: %v", err)
	}
	cfg := composeConfig(t, files[0])

	r, pg := fragmentOf(t, cfg, NewIdentity("team", "orders", "db", "postgres", "", ""), nil)
	host := r.Outputs["host"].(string)
	if len(pg.Services) != 2 || pg.Services[host].Healthcheck == nil || pg.Services[host+"-init"].DependsOn[host] != compose.ServiceHealthy {
		t.Fatalf("postgres: %+v", pg.Services)
	}
	init := pg.Services[host+"-init"]
	if len(init.Mounts) != 1 || len(pg.FilesOf(init.Mounts[0])) != 1 || !strings.Contains(init.Command[1], "${POSTGRES_PASSWORD}") {
		t.Fatalf("the init service mounts the database's script and reads its password from its environment ($$ is a $): %+v", init)
	}
	if order, err := pg.Order(); err != nil || order[0] != host {
		t.Fatalf("postgres starts before its init: %v %v", order, err)
	}
	// A second database of the namespace joins the instance: its shared state names it.
	_, pg2 := fragmentOf(t, cfg, NewIdentity("team", "billing", "db", "postgres", "", ""), r.Shared)
	if err := pg.Merge(pg2); err != nil || len(pg.Services) != 2 || len(pg.FilesOf(init.Mounts[0])) != 2 {
		t.Fatalf("two databases are one instance with two scripts: %v %+v", err, pg.Files)
	}

	r, redis := fragmentOf(t, cfg, NewIdentity("team", "orders", "cache", "redis", "", ""), nil)
	svc := redis.Services[r.Outputs["host"].(string)]
	if len(svc.Mounts) != 2 || len(redis.Volumes) != 1 || len(redis.FilesOf(svc.Mounts[0])) != 1 {
		t.Fatalf("redis: %+v %+v", svc, redis)
	}

	r, vol := fragmentOf(t, cfg, NewIdentity("team", "orders", "data", "volume", "", ""), nil)
	if _, ok := vol.Volumes[r.Outputs["source"].(string)]; !ok || len(vol.Services) != 0 {
		t.Fatalf("volume: %+v %v", vol, r.Outputs)
	}

	// The same type for a Kubernetes Workload is not served by a Compose definition.
	_, msg, ok := provisionermatch.Resolve(provisionermatch.Input{Provisioners: cfg.Provisioners, Claim: provisionermatch.Claim{Type: "postgres"}})
	if ok || !strings.Contains(msg, "on the kubernetes runtime") {
		t.Fatalf("a kubernetes claim served by a compose definition: %v %q", ok, msg)
	}
}

// The Docker hosts' catalog (config/docker/provisioners.yaml, added to the development config
// with a Docker host) serves the Docker host's postgres, redis and volume claims, and no
// Kubernetes claim: each renders a
// fragment the Docker runtime runs, with every output it expects, and keeps its passwords out
// of its plain outputs.
func TestDockerCatalog(t *testing.T) {
	assembled, err := orchconfig.DevelopmentConfig(os.DirFS("../../.."))
	if err != nil {
		t.Fatal(err)
	}
	docker, err := os.ReadFile("../../../config/docker/provisioners.yaml")
	if err != nil {
		t.Fatal(err)
	}
	withDocker, err := orchconfig.AppendProvisioners(assembled, docker)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := orchconfig.Parse(withDocker)
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"postgres", "redis", "volume"} {
		t.Run(typ, func(t *testing.T) {
			id := NewIdentity("team", "orders", "dep", typ, "", "")
			served, msg, ok := provisionermatch.Resolve(provisionermatch.Input{Classes: cfg.Classes, Provisioners: cfg.Provisioners,
				Claim: provisionermatch.Claim{Type: typ, RuntimeClass: scorev1b1.RuntimeClassDocker}})
			if !ok || cfg.Provisioners[served.Index].URI != "template://score-dev-docker/"+typ {
				t.Fatalf("a docker claim of %s is served by %v (%s)", typ, served.Index, msg)
			}
			kube, _, _ := provisionermatch.Resolve(provisionermatch.Input{Classes: cfg.Classes, Provisioners: cfg.Provisioners, Claim: provisionermatch.Claim{Type: typ}})
			if cfg.Provisioners[kube.Index].EmitsCompose() {
				t.Fatalf("a kubernetes claim of %s is served by a Compose definition", typ)
			}
			def := cfg.Provisioners[served.Index]
			r, f := fragmentOf(t, cfg, id, nil)
			for _, k := range def.ExpectedOutputs {
				if _, ok := r.Outputs[k]; !ok {
					t.Errorf("no output %s", k)
				}
			}
			if slices.Contains(composeSecretOutputs(r.Outputs), "host") || typ != "volume" && !slices.Contains(composeSecretOutputs(r.Outputs), "password") {
				t.Errorf("secret outputs %v", composeSecretOutputs(r.Outputs))
			}
			if typ != "volume" {
				if order, err := f.Order(); err != nil || len(order) != 1 || f.Services[order[0]].Restart != "always" {
					t.Fatalf("one service that restarts: %v %v", order, err)
				}
			}
		})
	}
}
