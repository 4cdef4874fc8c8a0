package install

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/score-orchestrator/score-orchestrator/internal/testing/metricnames"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// Dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	UID    string `json:"uid"`
	Panels []struct {
		Type    string `json:"type"`
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// The Grafana dashboard ships in the chart as a ConfigMap for Grafana's sidecar when asked
// for, byte for byte config/grafana's, and every panel queries metrics through the data source
// and namespace variables. test/helm checks that each metric it queries exists.
func TestChartGrafanaDashboard(t *testing.T) {
	source, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "grafana", "score-orchestrator.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(source, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	queries := 0
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, target := range p.Targets {
			queries++
			if len(metricnames.Referenced(target.Expr)) == 0 || !strings.Contains(target.Expr, `namespace=~"$namespace"`) {
				t.Errorf("panel %q: %s reads no metric, or not through the namespace variable", p.Title, target.Expr)
			}
		}
	}
	t.Logf("%d panels, %d queries", len(d.Panels), queries)

	dashboards := func(values map[string]any) []*corev1.ConfigMap {
		var out []*corev1.ConfigMap
		for _, cm := range typed[corev1.ConfigMap](t, render(t, "score-system", values), "ConfigMap") {
			if cm.Name == "score-orchestrator-dashboard" {
				out = append(out, cm)
			}
		}
		return out
	}
	if n := len(dashboards(nil)); n != 0 {
		t.Fatalf("%d dashboards by default, want none", n)
	}
	got := dashboards(map[string]any{"grafanaDashboard": map[string]any{"enabled": true, "namespace": "monitoring"}})
	if len(got) != 1 {
		t.Fatalf("%d dashboards when enabled, want 1", len(got))
	}
	cm := got[0]
	if cm.Namespace != "monitoring" || cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap %s/%s, labels %v", cm.Namespace, cm.Name, cm.Labels)
	}
	if cm.Data["score-orchestrator.json"] != strings.TrimSuffix(string(source), "\n") {
		t.Error("the chart's dashboard drifted from config/grafana/score-orchestrator.json: run make generate")
	}
}
