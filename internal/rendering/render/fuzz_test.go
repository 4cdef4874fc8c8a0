package render

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

var shippedTemplates = []string{"web-service.yaml", "stateful.yaml", "event-consumer.yaml", "batch-job.yaml"}

// literalPlan puts s wherever a Workload's strings reach a plan: the image, a variable, a
// command, an argument, a file's content and a non-secret output a variable uses.
func literalPlan(s string) *scorev1b1.WorkloadPlanSpec {
	v := map[string]any{
		"containers": map[string]any{"main": map[string]any{"image": s}},
		"service":    map[string]any{"ports": map[string]any{"http": map[string]any{"port": 80, "targetPort": 8080, "protocol": "TCP"}}},
		"resources":  map[string]any{"db": map[string]any{"type": "postgres", "outputs": map[string]any{"host": s}}},
	}
	raw, _ := json.Marshal(v)
	spec := plan(string(raw), scorev1b1.ContainerProjection{
		Name: "main",
		Env: []scorev1b1.EnvProjection{
			{Name: "LITERAL", ValueProjection: scorev1b1.ValueProjection{Value: lit(s)}},
			{Name: "OUTPUT", ValueProjection: scorev1b1.ValueProjection{From: &scorev1b1.OutputRef{ClaimKey: "db", OutputKey: "host"}}},
		},
		Command: []scorev1b1.ValueProjection{{Value: lit(s)}},
		Args:    []scorev1b1.ValueProjection{{Parts: []scorev1b1.ValuePart{{Literal: lit(s)}}}},
		Files:   []scorev1b1.FileProjection{{Target: "/etc/app.conf", Parts: []scorev1b1.ValuePart{{Literal: lit(s)}}}},
	})
	return spec
}

// FuzzRenderLiteral renders each shipped template over a plan whose Workload strings are
// fuzzed, and checks that every string comes out literally: the same objects as for a plain
// string, the same pod fields, and the container's image, command, argument, variables and
// file holding the string itself (with Kubernetes' $( escaped where it would expand it).
// Template syntax, placeholders, YAML and JSON in a Workload are data, never evaluated.
func FuzzRenderLiteral(f *testing.F) {
	for _, a := range []string{"nginx:1.27", "{{ .Workload.Name }}", "${resources.db.password}", "$(HOME)", "x\"\n---\nkind: ClusterRoleBinding\nmetadata: {name: pwn}",
		"'}, {\"name\": \"INJECTED\"}], \"hostNetwork\": true, \"x\": [{'", "{{/* */}}", "<no value>", "\u2028\u0085", ": - [", "&a *a !!binary", ""} {
		for i := range shippedTemplates {
			f.Add(a, uint8(i))
		}
	}
	templates := map[string]Template{}
	for _, name := range shippedTemplates {
		templates[name] = templateFile(f, name)
	}
	baseline := map[string][]string{}
	for _, name := range shippedTemplates {
		objs, err := Render(Input{Workload: "web", Namespace: "ns", Spec: literalPlan("plain"), Template: templates[name]})
		if err != nil {
			f.Fatal(err)
		}
		baseline[name] = shape(objs)
	}
	f.Fuzz(func(t *testing.T, s string, which uint8) {
		if !utf8.ValidString(s) {
			return // the API server stores JSON, so Workload strings are UTF-8
		}
		name := shippedTemplates[int(which)%len(shippedTemplates)]
		objs, err := Render(Input{Workload: "web", Namespace: "ns", Spec: literalPlan(s), Template: templates[name]})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := shape(objs); !reflect.DeepEqual(got, baseline[name]) {
			t.Fatalf("%s: the string changed the objects:\n%v\nwant\n%v", name, got, baseline[name])
		}
		escaped := strings.ReplaceAll(s, "$(", "$$(")
		for _, o := range objs {
			var pod map[string]any
			switch o.GetKind() {
			case "ConfigMap":
				data, _, _ := unstructured.NestedStringMap(o.Object, "data")
				if data[FileKey("main", "/etc/app.conf")] != s {
					t.Fatalf("%s: file content %q, want %q", name, data, s)
				}
				continue
			case "Deployment", "StatefulSet", "Job":
				pod, _, _ = unstructured.NestedMap(o.Object, "spec", "template", "spec")
			default:
				continue
			}
			c := pod["containers"].([]any)[0].(map[string]any)
			env := map[string]any{}
			for _, e := range c["env"].([]any) {
				env[e.(map[string]any)["name"].(string)] = e.(map[string]any)["value"]
			}
			if c["image"] != s || c["command"].([]any)[0] != escaped || c["args"].([]any)[0] != escaped ||
				env["LITERAL"] != escaped || env["OUTPUT"] != escaped || len(env) != 2 {
				t.Fatalf("%s: %q was not kept literally: %v", name, s, c)
			}
		}
	})
}

// shape is what a string must not change in a render: each object's kind, the pod's fields
// and the container's fields (names that hash content are left out).
func shape(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+" "+strings.Join(keys(o.Object), ","))
		if pod, ok, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec"); ok {
			out = append(out, "pod "+strings.Join(keys(pod), ","))
			for _, c := range pod["containers"].([]any) {
				out = append(out, "container "+strings.Join(keys(c.(map[string]any)), ","))
			}
		}
	}
	return out
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
