package provisioning

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/tplfuncs"
)

// catalogParams are the params each catalog type is tried with; the web workload has the
// Service port 8080 in front of the container port 8081.
var catalogParams = map[string]map[string]any{
	"route":        {"host": "web.team.dev.local", "path": "/api", "port": "web"},
	"service-port": {"workload": "web", "port": "web"},
}

// catalogTypes are the types the development catalog must serve.
var catalogTypes = []string{"amqp", "dns", "endpoint", "environment", "kafka-topic", "mongodb", "mysql", "postgres", "redis", "route", "s3", "service", "service-port", "volume"}

// catalogDefinition is the catalog's definition of the type.
func catalogDefinition(t *testing.T, cfg *orchconfig.Config, typ string) orchconfig.Provisioner {
	t.Helper()
	for _, p := range cfg.Provisioners {
		if p.URI == "template://score-dev/"+typ {
			return p
		}
	}
	t.Fatalf("the catalog has no template://score-dev/%s", typ)
	return orchconfig.Provisioner{}
}

// loadCatalog assembles config/provisioners/*.yaml with the sample profiles, as make dev
// does, and returns the validated config.
func loadCatalog(t testing.TB) *orchconfig.Config {
	t.Helper()
	assembled, err := orchconfig.DevelopmentConfig(os.DirFS("../../.."))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := orchconfig.Parse(assembled)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Every catalog definition is a valid config entry, renders with the params it documents,
// produces every expected output, keeps its generated values stable across runs, and hands
// out generated secrets only through secret references: never in a plain output, never in a
// manifest other than a Secret.
func TestCatalog(t *testing.T) {
	cfg := loadCatalog(t)
	served := map[string]orchconfig.Provisioner{}
	for _, p := range cfg.Provisioners {
		if strings.HasPrefix(p.URI, "template://score-dev/") {
			if _, dup := served[p.Type]; dup {
				t.Fatalf("two catalog definitions serve %s", p.Type)
			}
			served[p.Type] = p
		}
	}
	var got []string
	for typ := range served {
		got = append(got, typ)
	}
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(catalogTypes, ",") {
		t.Fatalf("the catalog serves %v, want %v", got, catalogTypes)
	}
	// The platform's Secret the environment definition refers to.
	platform := map[SecretRef]string{{Name: "score-environment", Key: "API_TOKEN"}: "platform-token-value-0123456789"}
	services := map[string]NetworkService{
		"web": ServiceOf("web", &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"web": {Port: 8080, TargetPort: ptr.To(int32(8081))}}}),
		// The Workload the service and endpoint types name by the resource's key ("dep").
		"dep": ServiceOf("dep", &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"grpc": {Port: 50}, "http": {Port: 8080, TargetPort: ptr.To(int32(80))}}}),
	}

	for _, typ := range catalogTypes {
		def := served[typ]
		t.Run(typ, func(t *testing.T) {
			if def.DeprovisionPolicy == "" || def.Description == "" {
				t.Errorf("a catalog definition states its deprovision policy and description")
			}
			id := NewIdentity("team", "web", "dep", typ, "", "")
			data := Data{Guid: id.Guid(), Uid: id.Uid(), Type: typ, Class: id.Class, Id: id.ID, Namespace: "team", Instance: id.Hash(),
				Params: catalogParams[typ], SourceWorkload: "web", WorkloadServices: services, State: map[string]any{}, Shared: map[string]any{}}
			first, err := RenderTemplates(def, data)
			if err != nil {
				t.Fatal(err)
			}
			data.State, data.Shared = first.State, PatchMap(data.Shared, first.Shared)
			second, err := renderInRun(def, data)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := mustJSON(t, first.State), mustJSON(t, second.State); a != b {
				t.Fatalf("the state changes between runs:\n%s\n%s", a, b)
			}
			if a, b := mustJSON(t, first.Manifests), mustJSON(t, second.Manifests); a != b {
				t.Fatal("the manifests change between runs")
			}
			if dataStores[typ] {
				checkNetworkPolicy(t, second.Manifests, id.Hash(), nil)
				// Shared across namespaces, the policy admits the consumers of the namespaces the
				// platform's sharing selects too, and no other pods of those namespaces.
				shared := orchconfig.Selector{MatchLabels: map[string]string{"share": "yes"},
					MatchExpressions: []orchconfig.SelectorRequirement{{Key: "tier", Operator: "In", Values: []string{"gold"}}}}
				sharedData := data
				sharedData.ConsumerNamespaces = shared.LabelSelector()
				res, err := RenderTemplates(def, sharedData)
				if err != nil {
					t.Fatal(err)
				}
				checkNetworkPolicy(t, res.Manifests, id.Hash(), sharedData.ConsumerNamespaces)
			}
			inManifests := SecretsInManifests(second.Manifests)
			plain, secret, err := SplitOutputs(second.Outputs, func(r SecretRef) (string, error) {
				if v, ok := inManifests[r]; ok {
					return v, nil
				}
				if v, ok := platform[r]; ok && def.MayReferToPlatformSecret(r.Name) {
					return v, nil
				}
				return "", fmt.Errorf("no secret %s key %s", r.Name, r.Key)
			})
			if err != nil {
				t.Fatal(err)
			}
			if missing := MissingOutputs(def.ExpectedOutputs, plain, secret); len(missing) > 0 {
				t.Fatalf("expected outputs missing: %v (plain %v)", missing, plain)
			}
			if len(plain)+len(secret) > len(def.ExpectedOutputs) {
				t.Errorf("outputs beyond expected_outputs are not checked: expected %v, got %d", def.ExpectedOutputs, len(plain)+len(secret))
			}
			for _, v := range secretValues(inManifests, platform) {
				if strings.Contains(mustJSON(t, plain), v) {
					t.Errorf("a generated secret is in a plain output")
				}
				for _, m := range second.Manifests {
					if m["kind"] != "Secret" && strings.Contains(mustJSON(t, m), v) {
						t.Errorf("a generated secret is in %s %v", m["kind"], m["metadata"])
					}
				}
			}
			checkCatalogType(t, typ, plain, secret, second)
		})
	}
}

