package install

import (
	"path/filepath"
	"slices"
	"sort"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/score-orchestrator/score-orchestrator/internal/controller/controlplane"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// build runs `kustomize build dir` (with kustomize's default, root-only load restrictions, as
// `kubectl apply -k` has them).
func build(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(testenv.RepoRoot(), dir))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, raw)
}

func kindNames(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
	}
	sort.Strings(out)
	return out
}

// The kustomize base yields what the chart yields by default (the same objects, by kind,
// namespace and name; the chart leaves the namespace to helm --create-namespace, and its
// downgrade guard, which judges the version labels only the chart sets, is its own), with the
// same roles, Deployment settings, config and templates.
func TestKustomizeBase(t *testing.T) {
	objs := build(t, "config/default")

	chrt := slices.DeleteFunc(render(t, "score-system", nil), downgradeGuard)
	crds := 0
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			crds++
		}
	}
	if crds != 6 {
		t.Errorf("%d CRDs, want the 6 score.dev kinds", crds)
	}
	var fromKustomize []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() != "Namespace" && o.GetKind() != "CustomResourceDefinition" {
			fromKustomize = append(fromKustomize, o)
		}
	}
	if got, want := kindNames(fromKustomize), kindNames(chrt); !slices.Equal(got, want) {
		t.Errorf("kustomize gives\n%v\nthe chart gives\n%v", got, want)
	}

	deployments := typed[appsv1.Deployment](t, objs, "Deployment")
	if len(deployments) != 1 {
		t.Fatalf("%d Deployments", len(deployments))
	}
	checkDeployment(t, deployments[0], controlplane.All)
	checkRoles(t, objs)
	checkConfig(t, objs, "score-system")
}
