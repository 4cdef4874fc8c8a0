package devenv

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	scoreorchestrator "github.com/score-orchestrator/score-orchestrator"
)

// The shipped Gateway is the one the catalog's route provisioner names as parent, of the
// class Contour's controller serves, beside the Service whose cluster IP is its address; the
// shipped Contour configuration serves that Gateway.
func TestShippedGateway(t *testing.T) {
	objs, err := decodeFile(scoreorchestrator.Bundle, gatewayManifests)
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		byKind[o.GetKind()] = o
	}
	gw, class, svc := byKind["Gateway"], byKind["GatewayClass"], byKind["Service"]
	if gw == nil || gw.GetNamespace() != GatewayNamespace || gw.GetName() != GatewayName {
		t.Fatalf("the Gateway %s/%s: %v", GatewayNamespace, GatewayName, gw)
	}
	if className, _, _ := unstructured.NestedString(gw.Object, "spec", "gatewayClassName"); class == nil || class.GetName() != className {
		t.Fatalf("the Gateway's class %q is not shipped: %v", className, class)
	}
	if controller, _, _ := unstructured.NestedString(class.Object, "spec", "controllerName"); controller != "projectcontour.io/gateway-controller" {
		t.Errorf("the class is not Contour's: %q", controller)
	}
	if svc == nil || svc.GetNamespace() != GatewayNamespace || svc.GetName() != gatewayAddressService {
		t.Errorf("the data plane's Service %s: %v", gatewayAddressService, svc)
	}
	route, err := scoreorchestrator.Bundle.ReadFile("config/provisioners/route.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if want := "gateway: {name: " + GatewayName + ", namespace: " + GatewayNamespace + "}"; !strings.Contains(string(route), want) {
		t.Errorf("the route provisioner does not attach its routes to the shipped Gateway (%s)", want)
	}

	config := struct {
		Gateway struct {
			GatewayRef struct{ Namespace, Name string } `json:"gatewayRef"`
		} `json:"gateway"`
	}{}
	rawConfig, err := scoreorchestrator.Bundle.ReadFile(gatewayContourConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(rawConfig, &config); err != nil {
		t.Fatal(err)
	}
	if ref := config.Gateway.GatewayRef; ref.Namespace != GatewayNamespace || ref.Name != GatewayName {
		t.Errorf("Contour's configuration serves the Gateway %s/%s", ref.Namespace, ref.Name)
	}
}

func TestGatewayProgrammed(t *testing.T) {
	cond := func(typ, status string, generation int64) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": typ, "message": "the controller's words", "observedGeneration": generation, "lastTransitionTime": "2026-01-01T00:00:00Z"}
	}
	for _, tc := range []struct {
		name       string
		conditions []any
		ok         bool
		why        string
	}{
		{name: "no status yet", why: "no Accepted condition yet"},
		{name: "accepted and programmed", conditions: []any{cond("Accepted", "True", 2), cond("Programmed", "True", 2)}, ok: true},
		{name: "accepted, not programmed", conditions: []any{cond("Accepted", "True", 2), cond("Programmed", "False", 2)}, why: "Programmed is False: the controller's words"},
		{name: "not accepted", conditions: []any{cond("Accepted", "False", 2), cond("Programmed", "True", 2)}, why: "Accepted is False: the controller's words"},
		{name: "programmed for an older generation", conditions: []any{cond("Accepted", "True", 2), cond("Programmed", "True", 1)}, why: "Programmed is for generation 1"},
		{name: "accepted only", conditions: []any{cond("Accepted", "True", 2)}, why: "no Programmed condition yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": GatewayName, "generation": int64(2)}}}
			if tc.conditions != nil {
				gw.Object["status"] = map[string]any{"conditions": tc.conditions}
			}
			ok, why := gatewayProgrammed(gw)
			if ok != tc.ok || why != tc.why {
				t.Errorf("got (%v, %q), want (%v, %q)", ok, why, tc.ok, tc.why)
			}
		})
	}
}

func TestFreePortsDiffer(t *testing.T) {
	ports, err := freePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 3 || ports[0] == ports[1] || ports[1] == ports[2] || ports[0] == ports[2] {
		t.Fatalf("three different ports: %v", ports)
	}
}
