package render

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/archive"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/breakout"
)

// careless prints a Workload's values the ways a careless template does: bare, in quotes, in a
// block, in a flow list, as an image.
const careless = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Workload.Name }}-careless
  annotations:
    note: {{ .Values.workload.annotations.note }}
data:
  bare: {{ .Values.workload.annotations.note }}
  quoted: "{{ .Values.workload.annotations.note }}"
  single: '{{ .Values.workload.annotations.note }}'
  block: |
    {{ .Values.workload.annotations.note }}
  flow: [{{ .Values.workload.annotations.note }}, x]
  host: {{ .Values.resources.db.outputs.host }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Workload.Name }}
spec:
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec:
      containers:
        - name: main
          image: {{ (index .Values.containers "main").image }}
          args: [{{ .Values.workload.annotations.note | quote }}]
`

// TestHostileWorkloadValuesNeverBecomeStructure renders every default template kind, and
// careless templates of two kinds, with a Workload whose annotation, image, variable,
// argument, file and a dependency's output hold values that break out of every YAML context:
// the same objects and fields come out as with a benign value, or the render is refused.
func TestHostileWorkloadValuesNeverBecomeStructure(t *testing.T) {
	chart, err := archive.Pack(map[string][]byte{
		"careless/Chart.yaml":         []byte("apiVersion: v2\nname: careless\nversion: 0.1.0\n"),
		"careless/templates/all.yaml": []byte(strings.ReplaceAll(careless, ".Workload.Name", ".Release.Name")),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		kind     scorev1b1.TemplateKind
		template Template
	}{
		{"web-service", scorev1b1.TemplateManifests, templateFile(t, "web-service.yaml")},
		{"stateful", scorev1b1.TemplateManifests, templateFile(t, "stateful.yaml")},
		{"batch-job", scorev1b1.TemplateManifests, templateFile(t, "batch-job.yaml")},
		{"event-consumer", scorev1b1.TemplateManifests, templateFile(t, "event-consumer.yaml")},
		{"web-service chart", scorev1b1.TemplateHelm, sample(t, scorev1b1.TemplateHelm)},
		{"web-service kustomization", scorev1b1.TemplateKustomize, sample(t, scorev1b1.TemplateKustomize)},
		{"a careless manifests template", scorev1b1.TemplateManifests, Template{Data: []byte(careless)}},
		{"a careless chart", scorev1b1.TemplateHelm, Template{Data: chart}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := renderWith(tc.kind, tc.template, breakout.Benign)
			if err != nil {
				t.Fatal(err)
			}
			if !breakout.Holds(base, breakout.Benign) {
				t.Fatal("the template prints none of the values: the test proves nothing")
			}
			for _, v := range breakout.Values {
				got, err := renderWith(tc.kind, tc.template, v)
				if err != nil {
					if breakout.Broken(err) {
						t.Errorf("%q broke the output: %v", v, err)
					}
					continue
				}
				if diff := breakout.Same(base, got, breakout.Benign, v); diff != "" {
					t.Errorf("%q: %s", v, diff)
				}
				if !breakout.Holds(got, v) {
					t.Errorf("%q is printed, and not as one value", v)
				}
			}
		})
	}
}

// renderWith renders a plan of Workload web whose values hold v where a tenant puts text.
func renderWith(kind scorev1b1.TemplateKind, tmpl Template, v string) ([]map[string]any, error) {
	var vals map[string]any
	if err := json.Unmarshal([]byte(values), &vals); err != nil {
		return nil, err
	}
	vals["workload"] = map[string]any{"name": "web", "namespace": "ns", "annotations": map[string]any{"note": v}}
	vals["containers"].(map[string]any)["main"].(map[string]any)["image"] = v
	vals["resources"].(map[string]any)["db"].(map[string]any)["outputs"].(map[string]any)["host"] = v
	raw, err := json.Marshal(vals)
	if err != nil {
		return nil, err
	}
	c := mainContainer()
	c.Env = append(c.Env, scorev1b1.EnvProjection{Name: "NOTE", ValueProjection: scorev1b1.ValueProjection{Value: lit(v)}})
	c.Args = append(c.Args, scorev1b1.ValueProjection{Value: lit(v)})
	c.Files = append(c.Files, scorev1b1.FileProjection{Target: "/etc/note", Parts: []scorev1b1.ValuePart{{Literal: lit(v)}}})
	spec := plan(string(raw), c)
	spec.Template.Kind = kind
	objs, err := Render(Input{Workload: "web", Namespace: "ns", Spec: spec, Template: tmpl, SecretValue: func(scorev1b1.OutputRef) (string, error) { return "s3cret", nil }})
	if err != nil {
		return nil, err
	}
	return objects(objs), nil
}

func objects(objs []*unstructured.Unstructured) []map[string]any {
	out := make([]map[string]any, len(objs))
	for i, o := range objs {
		out[i] = o.Object
	}
	return out
}

// What the hostile tests count as a value breaking out, breakout.Broken, is every render
// error of an output that is not the YAML it must be, and no refusal.
func TestBrokenOutputIsTold(t *testing.T) {
	for _, tc := range []struct {
		name, template string
		broken         bool
	}{
		{"text that does not parse", "a: [\n", true},
		{"a document that is a list", "- 1\n", true},
		{"a document that is a scalar", "plain\n", true},
		{"a template that refuses", `{{ fail "no" }}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderWith(scorev1b1.TemplateManifests, Template{Data: []byte(tc.template)}, breakout.Benign)
			if err == nil {
				t.Fatal("rendered")
			}
			if got := breakout.Broken(err); got != tc.broken {
				t.Errorf("Broken(%v) = %v, want %v", err, got, tc.broken)
			}
		})
	}
}
