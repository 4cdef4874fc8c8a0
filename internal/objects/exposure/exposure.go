// Package exposure derives a Workload's endpoints from the objects the runtime applied: the
// hosts of HTTPRoutes and Ingresses (Public, https where TLS covers the host), the ingress
// addresses of LoadBalancer Services (Public), and every Service's cluster DNS name
// (ClusterLocal). It also says which of them are still waiting for the platform (a load
// balancer without an address, an Ingress without one, a route its Gateway has not accepted).
// It is pure: the caller reads the objects, the Gateways routes attach to and the Services'
// readiness.
package exposure

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// Priorities: a public host beats a load balancer address beats a cluster-local name.
const (
	PriorityRoute        = 300
	PriorityLoadBalancer = 200
	PriorityClusterLocal = 100
)

// Input is what the runtime applied, as the API server has it now.
type Input struct {
	Objects []*unstructured.Unstructured
	// Gateways are the Gateways the HTTPRoutes attach to, keyed by namespace/name; a route's
	// scheme is https when its listener is HTTPS.
	Gateways map[string]*unstructured.Unstructured
	// Reachable tells whether the named Service has a ready endpoint.
	Reachable func(service string) bool
	// Provisioned are the HTTPRoutes and Ingresses the Workload's dependencies provisioned (a
	// route resource, as the community samples declare): published like the runtime's own
	// when they send traffic to one of the Workload's Services, and ignored otherwise.
	Provisioned []*unstructured.Unstructured
}

// Result is the exposures, best first, and what keeps some from being usable yet.
type Result struct {
	Exposures []scorev1b1.Exposure
	// Pending maps a runtime condition type (LBPending, IngressPending) to a message naming
	// the objects that wait.
	Pending map[string]string
}

// Compute derives the exposures from the applied objects.
func Compute(in Input) Result {
	res := Result{Pending: map[string]string{}}
	waiting := map[string][]string{}
	reachable := func(svc string) *bool {
		r := in.Reachable != nil && svc != "" && in.Reachable(svc)
		return &r
	}
	services := map[string]bool{}
	for _, o := range in.Objects {
		if gk := o.GroupVersionKind().GroupKind(); gk.Group == "" && gk.Kind == "Service" {
			services[o.GetName()] = true
		}
	}
	objects := in.Objects
	for _, o := range in.Provisioned {
		if services[backendService(o)] {
			objects = append(objects, o)
		}
	}
	for _, o := range objects {
		switch gk := o.GroupVersionKind().GroupKind(); {
		case gk.Group == "" && gk.Kind == "Service":
			exps, pending := service(o, reachable(o.GetName()))
			res.Exposures = append(res.Exposures, exps...)
			if pending {
				waiting[scorev1b1.ExposureConditionLBPending] = append(waiting[scorev1b1.ExposureConditionLBPending], "Service "+o.GetName())
			}
		case gk.Group == "networking.k8s.io" && gk.Kind == "Ingress":
			exps, pending := ingress(o, reachable)
			res.Exposures = append(res.Exposures, exps...)
			if pending {
				waiting[scorev1b1.ExposureConditionIngressPending] = append(waiting[scorev1b1.ExposureConditionIngressPending], "Ingress "+o.GetName())
			}
		case gk.Group == "gateway.networking.k8s.io" && gk.Kind == "HTTPRoute":
			exps, pending := httpRoute(o, in.Gateways, reachable)
			res.Exposures = append(res.Exposures, exps...)
			if pending {
				waiting[scorev1b1.ExposureConditionIngressPending] = append(waiting[scorev1b1.ExposureConditionIngressPending], "HTTPRoute "+o.GetName())
			}
		}
	}
	sort.SliceStable(res.Exposures, func(i, j int) bool { return res.Exposures[i].Priority > res.Exposures[j].Priority })
	res.Exposures = dedupe(res.Exposures)
	if len(res.Exposures) > 32 { // the API's bound; the best ones are kept
		res.Exposures = res.Exposures[:32]
	}
	for typ, objs := range waiting {
		sort.Strings(objs)
		what := "a load balancer address"
		if typ == scorev1b1.ExposureConditionIngressPending {
			what = "its ingress or gateway"
		}
		res.Pending[typ] = fmt.Sprintf("Waiting for %s: %s.", what, strings.Join(objs, ", "))
	}
	return res
}

