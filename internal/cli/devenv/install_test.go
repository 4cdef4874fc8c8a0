package devenv

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	scoreorchestrator "github.com/score-orchestrator/score-orchestrator"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/controlplane"
)

// The shipped bundle holds everything Install and ApplyExamples read, and the assembled
// config lists every provisioner of the catalog.
func TestShippedBundle(t *testing.T) {
	cfg, err := orchconfig.DevelopmentConfig(scoreorchestrator.Bundle)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg) == 0 {
		t.Fatal("empty config")
	}
	crds, err := decodeFile(scoreorchestrator.Bundle, "config/crd/bases/score.dev_workloads.yaml")
	if err != nil || len(crds) != 1 || crds[0].GetKind() != "CustomResourceDefinition" {
		t.Fatalf("the Workload CRD: %v %v", crds, err)
	}
	for _, name := range controlplane.All {
		if _, err := scoreorchestrator.Bundle.Open("config/rbac/" + name + "/role.yaml"); err != nil {
			t.Errorf("role of %s: %v", name, err)
		}
	}
	for _, f := range []string{"config/rbac/users/workload-editor.yaml", "config/rbac/users/workload-viewer.yaml"} {
		if roles, err := decodeFile(scoreorchestrator.Bundle, f); err != nil || len(roles) != 1 || roles[0].GetKind() != "ClusterRole" {
			t.Errorf("%s: %v %v", f, roles, err)
		}
	}
	for _, f := range []string{"examples/hello/score.yaml", "examples/web-postgres-redis/score.yaml", "examples/batch/score.yaml"} {
		ws, err := Example(scoreorchestrator.Bundle, f, "ns")
		if err != nil || len(ws) != 1 || ws[0].Namespace != "ns" {
			t.Errorf("%s: %v %v", f, ws, err)
		}
	}
	for _, script := range []string{"hack/tools.sh", "hack/cluster.sh"} {
		if _, err := scoreorchestrator.Bundle.Open(script); err != nil {
			t.Errorf("%s: %v", script, err)
		}
	}
}

func TestTemplatesConfigMap(t *testing.T) {
	bundle := fstest.MapFS{
		"config/templates/web.yaml":      {Data: []byte("kind: Deployment\n")},
		"config/templates/chart.tgz":     {Data: []byte{0x1f, 0x8b, 0x08, 0x00, 0xff, 0xfe}},
		"config/templates/sub/ignored.y": {Data: []byte("x")}, // a kustomization directory
	}
	objs, err := TemplatesConfigMaps(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[1].GetName() != "sub" {
		t.Fatalf("a directory is a ConfigMap of its own: %v", objs)
	}
	if sub := objs[1].(*corev1.ConfigMap); sub.Data["ignored.y"] != "x" {
		t.Errorf("the directory's files: %v", sub.Data)
	}
	cm := objs[0].(*corev1.ConfigMap)
	if cm.Data["web.yaml"] != "kind: Deployment\n" || len(cm.Data) != 1 {
		t.Errorf("text files go to data: %v", cm.Data)
	}
	if len(cm.BinaryData["chart.tgz"]) != 6 || len(cm.BinaryData) != 1 {
		t.Errorf("other files go to binaryData: %v", cm.BinaryData)
	}
}

func TestDecodeFileSplitsDocuments(t *testing.T) {
	bundle := fstest.MapFS{"a.yaml": {Data: []byte("---\nkind: A\n---\n# nothing\n---\nkind: B\nmetadata:\n  name: b\n")}}
	objs, err := decodeFile(bundle, "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].GetKind() != "A" || objs[1].GetName() != "b" {
		t.Fatalf("got %v", objs)
	}
}

// Every kind templates and provisioners may create by default is one the shipped roles let a
// controller write: a default that the roles refuse would only ever end as PermissionDenied.
func TestDefaultAllowedKindsAreGranted(t *testing.T) {
	granted := map[string][]string{}
	for _, name := range []string{"provisioner", "runtime"} {
		objs, err := decodeFile(scoreorchestrator.Bundle, "config/rbac/"+name+"/role.yaml")
		if err != nil || len(objs) != 1 {
			t.Fatalf("role of %s: %v", name, err)
		}
		role := &rbacv1.ClusterRole{}
		if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, role); err != nil {
			t.Fatal(err)
		}
		for _, rule := range role.Rules {
			if !slices.Contains(rule.Verbs, "create") || !slices.Contains(rule.Verbs, "patch") || !slices.Contains(rule.Verbs, "delete") {
				continue
			}
			for _, g := range rule.APIGroups {
				for _, r := range rule.Resources {
					granted[r+"."+g] = append(granted[r+"."+g], name)
				}
			}
		}
	}
	for _, k := range orchconfig.DefaultAllowedKinds {
		kind, group, _ := strings.Cut(k, ".")
		plural, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Group: group, Kind: kind})
		if len(granted[plural.Resource+"."+group]) == 0 {
			t.Errorf("%s is allowed by default but neither the provisioner's nor the runtime's role may create, patch and delete %s", k, plural.Resource)
		}
	}
}
