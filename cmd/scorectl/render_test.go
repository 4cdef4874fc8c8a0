package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestRenderGolden(t *testing.T) {
	cfg := devConfig(t)
	examples, _ := filepath.Glob("../../examples/*/score.yaml")
	if len(examples) < 3 {
		t.Fatalf("examples %v", examples)
	}
	for _, ex := range examples {
		name := filepath.Base(filepath.Dir(ex))
		t.Run(name, func(t *testing.T) {
			out, stderr, err := execute(t, "render", "-f", ex, "--config", cfg, "--templates", "../../config/templates", "-n", "score-demo")
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			again, _, _ := execute(t, "render", "-f", ex, "--config", cfg, "--templates", "../../config/templates", "-n", "score-demo")
			if again != out {
				t.Fatal("render is not byte-identical across runs")
			}
			golden := filepath.Join("testdata", "render", name+".yaml")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd/scorectl -run TestRenderGolden -update)", err)
			}
			if !bytes.Equal(want, []byte(out)) {
				t.Fatalf("render differs from %s (if intended, rerun with -update):\n%s", golden, out)
			}
		})
	}
}

func TestRenderRefusesATemplateThatFailsItsDigest(t *testing.T) {
	cfg := devConfig(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "web-service.yaml"), []byte("kind: Tampered\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := execute(t, "render", "-f", "../../examples/hello/score.yaml", "--config", cfg, "--templates", dir)
	if err == nil || !strings.Contains(err.Error(), "the config pins sha256:") {
		t.Fatalf("want a digest refusal, got %v", err)
	}
}

// The sample's helm and kustomize backends render offline from the shipped chart and
// kustomization, as the runtime renders them.
func TestRenderHelmAndKustomizeBackends(t *testing.T) {
	cfg := devConfig(t)
	hello, err := os.ReadFile("../../examples/hello/score.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ channel, backend, deployment string }{
		{"canary", "k8s-web-canary", "name: hello\n"},
		{"kustomize", "k8s-web-kustomize", "name: hello-app\n"},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			score := filepath.Join(t.TempDir(), "score.yaml")
			labelled := strings.Replace(string(hello), "  name: hello\n", "  name: hello\n  labels:\n    score.dev/channel: "+tc.channel+"\n", 1)
			if err := os.WriteFile(score, []byte(labelled), 0o600); err != nil {
				t.Fatal(err)
			}
			out, stderr, err := execute(t, "render", "-f", score, "--config", cfg, "--templates", "../../config/templates", "-n", "score-demo")
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			manifests := out[strings.Index(out, "# Runtime manifests"):]
			for _, want := range []string{"backend " + tc.backend, "kind: Deployment", tc.deployment, "image: nginx:1.27", "kind: Service", "score.dev/workload: hello", "name: hello-files"} {
				if !strings.Contains(out, want) {
					t.Errorf("want %q in\n%s", want, out)
				}
			}
			if !strings.Contains(manifests, "namespace: score-demo") {
				t.Errorf("manifests outside the namespace:\n%s", manifests)
			}
			if again, _, _ := execute(t, "render", "-f", score, "--config", cfg, "--templates", "../../config/templates", "-n", "score-demo"); again != out {
				t.Fatal("render is not byte-identical across runs")
			}
		})
	}
	t.Run("a changed kustomization fails its digest", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "web-service-kustomize"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "web-service-kustomize", "kustomization.yaml"), []byte("resources: []\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		score := filepath.Join(t.TempDir(), "score.yaml")
		_ = os.WriteFile(score, []byte(strings.Replace(string(hello), "  name: hello\n", "  name: hello\n  labels:\n    score.dev/channel: kustomize\n", 1)), 0o600)
		if _, _, err := execute(t, "render", "-f", score, "--config", cfg, "--templates", dir); err == nil || !strings.Contains(err.Error(), "the config pins sha256:") {
			t.Fatalf("want a digest refusal, got %v", err)
		}
	})
}

// TestHostileRenderShowsNoInjectedObject: a volume size crafted to add a privileged
// Deployment to the catalog's objects is refused by the catalog's param type, naming the
// param; and with the catalog as it was (the size neither typed nor quoted) it is only the
// volume's size: scorectl render prints the same objects as for a benign size.
func TestHostileRenderShowsNoInjectedObject(t *testing.T) {
	const injection = "1Gi}}\n    - apiVersion: apps/v1\n      kind: Deployment\n      metadata: {name: pwn}\n      spec: {template: {spec: {hostNetwork: true, containers: [{name: c, image: x, securityContext: {privileged: true}}]}}}\n    - {apiVersion: v1, kind: ConfigMap, metadata: {name: y}, data: {x: \""
	score := func(size string) string {
		raw, _ := json.Marshal(size)
		path := filepath.Join(t.TempDir(), "score.yaml")
		doc := "apiVersion: score.dev/v1b1\nmetadata: {name: web}\ncontainers:\n  main:\n    image: nginx\n    volumes:\n      /data: {source: \"${resources.data}\"}\nresources:\n  data:\n    type: volume\n    params: {size: " + string(raw) + "}\n"
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	_, _, err := execute(t, "render", "-f", score(injection), "--config", devConfig(t), "--templates", "../../config/templates", "-n", "team")
	if err == nil || !strings.Contains(err.Error(), "spec.resources.data.params.size: The value must be a Kubernetes quantity") {
		t.Fatalf("want the param refused, got %v", err)
	}
	careless := devConfig(t, func(doc string) string {
		doc = strings.Replace(doc, "  supported_params:\n  - name: size\n    type: quantity\n", "  supported_params:\n  - size\n", 1)
		return strings.Replace(doc, "storage: {{ .State.size | quote }}", "storage: {{ .State.size }}", 1)
	})
	benign, stderr, err := execute(t, "render", "-f", score("2Gi"), "--config", careless, "--templates", "../../config/templates", "-n", "team")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	hostile, stderr, err := execute(t, "render", "-f", score(injection), "--config", careless, "--templates", "../../config/templates", "-n", "team")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	kinds := func(out string) []string {
		var k []string
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "kind: ") {
				k = append(k, line)
			}
		}
		return k
	}
	if strings.Join(kinds(hostile), ",") != strings.Join(kinds(benign), ",") || !strings.Contains(hostile, "storage: |-") {
		t.Fatalf("the size added objects: %v, not %v\n%s", kinds(hostile), kinds(benign), hostile)
	}
}
