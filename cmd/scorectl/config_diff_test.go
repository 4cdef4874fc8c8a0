package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// devConfig writes the config make dev loads (the sample profiles and the development
// catalog), changed by edits.
func devConfig(t *testing.T, edits ...func(string) string) string {
	t.Helper()
	cfg, err := orchconfig.DevelopmentConfig(os.DirFS("../.."))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(cfg)
	for _, edit := range edits {
		doc = edit(doc)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConfigDiff(t *testing.T) {
	old := devConfig(t)
	args := func(newCfg string, extra ...string) []string {
		return append([]string{"config", "diff", old, newCfg, "--workloads", "../../examples", "--templates", "../../config/templates"}, extra...)
	}

	out, _, err := execute(t, args(devConfig(t))...)
	if err != nil || !strings.Contains(out, "5 workloads, 0 would change, 0 risky") {
		t.Fatalf("the same config changes nothing: %v\n%s", err, out)
	}

	// The public backend outranks the default one: every web service moves to it and gains
	// an Ingress. Not risky: no claim changes.
	public := devConfig(t, func(s string) string {
		if strings.Count(s, "priority: 90") != 1 {
			t.Fatal("the public backend's priority moved")
		}
		return strings.Replace(s, "priority: 90", "priority: 110", 1)
	})
	out, _, err = execute(t, args(public, "--fail-on-risky")...)
	if err != nil {
		t.Fatalf("a backend change is not risky: %v\n%s", err, out)
	}
	for _, want := range []string{"default/hello:\n    backend k8s-web-v2 → k8s-web-public", "created  Ingress default/hello", "default/nightly-report: no change"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}

	// Another postgres provisioner re-provisions the orders database: risky.
	moved := devConfig(t, func(s string) string {
		return strings.Replace(s, "uri: template://score-dev/postgres", "uri: template://score-dev/postgres-v2", 1)
	})
	out, _, err = execute(t, args(moved, "--fail-on-risky")...)
	if !errors.Is(err, errRisky) || !strings.Contains(out, "default/orders (RISKY):") || !strings.Contains(out, "! resource db: provisioner template://score-dev/postgres → template://score-dev/postgres-v2") {
		t.Fatalf("a provisioner change is risky: %v\n%s", err, out)
	}

	if _, _, err := execute(t, "config", "diff", old, old); err == nil {
		t.Fatal("without --workloads or --cluster the command fails")
	}
}
