package exposure

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

func obj(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

const (
	clusterIP = `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: team}
spec:
  ports: [{port: 80, targetPort: 8080, protocol: TCP}, {port: 53, protocol: UDP}]`
	lbPending = `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: team}
spec:
  type: LoadBalancer
  ports: [{port: 443, protocol: TCP}]`
	lbReady = lbPending + `
status:
  loadBalancer:
    ingress: [{ip: 203.0.113.7}, {hostname: lb.example.com}]`
	ingressTLS = `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: team}
spec:
  tls: [{hosts: [web.example.com]}]
  rules:
    - host: web.example.com
      http: {paths: [{path: /api, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}
    - host: plain.example.com
      http: {paths: [{pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}
    - host: "*.wild.example.com"
      http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}
status:
  loadBalancer: {ingress: [{ip: 198.51.100.1}]}`
	ingressNoAddress = `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: team}
spec:
  rules: [{host: web.example.com}]`
	route = `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: team}
spec:
  parentRefs: [{name: public, namespace: infra, sectionName: https}]
  hostnames: [web.apps.example.com]
  rules: [{matches: [{path: {type: PathPrefix, value: /shop}}], backendRefs: [{name: web, port: 80}]}]`
	acceptedRoute = route + `
status:
  parents: [{parentRef: {name: public}, controllerName: example.com/gw, conditions: [{type: Accepted, status: "True"}]}]`
	gateway = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: public, namespace: infra}
spec:
  gatewayClassName: example
  listeners: [{name: http, protocol: HTTP, port: 80}, {name: https, protocol: HTTPS, port: 443}]`
)

// A route a dependency provisioned (the Workload's route resource) is the Workload's public URL
// when it sends traffic to the Workload's Service; one to another Service is not its business.
func TestProvisionedRoutes(t *testing.T) {
	yes := true
	ready := func(string) bool { return true }
	web := obj(t, `{apiVersion: v1, kind: Service, metadata: {name: web, namespace: team}, spec: {ports: [{name: http, port: 80}]}}`)
	toOther := obj(t, `{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: other, namespace: team}, spec: {hostnames: [other.dev.local], rules: [{backendRefs: [{name: other, port: 80}]}]}}`)
	got := Compute(Input{Reachable: ready, Objects: []*unstructured.Unstructured{web}, Provisioned: []*unstructured.Unstructured{obj(t, acceptedRoute), toOther}})
	want := []scorev1b1.Exposure{
		{URL: "http://web.apps.example.com/shop", Priority: PriorityRoute, Scope: scorev1b1.ScopePublic, SchemeHint: "HTTP", Reachable: &yes},
		{URL: "http://web.team.svc.cluster.local:80", Priority: PriorityClusterLocal, Scope: scorev1b1.ScopeClusterLocal, SchemeHint: "HTTP", Reachable: &yes},
	}
	if !reflect.DeepEqual(got.Exposures, want) {
		t.Fatalf("exposures:\n got %s\nwant %s", dump(got.Exposures), dump(want))
	}
	pending := Compute(Input{Reachable: ready, Objects: []*unstructured.Unstructured{web}, Provisioned: []*unstructured.Unstructured{obj(t, route)}})
	if pending.Pending[scorev1b1.ExposureConditionIngressPending] != "Waiting for its ingress or gateway: HTTPRoute web." {
		t.Fatalf("a provisioned route no gateway accepted is pending: %v", pending.Pending)
	}
}

func TestCompute(t *testing.T) {
	yes, no := true, false
	ready := func(svc string) bool { return svc == "web" || svc == "api" }
	cases := []struct {
		name     string
		objects  []string
		gateways bool
		want     []scorev1b1.Exposure
		pending  map[string]string
	}{
		{
			name:    "a ClusterIP Service: each port under its cluster DNS name",
			objects: []string{clusterIP},
			want: []scorev1b1.Exposure{
				{URL: "http://web.team.svc.cluster.local:80", Priority: PriorityClusterLocal, Scope: scorev1b1.ScopeClusterLocal, SchemeHint: "HTTP", Reachable: &yes},
				{URL: "udp://web.team.svc.cluster.local:53", Priority: PriorityClusterLocal, Scope: scorev1b1.ScopeClusterLocal, SchemeHint: "OTHER", Reachable: &yes},
			},
			pending: map[string]string{},
		},
		{
			name:    "a LoadBalancer without an address is pending, its cluster name still published",
			objects: []string{lbPending},
			want:    []scorev1b1.Exposure{{URL: "https://web.team.svc.cluster.local:443", Priority: PriorityClusterLocal, Scope: scorev1b1.ScopeClusterLocal, SchemeHint: "HTTPS", Reachable: &yes}},
			pending: map[string]string{scorev1b1.ExposureConditionLBPending: "Waiting for a load balancer address: Service web."},
		},
		{
			name:    "a LoadBalancer's addresses are public and come first",
			objects: []string{lbReady},
			want: []scorev1b1.Exposure{
				{URL: "https://203.0.113.7:443", Priority: PriorityLoadBalancer, Scope: scorev1b1.ScopePublic, SchemeHint: "HTTPS", Reachable: &yes},
				{URL: "https://lb.example.com:443", Priority: PriorityLoadBalancer, Scope: scorev1b1.ScopePublic, SchemeHint: "HTTPS", Reachable: &yes},
				{URL: "https://web.team.svc.cluster.local:443", Priority: PriorityClusterLocal, Scope: scorev1b1.ScopeClusterLocal, SchemeHint: "HTTPS", Reachable: &yes},
			},
			pending: map[string]string{},
		},
		{
			name:    "Ingress hosts are public, https where TLS covers them; wildcards are not published",
			objects: []string{clusterIP, ingressTLS},
			want: []scorev1b1.Exposure{
				{URL: "https://web.example.com/api", Priority: PriorityRoute, Scope: scorev1b1.ScopePublic, SchemeHint: "HTTPS", Reachable: &yes},
				{URL: "http://plain.example.com/", Priority: PriorityRoute, Scope: scorev1b1.ScopePublic, SchemeHint: "HTTP", Reachable: &yes},
				{URL: "http://web.team.svc.cluster.local:80", Priority: PriorityClusterLocal, Scope: scorev1b1.ScopeClusterLocal, SchemeHint: "HTTP", Reachable: &yes},
				{URL: "udp://web.team.svc.cluster.local:53", Priority: PriorityClusterLocal, Scope: scorev1b1.ScopeClusterLocal, SchemeHint: "OTHER", Reachable: &yes},
			},
			pending: map[string]string{},
		},
		{
			name:    "an Ingress without an address is pending; a rule without a backend is not reachable",
			objects: []string{ingressNoAddress},
			want:    []scorev1b1.Exposure{{URL: "http://web.example.com/", Priority: PriorityRoute, Scope: scorev1b1.ScopePublic, SchemeHint: "HTTP", Reachable: &no}},
			pending: map[string]string{scorev1b1.ExposureConditionIngressPending: "Waiting for its ingress or gateway: Ingress web."},
		},
		{
			name:    "an HTTPRoute not accepted yet is pending; without its Gateway the scheme is http",
			objects: []string{route},
			want:    []scorev1b1.Exposure{{URL: "http://web.apps.example.com/shop", Priority: PriorityRoute, Scope: scorev1b1.ScopePublic, SchemeHint: "HTTP", Reachable: &yes}},
			pending: map[string]string{scorev1b1.ExposureConditionIngressPending: "Waiting for its ingress or gateway: HTTPRoute web."},
		},
		{
			name:     "an accepted HTTPRoute on an HTTPS listener is https",
			objects:  []string{acceptedRoute},
			gateways: true,
			want:     []scorev1b1.Exposure{{URL: "https://web.apps.example.com/shop", Priority: PriorityRoute, Scope: scorev1b1.ScopePublic, SchemeHint: "HTTPS", Reachable: &yes}},
			pending:  map[string]string{},
		},
		{
			name:    "ports in the order a person calls them: TCP, then named http, then the lowest",
			objects: []string{`{apiVersion: v1, kind: Service, metadata: {name: api, namespace: team}, spec: {ports: [{name: admin, port: 9000}, {name: dns, port: 53, protocol: UDP}, {name: grpc, port: 5050}, {name: http, port: 8080}]}}`},
			want: []scorev1b1.Exposure{
				{URL: "http://api.team.svc.cluster.local:8080", Priority: PriorityClusterLocal, Scope: scorev1b1.ScopeClusterLocal, SchemeHint: "HTTP", Reachable: &yes},
				{URL: "http://api.team.svc.cluster.local:5050", Priority: PriorityClusterLocal, Scope: scorev1b1.ScopeClusterLocal, SchemeHint: "HTTP", Reachable: &yes},
				{URL: "http://api.team.svc.cluster.local:9000", Priority: PriorityClusterLocal, Scope: scorev1b1.ScopeClusterLocal, SchemeHint: "HTTP", Reachable: &yes},
				{URL: "udp://api.team.svc.cluster.local:53", Priority: PriorityClusterLocal, Scope: scorev1b1.ScopeClusterLocal, SchemeHint: "OTHER", Reachable: &yes},
			},
			pending: map[string]string{},
		},
		{
			name:    "no Service, no route: nothing to publish, nothing pending",
			objects: []string{`{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: team}}`},
			pending: map[string]string{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Reachable: ready}
			for _, doc := range tc.objects {
				in.Objects = append(in.Objects, obj(t, doc))
			}
			if tc.gateways {
				in.Gateways = map[string]*unstructured.Unstructured{"infra/public": obj(t, gateway)}
			}
			got := Compute(in)
			if !reflect.DeepEqual(got.Exposures, tc.want) {
				t.Errorf("exposures:\n got %s\nwant %s", dump(got.Exposures), dump(tc.want))
			}
			if !reflect.DeepEqual(got.Pending, tc.pending) {
				t.Errorf("pending: got %v, want %v", got.Pending, tc.pending)
			}
		})
	}
}

func TestGatewayKeys(t *testing.T) {
	objs := []*unstructured.Unstructured{obj(t, route), obj(t, acceptedRoute), obj(t, clusterIP), obj(t, `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: other, namespace: team}
spec:
  parentRefs: [{name: internal}, {kind: Service, name: mesh}]`)}
	if got, want := GatewayKeys(objs), []string{"infra/public", "team/internal"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func dump(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}
