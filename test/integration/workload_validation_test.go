package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/scorefile"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/conformance"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// strict rejects unknown fields instead of pruning them, as kubectl does by default.
var strict = client.FieldValidation("Strict")

// validWorkload is a Workload that exercises every part of the spec; each case breaks it
// in one place.
func validWorkload(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "score.dev/v1b1",
		"kind":       "Workload",
		"metadata":   map[string]any{"name": name, "namespace": "default"},
		"spec": map[string]any{
			"containers": map[string]any{
				"main": map[string]any{
					"image":     "nginx:1.27",
					"command":   []any{"/bin/sh", "-c"},
					"args":      []any{"nginx -g 'daemon off;'"},
					"variables": map[string]any{"DB_HOST": "${resources.db.host}"},
					"files": map[string]any{
						"/etc/app.conf": map[string]any{"content": "name=${metadata.name}", "mode": "0644"},
					},
					"volumes": map[string]any{
						"/data": map[string]any{"source": "${resources.data.source}", "readOnly": true},
					},
					"resources": map[string]any{
						"limits":   map[string]any{"cpu": "500m", "memory": "256Mi"},
						"requests": map[string]any{"cpu": "0.25", "memory": "128M"},
					},
					"livenessProbe": map[string]any{
						"httpGet": map[string]any{"path": "/healthz", "port": int64(8080), "scheme": "HTTP",
							"httpHeaders": []any{map[string]any{"name": "X-Probe", "value": "1"}}},
					},
					"readinessProbe": map[string]any{"exec": map[string]any{"command": []any{"true"}}},
					"before":         map[string]any{"init": map[string]any{"ready": "complete"}},
				},
				"init": map[string]any{"image": "busybox"},
			},
			"service": map[string]any{"ports": map[string]any{
				"web": map[string]any{"port": int64(80), "targetPort": int64(8080), "protocol": "TCP"},
			}},
			"resources": map[string]any{
				"db":   map[string]any{"type": "postgres", "class": "default", "id": "orders.db", "params": map[string]any{"size": "small"}},
				"data": map[string]any{"type": "volume", "metadata": map[string]any{"annotations": map[string]any{"a": "b"}}},
			},
		},
	}}
}

func set(path string, value any) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		if err := unstructured.SetNestedField(u.Object, value, strings.Split(path, "|")...); err != nil {
			panic(err)
		}
	}
}

func remove(path string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		unstructured.RemoveNestedField(u.Object, strings.Split(path, "|")...)
	}
}

func rename(path, from, to string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		m, _, _ := unstructured.NestedMap(u.Object, strings.Split(path, "|")...)
		m[to] = m[from]
		delete(m, from)
		set(path, m)(u)
	}
}

const main = "spec|containers|main|"

var bracketKey = regexp.MustCompile(`\[([^][0-9 ][^][ ]*)\]`)