// secretValues are the values of the Secrets a run creates and of the platform's Secret.
func secretValues(sets ...map[SecretRef]string) []string {
	var out []string
	for _, set := range sets {
		for _, v := range set {
			out = append(out, v)
		}
	}
	return out
}

// checkCatalogType checks what is particular to a type.
func checkCatalogType(t *testing.T, typ string, plain map[string]any, secret map[string]string, res Result) {
	t.Helper()
	switch typ {
	case "postgres", "mysql", "mongodb", "amqp", "redis":
		if pw := secret["password"]; len(pw) < 32 {
			t.Errorf("password is %d characters", len(pw))
		}
		if uri := secret["uri"]; !strings.Contains(uri, secret["password"]) || !strings.Contains(uri, fmt.Sprint(plain["host"])) {
			t.Errorf("the uri holds the host and the password")
		}
	case "s3":
		if len(secret["access_key_id"]) != 20 || len(secret["secret_key"]) != 40 || plain["region"] != "us-east-1" {
			t.Errorf("s3 credentials: %d/%d characters, region %v", len(secret["access_key_id"]), len(secret["secret_key"]), plain["region"])
		}
	case "kafka-topic":
		if plain["num_partitions"] != 3 || !strings.HasPrefix(fmt.Sprint(plain["name"]), "topic-") || res.Shared["kafka"] == nil {
			t.Errorf("kafka-topic outputs %v, shared %v", plain, res.Shared)
		}
	case "dns":
		if plain["host"] != "web-dep.team.dev.local" {
			t.Errorf("dns host %v", plain["host"])
		}
	case "service-port":
		if plain["hostname"] != "web.team.svc.cluster.local" || plain["port"] != 8080 {
			t.Errorf("service-port is the Service's name and port, not the target port: %v", plain)
		}
	case "service":
		// The port a person would call: the one named http, not the lowest.
		if plain["name"] != "dep" || plain["host"] != "dep.team.svc.cluster.local" || plain["port"] != 8080 || mustJSON(t, plain["ports"]) != `{"50":50,"8080":8080,"grpc":50,"http":8080}` {
			t.Errorf("service outputs %v", plain)
		}
	case "endpoint":
		if plain["url"] != "http://dep.team.svc.cluster.local:8080" {
			t.Errorf("endpoint url %v", plain["url"])
		}
	case "route":
		route := mustJSON(t, res.Manifests)
		for _, want := range []string{`"kind":"HTTPRoute"`, `"hostnames":["web.team.dev.local"]`, `"value":"/api"`, `{"name":"web","port":8080}`} {
			if !strings.Contains(route, want) {
				t.Errorf("the route lacks %s: %s", want, route)
			}
		}
	case "volume":
		if mustJSON(t, plain["source"]) != fmt.Sprintf(`{"persistentVolumeClaim":{"claimName":%q}}`, plain["name"]) {
			t.Errorf("volume source %v", plain["source"])
		}
	case "environment":
		if secret["API_TOKEN"] != "platform-token-value-0123456789" || plain["ENVIRONMENT"] != "development" {
			t.Errorf("environment: plain %v, secret keys %d", plain, len(secret))
		}
	}
}