// backendService is the Service a route's or an Ingress's first rule sends traffic to.
func backendService(o *unstructured.Unstructured) string {
	switch o.GetKind() {
	case "HTTPRoute":
		rules, _, _ := unstructured.NestedSlice(o.Object, "spec", "rules")
		if len(rules) > 0 {
			rule, _ := rules[0].(map[string]any)
			if refs, _, _ := unstructured.NestedSlice(rule, "backendRefs"); len(refs) > 0 {
				ref, _ := refs[0].(map[string]any)
				name, _ := ref["name"].(string)
				return name
			}
		}
	case "Ingress":
		rules, _, _ := unstructured.NestedSlice(o.Object, "spec", "rules")
		for _, r := range rules {
			m, _ := r.(map[string]any)
			if paths, ok, _ := unstructured.NestedSlice(m, "http", "paths"); ok && len(paths) > 0 {
				first, _ := paths[0].(map[string]any)
				name, _, _ := unstructured.NestedString(first, "backend", "service", "name")
				return name
			}
		}
	}
	return ""
}

// callOrder orders a Service's ports as a person would call them: TCP before UDP and SCTP; a
// port named or declared (appProtocol) http or https first; then by port number, lowest first.
func callOrder(ports []any) []map[string]any {
	out := make([]map[string]any, 0, len(ports))
	for _, p := range ports {
		if m, ok := p.(map[string]any); ok {
			out = append(out, m)
		}
	}
	web := func(m map[string]any) bool {
		name, _ := m["name"].(string)
		proto, _ := m["appProtocol"].(string)
		return isWeb(name) || isWeb(proto)
	}
	tcp := func(m map[string]any) bool {
		proto, _ := m["protocol"].(string)
		return proto == "" || proto == "TCP"
	}
	sort.SliceStable(out, func(i, j int) bool {
		if ti, tj := tcp(out[i]), tcp(out[j]); ti != tj {
			return ti
		}
		if wi, wj := web(out[i]), web(out[j]); wi != wj {
			return wi
		}
		pi, _ := asInt(out[i]["port"])
		pj, _ := asInt(out[j]["port"])
		return pi < pj
	})
	return out
}

func isWeb(s string) bool {
	s = strings.ToLower(s)
	return s == "http" || s == "https" || strings.HasPrefix(s, "http-") || strings.HasPrefix(s, "https-")
}

// portScheme is the URL scheme of a Service port: https when it is named or declared https,
// or is 443; udp or sctp for those protocols; http otherwise.
func portScheme(m map[string]any, port int64) (scheme, hint string) {
	if proto, _ := m["protocol"].(string); proto == "UDP" || proto == "SCTP" {
		return strings.ToLower(proto), "OTHER"
	}
	name, _ := m["name"].(string)
	app, _ := m["appProtocol"].(string)
	if strings.HasPrefix(strings.ToLower(name), "https") || strings.EqualFold(app, "https") || port == 443 {
		return "https", "HTTPS"
	}
	return "http", "HTTP"
}