func TestWorkloadAdmission(t *testing.T) {
	many := map[string]any{}
	for i := 0; i < 33; i++ {
		many[fmt.Sprintf("c%02d", i)] = map[string]any{"image": "busybox"}
	}
	cases := []struct {
		name    string
		mutate  func(*unstructured.Unstructured)
		field   string // the field the message must name
		message string // what it must say
	}{
		{"name of one character", set("metadata|name", "a"), "metadata.name", "2-63 characters"},
		{"name with a dot", set("metadata|name", "web.v2"), "metadata.name", "a Workload name must be"},
		{"containers missing", remove("spec|containers"), "spec.containers", "Required value"},
		{"containers empty", set("spec|containers", map[string]any{}), "spec.containers", "at least 1"},
		{"too many containers", set("spec|containers", many), "spec.containers", "at most 32"},
		{"container name upper case", rename("spec|containers", "init", "Init"), "spec.containers", `container name "Init"`},
		{"container name one character", rename("spec|containers", "init", "i"), "spec.containers", `container name "i"`},
		{"image empty", set(main+"image", ""), "spec.containers.main.image", "at least 1 chars"},
		{"image missing", remove(main + "image"), "spec.containers.main.image", "Required value"},
		{"image not a string", set(main+"image", int64(7)), "spec.containers.main.image", "must be of type string"},
		{"command not a list", set(main+"command", "run"), "spec.containers.main.command", "must be of type array"},
		{"variable name with =", set(main+"variables", map[string]any{"A=B": "x"}), "spec.containers.main.variables", "must not contain '='"},
		{"variable name empty", set(main+"variables", map[string]any{"": "x"}), "spec.containers.main.variables", "must be non-empty"},
		{"file with content and source", set(main+"files|/etc/app.conf|source", "app.conf"), "spec.containers.main.files./etc/app.conf", "exactly one of content, binaryContent or source"},
		{"file with no content", set(main+"files|/etc/app.conf", map[string]any{"mode": "0644"}), "spec.containers.main.files./etc/app.conf", "exactly one of content, binaryContent or source"},
		{"file mode not octal", set(main+"files|/etc/app.conf|mode", "0999"), "spec.containers.main.files./etc/app.conf.mode", "should match"},
		{"file mode symbolic", set(main+"files|/etc/app.conf|mode", "rw-r--r--"), "spec.containers.main.files./etc/app.conf.mode", "should match"},
		{"file source empty", set(main+"files|/etc/app.conf", map[string]any{"source": ""}), "spec.containers.main.files./etc/app.conf.source", "at least 1 chars"},
		{"volume without source", set(main+"volumes|/data", map[string]any{"path": "sub"}), "spec.containers.main.volumes./data.source", "Required value"},
		{"volume source empty", set(main+"volumes|/data|source", ""), "spec.containers.main.volumes./data.source", "at least 1 chars"},
		{"cpu limit not a quantity", set(main+"resources|limits|cpu", "two"), "spec.containers.main.resources.limits.cpu", "should match"},
		{"memory request with a space", set(main+"resources|requests|memory", "1.5 GB"), "spec.containers.main.resources.requests.memory", "should match"},
		{"liveness probe empty", set(main+"livenessProbe", map[string]any{}), "spec.containers.main.livenessProbe", "a probe must set httpGet or exec"},
		{"readiness probe empty", set(main+"readinessProbe", map[string]any{}), "spec.containers.main.readinessProbe", "a probe must set httpGet or exec"},
		{"probe port zero", set(main+"livenessProbe|httpGet|port", int64(0)), "spec.containers.main.livenessProbe.httpGet.port", "greater than or equal to 1"},
		{"probe port too large", set(main+"livenessProbe|httpGet|port", int64(70000)), "spec.containers.main.livenessProbe.httpGet.port", "less than or equal to 65535"},
		{"probe path missing", remove(main + "livenessProbe|httpGet|path"), "spec.containers.main.livenessProbe.httpGet.path", "Required value"},
		{"probe scheme unknown", set(main+"livenessProbe|httpGet|scheme", "FTP"), "spec.containers.main.livenessProbe.httpGet.scheme", `supported values: "HTTP", "HTTPS"`},
		{"probe header name with a space", set(main+"livenessProbe|httpGet|httpHeaders", []any{map[string]any{"name": "X Probe", "value": "1"}}), "spec.containers.main.livenessProbe.httpGet.httpHeaders[0].name", "should match"},
		{"probe header value empty", set(main+"livenessProbe|httpGet|httpHeaders", []any{map[string]any{"name": "X-Probe", "value": ""}}), "spec.containers.main.livenessProbe.httpGet.httpHeaders[0].value", "at least 1 chars"},
		{"exec probe without command", set(main+"readinessProbe|exec", map[string]any{}), "spec.containers.main.readinessProbe.exec.command", "Required value"},
		{"before names an unknown container", set(main+"before", map[string]any{"migrate": map[string]any{"ready": "complete"}}), "spec", "before must name another container"},
		{"before names itself", set(main+"before", map[string]any{"main": map[string]any{"ready": "started"}}), "spec", "must not name the container itself"},
		{"before ready unknown", set(main+"before|init|ready", "done"), "spec.containers.main.before.init.ready", `supported values: "started", "healthy", "complete"`},
		{"before key upper case", set(main+"before", map[string]any{"Init": map[string]any{"ready": "started"}}), "spec.containers.main.before", "before: container names must be"},
		{"port zero", set("spec|service|ports|web|port", int64(0)), "spec.service.ports.web.port", "greater than or equal to 1"},
		{"port too large", set("spec|service|ports|web|port", int64(65536)), "spec.service.ports.web.port", "less than or equal to 65535"},
		{"port missing", remove("spec|service|ports|web|port"), "spec.service.ports.web.port", "Required value"},
		{"protocol unknown", set("spec|service|ports|web|protocol", "SCTP"), "spec.service.ports.web.protocol", `supported values: "TCP", "UDP"`},
		{"target port zero", set("spec|service|ports|web|targetPort", int64(0)), "spec.service.ports.web.targetPort", "greater than or equal to 1"},
		{"port name with underscore", rename("spec|service|ports", "web", "web_1"), "spec.service.ports", `port name "web_1"`},
		{"resource name upper case", rename("spec|resources", "db", "DB"), "spec.resources", `resource name "DB"`},
		{"resource type missing", remove("spec|resources|db|type"), "spec.resources.db.type", "Required value"},
		{"resource type one character", set("spec|resources|db|type", "p"), "spec.resources.db.type", "at least 2 chars"},
		{"resource type with underscore", set("spec|resources|db|type", "post_gres"), "spec.resources.db.type", "should match"},
		{"resource class one character", set("spec|resources|db|class", "x"), "spec.resources.db.class", "at least 2 chars"},
		{"resource id upper case", set("spec|resources|db|id", "Orders"), "spec.resources.db.id", "should match"},
		{"resource params not an object", set("spec|resources|db|params", "small"), "spec.resources.db.params", "must be of type object"},
		{"resource metadata not an object", set("spec|resources|data|metadata", []any{"a"}), "spec.resources.data.metadata", "must be of type object"},
		{"unknown container field", set(main+"replicas", int64(3)), `spec.containers.main.replicas`, "unknown field"},
		{"unknown spec field", set("spec|profile", "web"), `spec.profile`, "unknown field"},
	}
	if len(cases) < 40 {
		t.Fatalf("the table must hold at least 40 broken rules, has %d", len(cases))
	}
	ctx := context.Background()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := validWorkload(fmt.Sprintf("invalid-%02d", i))
			tc.mutate(u)
			err := env.Client.Create(ctx, u, strict)
			if err == nil {
				t.Fatalf("the API server accepted a Workload with %s", tc.name)
			}
			if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
				t.Fatalf("want Invalid, got %v", err)
			}
			// OpenAPI errors write map keys as .key, CEL errors as [key]; both name the field.
			msg := bracketKey.ReplaceAllString(err.Error(), ".$1")
			if !strings.Contains(msg, tc.field) || !strings.Contains(msg, tc.message) {
				t.Fatalf("the message must name %q and say %q; got: %v", tc.field, tc.message, err)
			}
		})
	}

	t.Run("the unbroken Workload is accepted", func(t *testing.T) {
		if err := env.Client.Create(ctx, validWorkload("valid-base"), strict); err != nil {
			t.Fatal(err)
		}
	})
}