// A definition that names another Workload waits for it, and says for what, instead of failing:
// the Workload's creation brings the claim back.
func TestCatalogWaitsForWorkloads(t *testing.T) {
	cfg := loadCatalog(t)
	services := map[string]NetworkService{
		"web":    ServiceOf("web", &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"web": {Port: 8080}}}),
		"worker": ServiceOf("worker", nil),
	}
	cases := []struct {
		name, typ, key string
		params         map[string]any
		want           string
	}{
		{"service-port of a workload not deployed", "service-port", "dep", map[string]any{"workload": "db", "port": "web"}, "workload db to be deployed in namespace team"},
		{"service-port of an undeclared port", "service-port", "dep", map[string]any{"workload": "web", "port": "9090"}, "workload web to publish service port 9090"},
		{"service of a workload not deployed", "service", "backend", nil, "workload backend to be deployed in namespace team"},
		{"service of a workload without a port", "service", "worker", nil, "workload worker to publish a port"},
		{"endpoint of a workload not deployed", "endpoint", "backend", map[string]any{"port": 8181}, "runs no mock server"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			def := catalogDefinition(t, cfg, tc.typ)
			id := NewIdentity("team", "web", tc.key, tc.typ, "", "")
			_, err := RenderTemplates(def, Data{Guid: id.Guid(), Uid: id.Uid(), Id: id.ID, Namespace: "team", Params: tc.params, SourceWorkload: "web", WorkloadServices: services})
			var waiting *tplfuncs.Waiting
			if !errors.As(err, &waiting) || !strings.Contains(waiting.For, tc.want) {
				t.Fatalf("want a wait for %q, got %v", tc.want, err)
			}
		})
	}
}

// Bad params fail with a message naming the param, not with a broken object.
func TestCatalogRefusesBadParams(t *testing.T) {
	cfg := loadCatalog(t)
	services := map[string]NetworkService{"web": ServiceOf("web", &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"web": {Port: 8080}}})}
	cases := []struct {
		name, typ string
		params    map[string]any
		want      string
	}{
		{"route without host", "route", map[string]any{"port": "web"}, "params.host"},
		{"route with an upper-case host", "route", map[string]any{"host": "Web.dev", "port": "web"}, "params.host"},
		{"route with a relative path", "route", map[string]any{"host": "web.dev", "path": "api", "port": "web"}, "params.path"},
		{"route to an undeclared port", "route", map[string]any{"host": "web.dev", "port": "admin"}, "no service port admin"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			def := catalogDefinition(t, cfg, tc.typ)
			id := NewIdentity("team", "web", "dep", tc.typ, "", "")
			_, err := RenderTemplates(def, Data{Guid: id.Guid(), Uid: id.Uid(), Id: id.ID, Namespace: "team", Params: tc.params, SourceWorkload: "web", WorkloadServices: services})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error naming %q, got %v", tc.want, err)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// dataStores are the catalog types whose instances run servers: each admits only its
// consumers' pods.
var dataStores = map[string]bool{"postgres": true, "mysql": true, "redis": true, "mongodb": true, "amqp": true, "s3": true}

// checkNetworkPolicy finds the instance's NetworkPolicy: it selects the pods of the
// instance's workload objects and admits ingress only from pods labelled as its consumers, in
// its namespace and, for an instance shared across namespaces, in the namespaces selected.
func checkNetworkPolicy(t *testing.T, manifests []map[string]any, instance string, namespaces map[string]any) {
	t.Helper()
	var policy, server map[string]any
	for _, m := range manifests {
		switch m["kind"] {
		case "NetworkPolicy":
			policy = m
		case "StatefulSet", "Deployment":
			server = m
		}
	}
	if policy == nil || server == nil {
		t.Fatalf("a data store emits a NetworkPolicy and a server: %v %v", policy != nil, server != nil)
	}
	spec := policy["spec"].(map[string]any)
	selects := spec["podSelector"].(map[string]any)["matchLabels"].(map[string]any)
	podLabels := server["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)
	for k, v := range selects {
		if podLabels[k] != v {
			t.Fatalf("the policy selects %v, the pods are labelled %v", selects, podLabels)
		}
	}
	ingress := spec["ingress"].([]any)
	from := ingress[0].(map[string]any)["from"].([]any)
	consumers := map[string]any{"matchLabels": map[string]any{"consumer.score.dev/" + instance: "true"}}
	want := []any{map[string]any{"podSelector": consumers}}
	if namespaces != nil {
		want = append(want, map[string]any{"namespaceSelector": namespaces, "podSelector": consumers})
	}
	if len(ingress) != 1 || mustJSON(t, from) != mustJSON(t, want) {
		t.Fatalf("ingress from %s, want %s", mustJSON(t, from), mustJSON(t, want))
	}
}
