package render

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// Every template kind gets a pod without a token, unless the backend asks for one, and then
// the pod runs as the ServiceAccount it names: a tenant's pod must not hold the namespace's
// default ServiceAccount token.
func TestPodsCarryNoTokenUnlessTheBackendAsks(t *testing.T) {
	for _, kind := range []scorev1b1.TemplateKind{scorev1b1.TemplateManifests, scorev1b1.TemplateHelm, scorev1b1.TemplateKustomize} {
		for _, tc := range []struct {
			name    string
			pods    *scorev1b1.PlanPods
			token   bool
			account string
		}{
			{name: "no pods policy"},
			{name: "rules allowed, no token", pods: &scorev1b1.PlanPods{Allow: []string{"probeHosts"}}},
			{name: "a token of the backend's ServiceAccount", pods: &scorev1b1.PlanPods{ServiceAccountName: "web-reader", ServiceAccountToken: true}, token: true, account: "web-reader"},
		} {
			t.Run(string(kind)+"/"+tc.name, func(t *testing.T) {
				spec := plan(values, mainContainer())
				spec.Template.Kind, spec.Pods = kind, tc.pods
				objs, err := Render(Input{Workload: "web", Namespace: "ns", Spec: spec, Template: sample(t, kind)})
				if err != nil {
					t.Fatal(err)
				}
				pod, _, _ := unstructured.NestedMap(byKind(objs, "Deployment").Object, "spec", "template", "spec")
				if token, ok := pod["automountServiceAccountToken"].(bool); !ok || token != tc.token {
					t.Errorf("automountServiceAccountToken %v, want %v", pod["automountServiceAccountToken"], tc.token)
				}
				if account, _ := pod["serviceAccountName"].(string); account != tc.account {
					t.Errorf("serviceAccountName %q, want %q", account, tc.account)
				}
			})
		}
	}
}
