package runtime

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// Three apply defects, each pinned by a test: an inventory keyed by version, a prune that
// wedges on a kind no longer served, and staging that resolves every kind before applying
// anything.

// gadgetCRD serves Gadget (versions.score.test) under v1alpha1 and v1, with the same schema.
func gadgetCRD() *apiextensionsv1.CustomResourceDefinition {
	version := func(name string, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: storage,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTrue()}}}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.versions.score.test"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "versions.score.test", Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version("v1alpha1", false), version("v1", true)},
		},
	}
}

// installCRD creates crd and waits until its kind is served.
func installCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, list schema.GroupVersionKind) {
	t.Helper()
	if err := env.Client.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, crd.Name+" served", func() error {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(list)
		return env.Client.List(ctx, l)
	})
}

// retemplate publishes text as the namespace's template and points the plan at it.
func retemplate(t *testing.T, ns, name, text string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "templates"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"web.yaml": text}
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	p := &scorev1b1.WorkloadPlan{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	before := p.DeepCopy()
	p.Spec.Template.Digest = testenv.Digest(text)
	if err := env.Client.Patch(ctx, p, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}

// appliedAt waits until the plan's current generation is Applied and its inventory lists
// want ("apiVersion Kind name" each).
func appliedAt(t *testing.T, ns, name string, want ...string) *scorev1b1.WorkloadPlan {
	t.Helper()
	p := &scorev1b1.WorkloadPlan{}
	testenv.Eventually(t, 30*time.Second, "plan applied with "+fmt.Sprint(want), func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return err
		}
		applied := meta.FindStatusCondition(p.Status.Conditions, scorev1b1.PlanConditionApplied)
		if p.Status.ObservedGeneration != p.Generation || applied == nil || applied.Status != metav1.ConditionTrue || applied.ObservedGeneration != p.Generation {
			return fmt.Errorf("generation %d not applied: %s %s", p.Generation, p.Status.Phase, p.Status.Message)
		}
		have := map[string]bool{}
		for _, o := range p.Status.Objects {
			have[o.APIVersion+" "+o.Kind+" "+o.Name] = true
		}
		for _, w := range want {
			if !have[w] {
				return fmt.Errorf("inventory %v lacks %s", p.Status.Objects, w)
			}
		}
		return nil
	})
	return p
}

func gadget(ns, name string) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "versions.score.test", Version: "v1", Kind: "Gadget"})
	return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
}

// TestObjectMovedToAnotherVersionIsKept: a template that moves an object to another served
// version of its kind keeps the object. The inventory was keyed by apiVersion, so prune
// deleted the object it had just applied under the new version.
func TestObjectMovedToAnotherVersionIsKept(t *testing.T) {
	installCRD(t, gadgetCRD(), schema.GroupVersionKind{Group: "versions.score.test", Version: "v1", Kind: "GadgetList"})
	const tpl = "apiVersion: versions.score.test/%s\nkind: Gadget\nmetadata:\n  name: {{ .Workload.Name }}\nspec:\n  size: 1\n"
	old := fmt.Sprintf(tpl, "v1alpha1")
	ns := setup(t, old)
	p := newPlan(ns, "moved", "u-moved", testenv.Digest(old), `{}`)
	testenv.Create(t, env.Client, p)
	appliedAt(t, ns, "moved", "versions.score.test/v1alpha1 Gadget moved")
	before := &unstructured.Unstructured{}
	before.SetGroupVersionKind(schema.GroupVersionKind{Group: "versions.score.test", Version: "v1", Kind: "Gadget"})
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "moved"}, before); err != nil {
		t.Fatal(err)
	}

	retemplate(t, ns, "moved", fmt.Sprintf(tpl, "v1"))
	appliedAt(t, ns, "moved", "versions.score.test/v1 Gadget moved")
	after := &unstructured.Unstructured{}
	after.SetGroupVersionKind(before.GroupVersionKind())
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "moved"}, after); err != nil {
		t.Fatalf("the Gadget moved to v1 was pruned: %v", err)
	}
	if after.GetUID() != before.GetUID() || after.GetDeletionTimestamp() != nil {
		t.Fatalf("the Gadget was replaced or is being deleted: uid %s → %s, deletion %v", before.GetUID(), after.GetUID(), after.GetDeletionTimestamp())
	}
}

// TestKindNoLongerServedDoesNotWedgePrune: a plan whose inventory lists an object of a kind
// the cluster no longer serves (its CRD removed while the runtime was down, so its REST mapper
// never learnt the kind) converges on a new render. Prune deleted by apiVersion and failed on
// the unserved kind on every pass.
func TestKindNoLongerServedDoesNotWedgePrune(t *testing.T) {
	text := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Workload.Name }}\ndata: {a: b}\n"
	ns := setup(t, text)
	p := newPlan(ns, "unserved", "u-unserved", testenv.Digest(text), `{}`)
	testenv.Create(t, env.Client, p)
	p = appliedAt(t, ns, "unserved", "v1 ConfigMap unserved")
	before := p.DeepCopy()
	p.Status.Objects = append(p.Status.Objects, scorev1b1.AppliedObject{APIVersion: "gone.score.test/v1", Kind: "Gadget", Namespace: ns, Name: "unserved", Health: scorev1b1.HealthCurrent})
	if err := env.Client.Status().Patch(ctx, p, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	retemplate(t, ns, "unserved", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Workload.Name }}\ndata: {a: c}\n")
	p = appliedAt(t, ns, "unserved", "v1 ConfigMap unserved")
	if len(p.Status.Objects) != 1 {
		t.Fatalf("inventory %v, want the ConfigMap only", p.Status.Objects)
	}
}

// TestTemplateWithCRDAndItsObjectConverges: a render holding a CustomResourceDefinition and
// an object of the kind it defines is applied in stages: the definition first, the object
// once the kind is served. Resolving every kind before applying anything, such a render would
// never converge: the object's kind is not served until the definition is applied.
func TestTemplateWithCRDAndItsObjectConverges(t *testing.T) {
	text := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.staged.score.test
spec:
  group: staged.score.test
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo, listKind: GizmoList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: staged.score.test/v1
kind: Gizmo
metadata:
  name: {{ .Workload.Name }}
spec:
  color: blue
`
	ns := setup(t, text)
	p := newPlan(ns, "staged", "u-staged", testenv.Digest(text), `{}`)
	testenv.Create(t, env.Client, p)
	appliedAt(t, ns, "staged", "apiextensions.k8s.io/v1 CustomResourceDefinition gizmos.staged.score.test", "staged.score.test/v1 Gizmo staged")
	gizmo := &unstructured.Unstructured{}
	gizmo.SetGroupVersionKind(schema.GroupVersionKind{Group: "staged.score.test", Version: "v1", Kind: "Gizmo"})
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "staged"}, gizmo); err != nil {
		t.Fatal(err)
	}
	if gizmo.GetAnnotations()[scorev1b1.AnnotationWorkloadUID] != "u-staged" {
		t.Fatalf("the Gizmo is not marked for its Workload: %v", gizmo.GetAnnotations())
	}
	// Deleting the plan deletes the cluster-scoped definition it applied.
	if err := env.Client.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the CRD deleted with its plan", func() error {
		err := env.Client.Get(ctx, client.ObjectKey{Name: "gizmos.staged.score.test"}, &apiextensionsv1.CustomResourceDefinition{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
}
