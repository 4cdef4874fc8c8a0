package apply

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/prepare"
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

// A field dropped from the rendered object (a nodeSelector a template no longer sets) makes the
// prepared object differ from the live one, which still has it: it is applied again, and server-
// side apply removes the field. Comparing the rendered fields alone would skip it. A Secret's
// digest covers its key names, never its values.
func TestDroppedFieldIsApplied(t *testing.T) {
	prepared := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		objs, err := prepare.Prepare(prepare.Input{Objects: []*unstructured.Unstructured{u}, Marks: prepare.Marks{Namespace: "team"}, Scope: func(schema.GroupVersionKind) (bool, error) { return true, nil }})
		if err != nil {
			t.Fatal(err)
		}
		return objs[0].Unstructured
	}
	deployment := func(nodeSelector map[string]any) *unstructured.Unstructured {
		spec := map[string]any{"containers": []any{map[string]any{"name": "main", "image": "nginx"}}}
		if nodeSelector != nil {
			spec["nodeSelector"] = nodeSelector
		}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"},
			"spec": map[string]any{"template": map[string]any{"spec": spec}}}}
	}
	live := prepared(deployment(map[string]any{"disk": "ssd"}))
	if !Unchanged(prepared(deployment(map[string]any{"disk": "ssd"})), live) {
		t.Fatal("the same render differs from what it applied")
	}
	if Unchanged(prepared(deployment(nil)), live) {
		t.Fatal("a render without the nodeSelector is taken as applied: the field would never be removed")
	}
	secret := func(value string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"}, "data": map[string]any{"password": value}}}
	}
	a, b := prepared(secret("c2VjcmV0")), prepared(secret("b3RoZXI="))
	if a.GetAnnotations()[scorev1b1.AnnotationApplied] != b.GetAnnotations()[scorev1b1.AnnotationApplied] {
		t.Fatal("a Secret's digest depends on its values")
	}
	if Unchanged(b, a) {
		t.Fatal("a changed value is taken as applied")
	}
}
