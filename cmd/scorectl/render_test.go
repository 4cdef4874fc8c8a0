package main

import (
	"bytes"
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