// Every conformance Score file the Score schema accepts converts to a Workload the API
// server accepts, and converts back to the same Score file.
func TestConformanceWorkloadsAccepted(t *testing.T) {
	conformance.Require(t)
	files, err := conformance.ScoreFiles()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	accepted := 0
	for i, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			docs, err := scorefile.DecodeDocuments(data)
			if err != nil {
				t.Fatal(err)
			}
			for j, doc := range docs {
				ns := fmt.Sprintf("conf-%03d-%d", i, j)
				testenv.Create(t, env.Client, namespace(ns))
				res, err := scorefile.ToWorkload(doc, scorefile.Options{Namespace: ns})
				if err != nil {
					t.Fatalf("converting: %v", err)
				}
				if err := env.Client.Create(ctx, res.Workload, strict); err != nil {
					t.Fatalf("the API server rejected %s: %v", f, err)
				}
				var stored scorev1b1.Workload
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(res.Workload), &stored); err != nil {
					t.Fatal(err)
				}
				back, err := scorefile.FromWorkload(&stored)
				if err != nil {
					t.Fatal(err)
				}
				if !scorefile.SameScore(doc, back) {
					t.Fatalf("the stored Workload does not convert back to the Score file:\nwant %v\ngot  %v", doc, back)
				}
				accepted++
			}
		})
	}
	t.Logf("%d Score documents accepted and round-tripped through the API server", accepted)
}
