package prepare

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// object is a builder for test objects: object("apps/v1", "Deployment", "web", inNamespace("x")).
func object(apiVersion, kind, name string, opts ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}}
	for _, o := range opts {
		o(u)
	}
	return u
}

func inNamespace(ns string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) { u.SetNamespace(ns) }
}

func withLabel(k, v string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{k: v}) }
}

func definingCRD(group, kind, scope string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": strings.ToLower(kind) + "s." + group},
		"spec":     map[string]any{"group": group, "scope": scope, "names": map[string]any{"kind": kind, "plural": strings.ToLower(kind) + "s"}},
	}}
}

// servedScope serves the built-in kinds (OfflineScope) and refuses the group "unserved.test".
func servedScope(gvk schema.GroupVersionKind) (bool, error) {
	if gvk.Group == "unserved.test" {
		return false, fmt.Errorf("%w: no matches for kind %q", ErrNotServed, gvk.Kind)
	}
	return OfflineScope(gvk)
}

func TestPrepare(t *testing.T) {
	plan := &scorev1b1.WorkloadPlan{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", UID: "plan-uid"},
		Spec: scorev1b1.WorkloadPlanSpec{WorkloadRef: scorev1b1.LocalWorkloadRef{Name: "web", UID: "wl-uid"}}}
	cases := []struct {
		name    string
		objs    []*unstructured.Unstructured
		marks   Marks
		allowed func(group, kind string) bool
		// want lists "Kind name namespace stage owned" per prepared object, in order.
		want    []string
		wantErr error
	}{
		{
			name:  "namespaced objects go to the owner's namespace, ordered by stage, owned and marked",
			objs:  []*unstructured.Unstructured{object("apps/v1", "Deployment", "web"), object("v1", "ConfigMap", "files"), object("v1", "Namespace", "extra")},
			marks: PlanMarks(plan),
			want:  []string{"Namespace extra - 0 false", "ConfigMap files team 1 true", "Deployment web team 2 true"},
		},
		{
			name:  "an object naming its owner's namespace is kept there",
			objs:  []*unstructured.Unstructured{object("v1", "Service", "web", inNamespace("team"))},
			marks: PlanMarks(plan),
			want:  []string{"Service web team 2 true"},
		},
		{
			name:    "an object naming another namespace is refused",
			objs:    []*unstructured.Unstructured{object("v1", "Service", "web", inNamespace("other"))},
			marks:   PlanMarks(plan),
			wantErr: ErrNotAllowed,
		},
		{
			name:    "a kind the platform does not allow is refused",
			objs:    []*unstructured.Unstructured{object("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "admin")},
			marks:   PlanMarks(plan),
			allowed: func(group, kind string) bool { return kind != "ClusterRoleBinding" },
			wantErr: ErrNotAllowed,
		},
		{
			name:    "a kind the cluster does not serve is refused",
			objs:    []*unstructured.Unstructured{object("unserved.test/v1", "Gizmo", "g")},
			marks:   PlanMarks(plan),
			wantErr: ErrNotServed,
		},
		{
			name:  "a CRD of the set tells its kind's scope, before the cluster serves it",
			objs:  []*unstructured.Unstructured{object("unserved.test/v1", "Gizmo", "g"), definingCRD("unserved.test", "Gizmo", "Namespaced"), object("unserved.test/v1", "Cluster", "c"), definingCRD("unserved.test", "Cluster", "Cluster")},
			marks: PlanMarks(plan),
			want:  []string{"CustomResourceDefinition gizmos.unserved.test - 0 false", "CustomResourceDefinition clusters.unserved.test - 0 false", "Gizmo g team 2 true", "Cluster c - 2 false"},
		},
		{
			name:  "an instance's objects carry its label and no owner",
			objs:  []*unstructured.Unstructured{object("apps/v1", "StatefulSet", "pg", withLabel("app", "pg"))},
			marks: InstanceMarks("team", "abc123"),
			want:  []string{"StatefulSet pg team 2 false"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Prepare(Input{Objects: tc.objs, Marks: tc.marks, Scope: servedScope, Allowed: tc.allowed})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, o := range got {
				ns := o.GetNamespace()
				if ns == "" {
					ns = "-"
				}
				lines = append(lines, fmt.Sprintf("%s %s %s %d %v", o.GetKind(), o.GetName(), ns, o.Stage, metav1.GetControllerOf(o) != nil))
				for k, v := range tc.marks.Labels {
					if o.GetLabels()[k] != v {
						t.Errorf("%s lacks label %s=%s: %v", o.GetName(), k, v, o.GetLabels())
					}
				}
				for k, v := range tc.marks.Annotations {
					if o.GetAnnotations()[k] != v {
						t.Errorf("%s lacks annotation %s=%s", o.GetName(), k, v)
					}
				}
			}
			if strings.Join(lines, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("prepared:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func labelled(u *unstructured.Unstructured, instance string) *unstructured.Unstructured {
	u.SetLabels(map[string]string{scorev1b1.LabelInstance: instance})
	return u
}

func withUID(u *unstructured.Unstructured, uid string) *unstructured.Unstructured {
	u.SetUID(types.UID(uid))
	return u
}

func TestMarksOurs(t *testing.T) {
	plan := &scorev1b1.WorkloadPlan{Spec: scorev1b1.WorkloadPlanSpec{WorkloadRef: scorev1b1.LocalWorkloadRef{Name: "web", UID: "mine"}}}
	marked := func(uid string) *unstructured.Unstructured {
		u := object("v1", "Service", "web")
		if uid != "" {
			u.SetAnnotations(map[string]string{scorev1b1.AnnotationWorkloadUID: uid})
		}
		return u
	}
	for _, tc := range []struct {
		name  string
		live  *unstructured.Unstructured
		marks Marks
		want  bool
	}{
		{"the plan's own object", marked("mine"), PlanMarks(plan), true},
		{"another Workload's object", marked("theirs"), PlanMarks(plan), false},
		{"an object the runtime did not create", marked(""), PlanMarks(plan), false},
		{"an instance takes over what another instance made", labelled(marked(""), "other"), InstanceMarks("team", "abc"), true},
		{"an instance refuses what no instance made", marked("theirs"), InstanceMarks("team", "abc"), false},
		{"an instance takes back its listed object that lost its label", withUID(marked(""), "u1"), InstanceMarks("team", "abc", scorev1b1.AppliedObject{UID: "u1"}), true},
		{"an unlabelled object another claim listed is not this one's", withUID(marked(""), "u2"), InstanceMarks("team", "abc", scorev1b1.AppliedObject{UID: "u1"}), false},
	} {
		if got := tc.marks.Ours(tc.live); got != tc.want {
			t.Errorf("%s: Ours = %v, want %v", tc.name, got, tc.want)
		}
	}
}
