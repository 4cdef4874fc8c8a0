package inventory

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/termtest"
)

func TestKeyIgnoresTheVersion(t *testing.T) {
	a := scorev1b1.AppliedObject{APIVersion: "gateway.networking.k8s.io/v1beta1", Kind: "HTTPRoute", Namespace: "team", Name: "web"}
	b := a
	b.APIVersion = "gateway.networking.k8s.io/v1"
	if Key(a) != Key(b) {
		t.Fatalf("%s != %s", Key(a), Key(b))
	}
	core := scorev1b1.AppliedObject{APIVersion: "v1", Kind: "Service", Namespace: "team", Name: "web"}
	if Key(core) != "/Service/team/web" {
		t.Fatalf("core key %s", Key(core))
	}
}

func TestUnionKeepsWhatEarlierRendersApplied(t *testing.T) {
	entry := func(apiVersion, kind, name, health string) scorev1b1.AppliedObject {
		return scorev1b1.AppliedObject{APIVersion: apiVersion, Kind: kind, Name: name, Health: health}
	}
	previous := []scorev1b1.AppliedObject{entry("example.test/v1alpha1", "Gizmo", "g", "Current"), entry("v1", "ConfigMap", "c", "Current")}
	applied := []scorev1b1.AppliedObject{entry("apiextensions.k8s.io/v1", "CustomResourceDefinition", "gizmos", "InProgress"), entry("example.test/v1", "Gizmo", "g", "InProgress")}
	got := Union(previous, applied)
	want := []scorev1b1.AppliedObject{applied[1], previous[1], applied[0]}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("union %v, want %v", got, want)
	}
}

// TestAppliedEscapesTheObjectsWords: an object's own message (a container's termination
// message, which its image writes) is stored escaped.
func TestAppliedEscapesTheObjectsWords(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "run", "namespace": "team"}}}
	got := Applied(u, scorev1b1.HealthFailed, "BackoffLimitExceeded: "+termtest.Hostile).Message
	termtest.Safe(t, "the entry's message", got)
	if !strings.Contains(got, termtest.Marker) {
		t.Errorf("message %q", got)
	}
}