// service publishes every port, in the order a person would call them (callOrder), under the
// Service's cluster DNS name and, for a LoadBalancer, under each ingress address; pending is a
// LoadBalancer without one.
func service(o *unstructured.Unstructured, reachable *bool) (exps []scorev1b1.Exposure, pending bool) {
	ports, _, _ := unstructured.NestedSlice(o.Object, "spec", "ports")
	typ, _, _ := unstructured.NestedString(o.Object, "spec", "type")
	lbs, _, _ := unstructured.NestedSlice(o.Object, "status", "loadBalancer", "ingress")
	var addresses []string
	for _, lb := range lbs {
		m, _ := lb.(map[string]any)
		if h, _ := m["hostname"].(string); h != "" {
			addresses = append(addresses, h)
		} else if ip, _ := m["ip"].(string); ip != "" {
			addresses = append(addresses, ip)
		}
	}
	for _, m := range callOrder(ports) {
		port, ok := asInt(m["port"])
		if !ok {
			continue
		}
		scheme, hint := portScheme(m, port)
		if typ == "LoadBalancer" {
			for _, addr := range addresses {
				exps = append(exps, scorev1b1.Exposure{URL: fmt.Sprintf("%s://%s", scheme, net.JoinHostPort(addr, strconv.FormatInt(port, 10))), Priority: PriorityLoadBalancer, Scope: scorev1b1.ScopePublic, SchemeHint: hint, Reachable: reachable})
			}
		}
		exps = append(exps, scorev1b1.Exposure{URL: fmt.Sprintf("%s://%s.%s.svc.cluster.local:%d", scheme, o.GetName(), o.GetNamespace(), port), Priority: PriorityClusterLocal, Scope: scorev1b1.ScopeClusterLocal, SchemeHint: hint, Reachable: reachable})
	}
	return exps, typ == "LoadBalancer" && len(addresses) == 0
}

// ingress publishes each rule's host (https when a TLS entry covers it) with the rule's
// first path; pending is an Ingress its controller has not given an address yet.
func ingress(o *unstructured.Unstructured, reachable func(string) *bool) (exps []scorev1b1.Exposure, pending bool) {
	tlsHosts := map[string]bool{}
	tls, _, _ := unstructured.NestedSlice(o.Object, "spec", "tls")
	for _, t := range tls {
		m, _ := t.(map[string]any)
		hosts, _ := m["hosts"].([]any)
		for _, h := range hosts {
			if s, ok := h.(string); ok {
				tlsHosts[s] = true
			}
		}
	}
	rules, _, _ := unstructured.NestedSlice(o.Object, "spec", "rules")
	for _, r := range rules {
		m, _ := r.(map[string]any)
		host, _ := m["host"].(string)
		if host == "" || strings.Contains(host, "*") {
			continue // no concrete host to publish
		}
		path, svc := "/", ""
		if paths, ok, _ := unstructured.NestedSlice(m, "http", "paths"); ok && len(paths) > 0 {
			first, _ := paths[0].(map[string]any)
			if p, _ := first["path"].(string); p != "" {
				path = p
			}
			svc, _, _ = unstructured.NestedString(first, "backend", "service", "name")
		}
		scheme, hint := "http", "HTTP"
		if tlsHosts[host] {
			scheme, hint = "https", "HTTPS"
		}
		exps = append(exps, scorev1b1.Exposure{URL: scheme + "://" + host + path, Priority: PriorityRoute, Scope: scorev1b1.ScopePublic, SchemeHint: hint, Reachable: reachable(svc)})
	}
	lbs, _, _ := unstructured.NestedSlice(o.Object, "status", "loadBalancer", "ingress")
	return exps, len(exps) > 0 && len(lbs) == 0
}

