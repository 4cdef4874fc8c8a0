package install

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// The chart's admission policies are config/admission's (tested on a real API server in
// test/integration/admission): the preview makers' on by default, the samples off, each
// enabled on its own, with the release namespace for score-system and the labels, registry
// prefixes and preview administrators' groups from the values.
func TestChartAdmissionPolicies(t *testing.T) {
	policyKinds := map[string]bool{"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true}
	for _, o := range render(t, "platform", nil) {
		if policyKinds[o.GetKind()] && o.GetName() != "score-preview-makers" && !downgradeGuard(o) {
			t.Fatalf("rendered by default: %s %s", o.GetKind(), o.GetName())
		}
	}
	for _, o := range render(t, "platform", map[string]any{"admissionPolicies": map[string]any{"previewMakers": map[string]any{"enabled": false}}}) {
		if policyKinds[o.GetKind()] && !downgradeGuard(o) {
			t.Fatalf("rendered with previewMakers.enabled=false: %s %s", o.GetKind(), o.GetName())
		}
	}

	labels := []any{"team", "cost-center"}
	prefixes := []any{"registry.example.org/", "mirror.example.org:5000/"}
	objs := render(t, "platform", map[string]any{"admissionPolicies": map[string]any{
		"allowedProfiles": map[string]any{"enabled": true},
		"requiredLabels":  map[string]any{"enabled": true, "labels": labels},
		"imageRegistries": map[string]any{"enabled": true, "prefixes": prefixes},
		"previewMakers":   map[string]any{"adminGroups": []any{"platform-admins"}},
	}})
	got := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if (policyKinds[o.GetKind()] || o.GetName() == "score-allowed-registries") && !downgradeGuard(o) {
			if o.GetLabels()["app.kubernetes.io/instance"] != "score" {
				t.Errorf("%s %s: labels %v", o.GetKind(), o.GetName(), o.GetLabels())
			}
			o.SetLabels(nil)
			got[o.GetKind()+"/"+o.GetName()] = o
		}
	}

	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "config", "admission", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue // the kustomize base's list, not a policy
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range decode(t, raw) {
			want++
			// What the chart changes, done by hand.
			switch {
			case o.GetName() == "score-required-labels" && o.GetKind() == "ValidatingAdmissionPolicy":
				vars, _, _ := unstructured.NestedSlice(o.Object, "spec", "variables")
				vars[0].(map[string]any)["expression"] = `["team","cost-center"]`
				_ = unstructured.SetNestedSlice(o.Object, vars, "spec", "variables")
			case o.GetName() == "score-preview-makers" && o.GetKind() == "ValidatingAdmissionPolicy":
				vars, _, _ := unstructured.NestedSlice(o.Object, "spec", "variables")
				vars[0].(map[string]any)["expression"] = `["platform-admins","system:serviceaccounts:platform"]`
				_ = unstructured.SetNestedSlice(o.Object, vars, "spec", "variables")
			case o.GetName() == "score-required-labels":
				exprs, _, _ := unstructured.NestedSlice(o.Object, "spec", "matchResources", "namespaceSelector", "matchExpressions")
				exprs[0].(map[string]any)["values"] = []any{"kube-system", "kube-public", "kube-node-lease", "platform"}
				_ = unstructured.SetNestedSlice(o.Object, exprs, "spec", "matchResources", "namespaceSelector", "matchExpressions")
			case o.GetKind() == "ValidatingAdmissionPolicyBinding" && o.GetName() == "score-image-registries":
				_ = unstructured.SetNestedField(o.Object, "platform", "spec", "paramRef", "namespace")
			case o.GetKind() == "ConfigMap":
				o.SetNamespace("platform")
				_ = unstructured.SetNestedField(o.Object, "registry.example.org/,mirror.example.org:5000/", "data", "prefixes")
			}
			g, ok := got[o.GetKind()+"/"+o.GetName()]
			if !ok {
				t.Errorf("the chart has no %s %s", o.GetKind(), o.GetName())
				continue
			}
			if !reflect.DeepEqual(g.Object, o.Object) {
				t.Errorf("%s %s differs from %s:\n got %v\nwant %v", o.GetKind(), o.GetName(), f, g.Object, o.Object)
			}
		}
	}
	if len(got) != want || want != 9 {
		t.Errorf("the chart renders %d admission objects, config/admission has %d (want 9)", len(got), want)
	}

	_, err = renderManifest(t, "platform", map[string]any{"admissionPolicies": map[string]any{"imageRegistries": map[string]any{"enabled": true}}})
	if err == nil || !strings.Contains(err.Error(), "admissionPolicies.imageRegistries.prefixes must list at least one registry prefix") {
		t.Fatalf("image registries without prefixes: %v", err)
	}
}

// downgradeGuard reports whether o is the chart's own downgrade guard (its policy or binding),
// which is not one of config/admission's.
func downgradeGuard(o *unstructured.Unstructured) bool {
	return strings.HasPrefix(o.GetName(), "score-no-downgrade-")
}

// The chart's downgrade guard (tested on a real API server by test/upgrade's rollback) is
// rendered by default, per release, and not with downgradeGuard.enabled=false.
func TestChartDowngradeGuard(t *testing.T) {
	var guard []string
	for _, o := range render(t, "platform", nil) {
		if downgradeGuard(o) {
			guard = append(guard, o.GetKind()+" "+o.GetName())
		}
	}
	want := []string{"ValidatingAdmissionPolicy score-no-downgrade-score", "ValidatingAdmissionPolicyBinding score-no-downgrade-score"}
	if !reflect.DeepEqual(guard, want) {
		t.Errorf("rendered by default: %v, want %v", guard, want)
	}
	for _, o := range render(t, "platform", map[string]any{"downgradeGuard": map[string]any{"enabled": false}}) {
		if downgradeGuard(o) {
			t.Errorf("rendered with downgradeGuard.enabled=false: %s %s", o.GetKind(), o.GetName())
		}
	}
}
