package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
)

// A newcomer's app: a web service with postgres, a shared amqp queue, dns and a
// route on the dns host, plus a worker sharing the queue.
const (
	newcomerWeb = `apiVersion: score.dev/v1b1
metadata:
  name: web
containers:
  main:
    image: ghcr.io/example/web:1.0
    variables:
      DATABASE_URL: ${resources.db.uri}
      QUEUE_URL: ${resources.queue.uri}
service:
  ports:
    http:
      port: 8080
resources:
  db:
    type: postgres
  queue:
    type: amqp
    id: jobs
  dns:
    type: dns
  route:
    type: route
    params:
      host: ${resources.dns.host}
      path: /
      port: http
`
	newcomerWorker = `apiVersion: score.dev/v1b1
metadata:
  name: worker
containers:
  main:
    image: ghcr.io/example/worker:1.0
    variables:
      QUEUE_URL: ${resources.queue.uri}
resources:
  queue:
    type: amqp
    id: jobs
`
)

// The newcomer's app, applied with scorectl as a user applies it, is Ready on the development
// cluster: the gateway controller make dev runs (Contour, serving the Gateway
// score-system/score-dev) accepts the HTTPRoute the route resource provisions and resolves its
// backend, and the web service's endpoint is the route's URL. Before the cluster had a Gateway,
// the web service stayed NetworkUnavailable until apply's timeout.
func TestRouteAcceptedByTheDevelopmentGateway(t *testing.T) {
	run := scorectl(t)
	ns := "e2e-gateway"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, content := range map[string]string{"web.yaml": newcomerWeb, "worker.yaml": newcomerWorker} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := run("apply", "-f", dir, "-n", ns, "--timeout", "3m")
	if err != nil || !regexp.MustCompile(`(?m)^web +True +Succeeded +http://web-dns\.`+ns+`\.dev\.local/$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^worker +True +Succeeded`).MatchString(out) {
		t.Fatalf("apply: %v\n%s", err, out)
	}

	routes := &unstructured.UnstructuredList{}
	routes.SetGroupVersionKind(schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRouteList"})
	if err := c.List(ctx, routes, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(routes.Items) != 1 {
		t.Fatalf("the route resource provisions one HTTPRoute, found %d", len(routes.Items))
	}
	route := &routes.Items[0]
	var status struct {
		Parents []struct {
			ControllerName string             `json:"controllerName"`
			ParentRef      map[string]string  `json:"parentRef"`
			Conditions     []metav1.Condition `json:"conditions"`
		} `json:"parents"`
	}
	raw, _ := json.Marshal(route.Object["status"])
	if err := json.Unmarshal(raw, &status); err != nil {
		t.Fatal(err)
	}
	if len(status.Parents) != 1 {
		t.Fatalf("the route has one parent, the development Gateway: %s", raw)
	}
	parent := status.Parents[0]
	if parent.ControllerName != "projectcontour.io/gateway-controller" || parent.ParentRef["namespace"] != devenv.GatewayNamespace || parent.ParentRef["name"] != devenv.GatewayName {
		t.Errorf("the route's parent status is not Contour's for the Gateway %s/%s: %s", devenv.GatewayNamespace, devenv.GatewayName, raw)
	}
	for _, typ := range []string{"Accepted", "ResolvedRefs"} {
		if cond := meta.FindStatusCondition(parent.Conditions, typ); cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != route.GetGeneration() {
			t.Errorf("the route is not %s for its generation %d: %+v", typ, route.GetGeneration(), cond)
		}
	}

	// The Workload's endpoint is the route's URL: its host name and path.
	hosts, _, _ := unstructured.NestedStringSlice(route.Object, "spec", "hostnames")
	rules, _, _ := unstructured.NestedSlice(route.Object, "spec", "rules")
	path := ""
	if len(rules) == 1 {
		matches, _, _ := unstructured.NestedSlice(rules[0].(map[string]any), "matches")
		if len(matches) == 1 {
			path, _, _ = unstructured.NestedString(matches[0].(map[string]any), "path", "value")
		}
	}
	web := &scorev1b1.Workload{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, web); err != nil {
		t.Fatal(err)
	}
	if len(hosts) != 1 || path == "" || web.Status.Endpoint == nil || *web.Status.Endpoint != "http://"+hosts[0]+path {
		t.Errorf("the endpoint %v is not the route's URL (hosts %v, path %q)", web.Status.Endpoint, hosts, path)
	}

	// The Gateway is Programmed, and counts the route among those attached to its listener.
	if err := devenv.WaitGatewayProgrammed(ctx, c, 0); err != nil {
		t.Error(err)
	}
	gw := &unstructured.Unstructured{}
	gw.SetGroupVersionKind(schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "Gateway"})
	if err := c.Get(ctx, client.ObjectKey{Namespace: devenv.GatewayNamespace, Name: devenv.GatewayName}, gw); err != nil {
		t.Fatal(err)
	}
	listeners, _, _ := unstructured.NestedSlice(gw.Object, "status", "listeners")
	if len(listeners) != 1 {
		t.Fatalf("the Gateway's listeners: %v", listeners)
	}
	if attached, _, _ := unstructured.NestedInt64(listeners[0].(map[string]any), "attachedRoutes"); attached < 1 {
		t.Errorf("the Gateway's listener counts %d routes attached", attached)
	}
}
