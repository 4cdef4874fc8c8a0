package provisioning

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/prepare"
)

// Every catalog definition that makes objects declares its kinds, exactly those it makes, and
// its objects pass the pod rules with the allowances it declares: the image build
// alone asks for more (seccomp and AppArmor unconfined), the rest run within the rules as the
// namespace's default ServiceAccount.
func TestCatalogDeclaresItsKindsAndPods(t *testing.T) {
	cfg := loadCatalog(t)
	services := map[string]NetworkService{
		"web": ServiceOf("web", &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"web": {Port: 8080, TargetPort: ptr.To(int32(8081))}}}),
		"dep": ServiceOf("dep", &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"http": {Port: 8080, TargetPort: ptr.To(int32(80))}}}),
	}
	params := map[string]map[string]any{"image": {"context": "https://git.example.test/app.git"}}
	for k, v := range catalogParams {
		params[k] = v
	}
	for _, def := range cfg.Provisioners {
		if !strings.Contains(def.URI, "://score-dev/") {
			continue
		}
		t.Run(def.Type, func(t *testing.T) {
			id := NewIdentity("team", "web", "dep", def.Type, "", "")
			res, err := RenderTemplates(def, Data{Guid: id.Guid(), Uid: id.Uid(), Type: def.Type, Class: id.Class, Id: id.ID, Namespace: "team", Instance: id.Hash(),
				Params: params[def.Type], SourceWorkload: "web", WorkloadServices: services, State: map[string]any{}, Shared: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			var objs []*unstructured.Unstructured
			var made []string
			for _, m := range res.Manifests {
				u, err := prepare.FromMap(m)
				if err != nil {
					t.Fatal(err)
				}
				objs = append(objs, u)
				if k := prepare.KindName(u.GroupVersionKind().GroupKind()); !slices.Contains(made, k) {
					made = append(made, k)
				}
			}
			if def.Manifests != "" && def.Kinds == nil {
				t.Fatalf("makes %v and declares no kinds", made)
			}
			for _, k := range def.Kinds {
				if !slices.Contains(made, k) {
					t.Errorf("declares kind %s, which it does not make (it makes %v)", k, made)
				}
			}
			if _, err := prepare.Prepare(prepare.Input{Objects: objs, Marks: Marks(def, "team", id.Hash()), Scope: prepare.OfflineScope, Allowed: cfg.KindAllowed}); err != nil {
				t.Fatal(err)
			}
			if allowed := def.Pods.Policy().Allow; len(allowed) > 0 && def.Type != "image" {
				t.Errorf("only the image build may break a pod rule; it allows %v", allowed)
			}
		})
	}
}
