package runtime

import (
	"fmt"
	"os"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// healthConfig is the sample config with a health rule for the test's Widget kind, and
// the kinds the tests create allowed (Namespace, cluster-scoped, among them; Workflow and
// HelmRelease, whose pods the pod rules judge).
func healthConfig() (*configsource.Store, error) {
	base, err := os.ReadFile("../../../config/samples/orchestrator-config.yaml")
	if err != nil {
		return nil, err
	}
	doc := string(base) + `
allowedKinds: [ConfigMap, Secret, Service, Deployment.apps, Widget.example.com, Namespace, Gadget.versions.score.test, Gizmo.staged.score.test, CustomResourceDefinition.apiextensions.k8s.io, Workflow.argoproj.io, HelmRelease.helm.toolkit.fluxcd.io]
health:
  - apiVersion: example.com/v1
    kind: Widget
    healthy: 'has(self.status) && self.status.phase == "Ready"'
    failed: 'has(self.status) && self.status.phase == "Broken"'
    message: '"widget is " + (has(self.status) ? self.status.phase : "new")'
`
	store := configsource.NewStore()
	_, err = store.Offer("1", []byte(doc))
	return store, err
}

// A custom resource kstatus cannot judge is judged by the config's CEL health rule: the plan
// stays Planning while the rule says in progress, and is Projected once it says healthy.
func TestCustomResourceHealthFromCEL(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptrTrue(),
				}},
			}},
		},
	}
	testenv.Create(t, env.Client, crd)
	testenv.Eventually(t, 20*time.Second, "the Widget kind is served", func() error {
		return env.Client.List(ctx, widgetList())
	})
	text := "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {{ .Workload.Name }}\nspec:\n  size: 1\n"
	ns := setup(t, text)
	p := newPlan(ns, "gadget", "u9", testenv.Digest(text), webValues)
	testenv.Create(t, env.Client, p)
	phase := func(want scorev1b1.PlanPhase, health, message string) func() error {
		return func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				return err
			}
			if p.Status.Phase != want || len(p.Status.Objects) != 1 || p.Status.Objects[0].Health != health || p.Status.Objects[0].Message != message {
				return fmt.Errorf("status %s %+v", p.Status.Phase, p.Status.Objects)
			}
			return nil
		}
	}
	testenv.Eventually(t, 20*time.Second, "in progress", phase(scorev1b1.PlanPhasePlanning, "InProgress", "widget is new"))

	w := &unstructured.Unstructured{}
	w.SetAPIVersion("example.com/v1")
	w.SetKind("Widget")
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gadget"}, w); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(w.Object, "Ready", "status", "phase")
	if err := env.Client.Status().Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "healthy", phase(scorev1b1.PlanPhaseProjected, "Current", "widget is Ready"))
}

func widgetList() *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("example.com/v1")
	l.SetKind("WidgetList")
	return l
}

func ptrTrue() *bool { t := true; return &t }