// httpRoute publishes each hostname with the first rule's first path prefix; https when a
// parent Gateway's listener for it is HTTPS. Pending is a route no parent has accepted.
func httpRoute(o *unstructured.Unstructured, gateways map[string]*unstructured.Unstructured, reachable func(string) *bool) (exps []scorev1b1.Exposure, pending bool) {
	hostnames, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "hostnames")
	path, svc := "/", ""
	if rules, _, _ := unstructured.NestedSlice(o.Object, "spec", "rules"); len(rules) > 0 {
		rule, _ := rules[0].(map[string]any)
		if matches, _, _ := unstructured.NestedSlice(rule, "matches"); len(matches) > 0 {
			m, _ := matches[0].(map[string]any)
			if v, _, _ := unstructured.NestedString(m, "path", "value"); v != "" {
				path = v
			}
		}
		if refs, _, _ := unstructured.NestedSlice(rule, "backendRefs"); len(refs) > 0 {
			ref, _ := refs[0].(map[string]any)
			svc, _ = ref["name"].(string)
		}
	}
	https := routeIsHTTPS(o, gateways)
	for _, host := range hostnames {
		if strings.Contains(host, "*") {
			continue
		}
		scheme, hint := "http", "HTTP"
		if https {
			scheme, hint = "https", "HTTPS"
		}
		exps = append(exps, scorev1b1.Exposure{URL: scheme + "://" + host + path, Priority: PriorityRoute, Scope: scorev1b1.ScopePublic, SchemeHint: hint, Reachable: reachable(svc)})
	}
	return exps, len(exps) > 0 && !routeAccepted(o)
}

// routeAccepted reports whether a parent reports the route Accepted.
func routeAccepted(o *unstructured.Unstructured) bool {
	parents, _, _ := unstructured.NestedSlice(o.Object, "status", "parents")
	for _, p := range parents {
		m, _ := p.(map[string]any)
		conds, _ := m["conditions"].([]any)
		for _, c := range conds {
			cm, _ := c.(map[string]any)
			if cm["type"] == "Accepted" && cm["status"] == "True" {
				return true
			}
		}
	}
	return false
}

// routeIsHTTPS reports whether the listener a route attaches to (its parentRef's
// sectionName, or every listener when it names none) is HTTPS.
func routeIsHTTPS(o *unstructured.Unstructured, gateways map[string]*unstructured.Unstructured) bool {
	refs, _, _ := unstructured.NestedSlice(o.Object, "spec", "parentRefs")
	for _, r := range refs {
		ref, _ := r.(map[string]any)
		ns, _ := ref["namespace"].(string)
		if ns == "" {
			ns = o.GetNamespace()
		}
		name, _ := ref["name"].(string)
		gw := gateways[ns+"/"+name]
		if gw == nil {
			continue
		}
		section, _ := ref["sectionName"].(string)
		listeners, _, _ := unstructured.NestedSlice(gw.Object, "spec", "listeners")
		for _, l := range listeners {
			lm, _ := l.(map[string]any)
			if section != "" && lm["name"] != section {
				continue
			}
			if lm["protocol"] == "HTTPS" {
				return true
			}
		}
	}
	return false
}

// GatewayKeys are the namespace/name keys of the Gateways the applied HTTPRoutes attach to.
func GatewayKeys(objects []*unstructured.Unstructured) []string {
	seen := map[string]bool{}
	var keys []string
	for _, o := range objects {
		if gk := o.GroupVersionKind().GroupKind(); gk.Group != "gateway.networking.k8s.io" || gk.Kind != "HTTPRoute" {
			continue
		}
		refs, _, _ := unstructured.NestedSlice(o.Object, "spec", "parentRefs")
		for _, r := range refs {
			ref, _ := r.(map[string]any)
			if kind, _ := ref["kind"].(string); kind != "" && kind != "Gateway" {
				continue
			}
			ns, _ := ref["namespace"].(string)
			if ns == "" {
				ns = o.GetNamespace()
			}
			name, _ := ref["name"].(string)
			if key := ns + "/" + name; name != "" && !seen[key] {
				seen[key] = true
				keys = append(keys, key)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

func dedupe(exps []scorev1b1.Exposure) []scorev1b1.Exposure {
	seen := map[string]bool{}
	out := exps[:0]
	for _, e := range exps {
		if !seen[e.URL] {
			seen[e.URL] = true
			out = append(out, e)
		}
	}
	return out
}

func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case float64:
		return int64(n), true
	}
	return 0, false
}
