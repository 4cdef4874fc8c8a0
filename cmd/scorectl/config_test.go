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
