package scoreorchestrator_test

import (
	"os"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	scoreorchestrator "github.com/score-orchestrator/score-orchestrator"
	"github.com/score-orchestrator/score-orchestrator/internal/build/changelog"
	"github.com/score-orchestrator/score-orchestrator/internal/version"
)

// fileVersion is the file VERSION, the one source of the version.
func fileVersion(t *testing.T) semver.Version {
	t.Helper()
	data, err := os.ReadFile("VERSION")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.TrimSpace(string(data))
	if string(data) != text+"\n" {
		t.Errorf("VERSION is %q: one line, the version alone", data)
	}
	v, err := semver.Parse(text)
	if err != nil {
		t.Fatalf("VERSION %q is not MAJOR.MINOR.PATCH[-PRERELEASE]: %v", text, err)
	}
	return v
}

// TestVersionsAgree: what the binaries report, the chart's version and appVersion (and so its
// default image tag) and the kustomize base's image are the file VERSION. The images' tags and
// labels come from it too (make images, make release; internal/build/image's TestImages checks what
// their binaries report).
func TestVersionsAgree(t *testing.T) {
	want := fileVersion(t).String()
	if strings.TrimSpace(scoreorchestrator.Version) != want || version.Version != want {
		t.Errorf("the binaries report %q, VERSION says %s", version.Version, want)
	}
	chart, err := loader.LoadDir("charts/score-orchestrator")
	if err != nil {
		t.Fatal(err)
	}
	if chart.Metadata.Version != want || chart.Metadata.AppVersion != want {
		t.Errorf("the chart's version %q and appVersion %q, VERSION says %s: run make generate", chart.Metadata.Version, chart.Metadata.AppVersion, want)
	}
	data, err := os.ReadFile("config/default/manager.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil || d.Kind != "Deployment" {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			images = append(images, c.Image)
		}
	}
	if len(images) == 0 {
		t.Fatal("config/default/manager.yaml holds no Deployment")
	}
	for _, image := range images {
		if image != "score-orchestrator/score-controllers:"+want {
			t.Errorf("the kustomize base runs %s, VERSION says %s: run make generate", image, want)
		}
	}
}

// TestChangelog: CHANGELOG.md is in the Keep a Changelog form with an Unreleased section first,
// which every change adds to, and VERSION is not a release that changes came after.
func TestChangelog(t *testing.T) {
	data, err := os.ReadFile("CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	c, err := changelog.Parse(string(data))
	if err != nil {
		t.Fatalf("CHANGELOG.md: %v", err)
	}
	if err := c.Check(fileVersion(t)); err != nil {
		t.Fatalf("CHANGELOG.md: %v", err)
	}
}
