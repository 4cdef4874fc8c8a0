package configdiff

import (
	"errors"
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/offline"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/selection"
)

func obj(kind, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind, "spec": spec}}
	u.SetName(name)
	u.SetNamespace("ns")
	return u
}

func result(profile, backend string, claims []offline.Claim, objs ...*unstructured.Unstructured) Side {
	return Side{Result: offline.Result{
		Selection: selection.Result{OK: true, Profile: profile, Backend: &orchconfig.Backend{BackendID: backend}},
		Copies:    []offline.Copy{{Claims: claims, Objects: objs}},
	}}
}

func TestCompare(t *testing.T) {
	db := offline.Claim{Key: "db", Name: "web-db-1", Provisioner: "template://dev/postgres", Objects: []*unstructured.Unstructured{obj("StatefulSet", "pg", map[string]any{"v": 1})}}
	dep := obj("Deployment", "web", map[string]any{"replicas": 1})
	base := result("web-service", "k8s-web", []offline.Claim{db}, dep)
	cases := []struct {
		name    string
		after   Side
		changes []Change
		objects []ObjectChange
	}{
		{"nothing changes", base, nil, nil},
		{
			"another backend renders another Deployment",
			result("web-service", "k8s-web-v3", []offline.Claim{db}, obj("Deployment", "web", map[string]any{"replicas": 2})),
			[]Change{{What: "backend k8s-web → k8s-web-v3"}},
			[]ObjectChange{{Action: "changed", Object: "Deployment ns/web"}},
		},
		{
			"a claim replaced is a new instance: risky",
			result("web-service", "k8s-web", []offline.Claim{{Key: "db", Name: "web-db-2", Provisioner: db.Provisioner, Objects: []*unstructured.Unstructured{obj("StatefulSet", "pg2", nil)}}}, dep),
			[]Change{{What: "resource db: claim web-db-1 replaced by web-db-2, a new instance with new data and credentials", Risky: true}},
			[]ObjectChange{{Action: "pruned", Object: "StatefulSet ns/pg"}, {Action: "created", Object: "StatefulSet ns/pg2"}},
		},
		{
			"another provisioner: risky",
			result("web-service", "k8s-web", []offline.Claim{{Key: "db", Name: "web-db-1", Provisioner: "template://dev/postgres-ha", Objects: db.Objects}}, dep),
			[]Change{{What: "resource db: provisioner template://dev/postgres → template://dev/postgres-ha", Risky: true}},
			nil,
		},
		{
			"the new config cannot serve it: risky, everything pruned",
			Side{Err: errors.New("selection: no backend")},
			[]Change{{What: "would stop being servable: selection: no backend", Risky: true}},
			[]ObjectChange{{Action: "pruned", Object: "Deployment ns/web"}, {Action: "pruned", Object: "StatefulSet ns/pg"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Compare("web", base, tc.after)
			if !reflect.DeepEqual(got.Changes, tc.changes) || !reflect.DeepEqual(got.Objects, tc.objects) {
				t.Fatalf("got %+v %+v\nwant %+v %+v", got.Changes, got.Objects, tc.changes, tc.objects)
			}
			risky := false
			for _, c := range tc.changes {
				risky = risky || c.Risky
			}
			if got.Risky() != risky || got.Empty() != (len(tc.changes)+len(tc.objects) == 0) {
				t.Fatalf("risky %v empty %v", got.Risky(), got.Empty())
			}
		})
	}
	if got := Compare("web", Side{Err: errors.New("x")}, base); len(got.Objects) != 2 || got.Objects[0].Action != "created" || got.Risky() {
		t.Fatalf("becoming servable: %+v", got)
	}
}

// placed is a result placed on cluster with the plan's values.
func placed(cluster, values string, claims []offline.Claim, objs ...*unstructured.Unstructured) Side {
	s := result("web-service", "k8s-web", claims, objs...)
	c := &s.Result.Copies[0]
	c.Cluster = cluster
	c.Plan = &scorev1b1.WorkloadPlan{Spec: scorev1b1.WorkloadPlanSpec{Cluster: cluster, Values: &apiextensionsv1.JSON{Raw: []byte(values)}}}
	return s
}

// A diff says on which cluster a Workload runs, the values of its plan that change there (an
// override's), and a move, risky when its dependencies would be provisioned anew.
func TestClusterOverridesDiff(t *testing.T) {
	db := offline.Claim{Key: "db", Name: "web-db-1", Provisioner: "template://dev/postgres"}
	dep := func(replicas int) *unstructured.Unstructured {
		return obj("Deployment", "web", map[string]any{"replicas": replicas})
	}
	cases := []struct {
		name          string
		before, after Side
		want          Workload
	}{
		{"an override that does not match: nothing",
			placed("us-1", `{"replicas":1,"image":{"registry":"r"}}`, nil, dep(1)), placed("us-1", `{"replicas":1,"image":{"registry":"r"}}`, nil, dep(1)),
			Workload{Name: "ns/web", Cluster: "us-1"}},
		{"an override that matches: its values, the objects they change",
			placed("eu-1", `{"replicas":1,"image":{"registry":"r"}}`, nil, dep(1)), placed("eu-1", `{"replicas":3,"image":{"registry":"eu.mirror"},"tier":"gold"}`, nil, dep(3)),
			Workload{Name: "ns/web", Cluster: "eu-1", Changes: []Change{{What: `values: image.registry: "r" → "eu.mirror"`}, {What: "values: replicas: 1 → 3"}, {What: `values: tier: (none) → "gold"`}},
				Objects: []ObjectChange{{Action: "changed", Object: "Deployment ns/web"}}}},
		{"moved with a dependency: risky",
			placed("eu-1", `{}`, []offline.Claim{db}, dep(1)), placed("us-1", `{}`, []offline.Claim{db}, dep(1)),
			Workload{Name: "ns/web", Cluster: "us-1", Changes: []Change{{What: "cluster eu-1 → us-1", Risky: true}}}},
		{"moved from the hub without dependencies",
			placed("", `{}`, nil, dep(1)), placed("eu-1", `{}`, nil, dep(1)),
			Workload{Name: "ns/web", Cluster: "eu-1", Changes: []Change{{What: "cluster the hub → eu-1"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Compare("ns/web", tc.before, tc.after); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// A Workload on two clusters is compared copy by copy: a copy other than the first is named in
// each of its changes and objects, and a copy added or removed is said.
func TestCopiesDiff(t *testing.T) {
	dep := func(replicas int) *unstructured.Unstructured {
		return obj("Deployment", "web", map[string]any{"replicas": replicas})
	}
	two := func(eu, us string, usReplicas int) Side {
		s := placed("eu-1", eu, nil, dep(1))
		s.Result.Workload = &scorev1b1.Workload{}
		s.Result.Workload.Name = "web"
		s.Result.Copies = append(s.Result.Copies, offline.Copy{Objects: []*unstructured.Unstructured{dep(usReplicas)},
			Plan: &scorev1b1.WorkloadPlan{Spec: scorev1b1.WorkloadPlanSpec{Cluster: "us-1", Values: &apiextensionsv1.JSON{Raw: []byte(us)}}}})
		s.Result.Copies[1].Slot, s.Result.Copies[1].Cluster = 1, "us-1"
		return s
	}
	got := Compare("ns/web", two(`{"replicas":1}`, `{"replicas":1}`, 1), two(`{"replicas":1}`, `{"replicas":3}`, 3))
	want := Workload{Name: "ns/web", Cluster: "eu-1", Changes: []Change{{What: "copy web.1: values: replicas: 1 → 3"}},
		Objects: []ObjectChange{{Action: "changed", Object: "Deployment ns/web (copy web.1)"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	one := placed("eu-1", `{"replicas":1}`, nil, dep(1))
	got = Compare("ns/web", two(`{"replicas":1}`, `{"replicas":1}`, 1), one)
	want = Workload{Name: "ns/web", Cluster: "eu-1", Changes: []Change{{What: "copy web.1: removed from us-1"}},
		Objects: []ObjectChange{{Action: "pruned", Object: "Deployment ns/web (copy web.1)"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}
