package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	out, _, err := execute(t, "config", "validate", "../../config/samples/orchestrator-config.yaml")
	if err != nil || !strings.Contains(out, "orchestrator-config.yaml: valid") {
		t.Fatalf("the sample must be valid: %v\n%s", err, out)
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	doc := "apiVersion: score.dev/v1b1\nkind: OrchestratorConfig\nprofiles:\n  - name: web\n    backends:\n      - backendId: b1\n        runtimeClass: kubernetes\n        version: one\n        template: {kind: manifests, ref: \"oci://r.example/t:latest\"}\n"
	if err := os.WriteFile(bad, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err = execute(t, "config", "validate", bad)
	if err == nil {
		t.Fatal("an invalid config must fail the command")
	}
	for _, want := range []string{"bad.yaml:8: profiles[0].backends[0].version:", "bad.yaml:9: profiles[0].backends[0].template.ref:"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}

	out, _, _ = execute(t, "config", "validate", "-o", "json", bad)
	var reports []fileReport
	if err := json.Unmarshal([]byte(out), &reports); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	if len(reports) != 1 || reports[0].Valid || len(reports[0].Errors) != 2 || reports[0].Errors[0].Line != 8 {
		t.Fatalf("unexpected report %+v", reports)
	}
}

// What a platform's CI adds: template refs resolved and checked against their digests, and
// sample Workloads that every profile must serve.
func TestConfigValidateChecks(t *testing.T) {
	sample := "../../config/samples/orchestrator-config.yaml"
	out, _, err := execute(t, "config", "validate", sample, "--templates", "../../config/templates", "--workloads", "../../examples")
	if err != nil || !strings.Contains(out, "orchestrator-config.yaml: valid") {
		t.Fatalf("the sample, its templates and the examples agree: %v\n%s", err, out)
	}

	tampered := t.TempDir()
	for _, f := range []string{"web-service.yaml", "batch-job.yaml", "stateful.yaml"} {
		raw, err := os.ReadFile(filepath.Join("../../config/templates", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "web-service.yaml" {
			raw = append(raw, "# changed\n"...)
		}
		if err := os.WriteFile(filepath.Join(tampered, f), raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err = execute(t, "config", "validate", sample, "--templates", tampered)
	if err == nil || !strings.Contains(out, "orchestrator-config.yaml:15: profiles[0].backends[0].template.ref: does not resolve:") || !strings.Contains(out, "the config pins sha256:") {
		t.Fatalf("a template that does not match its digest: %v\n%s", err, out)
	}

	only := t.TempDir()
	raw, err := os.ReadFile("../../examples/hello/score.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(only, "hello.yaml"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err = execute(t, "config", "validate", sample, "--workloads", only)
	if err == nil || !strings.Contains(out, "profiles[1]: no sample workload selects a backend of profile batch-job") || !strings.Contains(out, "no sample workload selects a backend of profile stateful-service") {
		t.Fatalf("profiles no sample reaches: %v\n%s", err, out)
	}
}
