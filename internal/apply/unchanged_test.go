package apply

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(m map[string]any) *unstructured.Unstructured { return &unstructured.Unstructured{Object: m} }

func TestUnchanged(t *testing.T) {
	desired := obj(map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "labels": map[string]any{"a": "b"}},
		"spec":     map[string]any{"replicas": 2, "template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "main", "image": "nginx"}}}}},
	})
	live := obj(map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "labels": map[string]any{"a": "b"}, "resourceVersion": "7", "uid": "x"},
		"spec": map[string]any{"replicas": int64(2), "strategy": map[string]any{"type": "RollingUpdate"},
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "main", "image": "nginx", "imagePullPolicy": "IfNotPresent"}}}}},
		"status": map[string]any{"readyReplicas": int64(2)},
	})
	cases := []struct {
		name string
		mut  func(*unstructured.Unstructured)
		want bool
	}{
		{"server defaults and status do not matter", func(*unstructured.Unstructured) {}, true},
		{"drift in a managed field matters", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, []any{map[string]any{"name": "main", "image": "evil"}}, "spec", "template", "spec", "containers")
		}, false},
		{"a missing label matters", func(u *unstructured.Unstructured) { u.SetLabels(nil) }, false},
		{"a changed count matters", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(3), "spec", "replicas")
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := live.DeepCopy()
			tc.mut(l)
			if got := Unchanged(desired, l); got != tc.want {
				t.Fatalf("want %v, got %v", tc.want, got)
			}
		})
	}
	if Unchanged(desired, nil) {
		t.Fatal("an absent object is a change")
	}
}
