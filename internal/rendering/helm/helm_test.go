package helm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/score-orchestrator/score-orchestrator/internal/rendering/archive"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/yamltemplate"
)

// chart packs a chart named demo with the given templates (by file name under templates/).
func chart(t *testing.T, extra map[string]string) []byte {
	t.Helper()
	files := map[string][]byte{
		"demo/Chart.yaml":  []byte("apiVersion: v2\nname: demo\nversion: 0.1.0\n"),
		"demo/values.yaml": []byte("replicas: 1\ngreeting: hello\n"),
	}
	for name, text := range extra {
		files["demo/"+name] = []byte(text)
	}
	b, err := archive.Pack(files)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const configMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
  namespace: {{ .Release.Namespace }}
data:
  greeting: {{ .Values.greeting | quote }}
  replicas: {{ .Values.replicas | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  apps: {{ .Capabilities.APIVersions.Has "apps/v1" | quote }}
  install: {{ .Release.IsInstall | quote }}
`

func TestRender(t *testing.T) {
	for _, tc := range []struct {
		name      string
		templates map[string]string
		values    map[string]any
		want      []string
		wantNot   []string
		wantErr   string
	}{
		{
			name: "values override the chart's, release and capabilities are fixed", templates: map[string]string{"templates/cm.yaml": configMap},
			values: map[string]any{"greeting": "hi"},
			want:   []string{"name: web\n", "namespace: team\n", `greeting: "hi"`, `replicas: "1"`, `kube: "v1.37.0"`, `apps: "true"`, `install: "true"`},
		},
		{
			name: "objects come out in install order",
			templates: map[string]string{
				"templates/a-deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n",
				"templates/b-cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
			},
			want: []string{"kind: ConfigMap\nmetadata:\n  name: c\n---\n# Source: demo/templates/a-deploy.yaml\napiVersion: apps/v1\nkind: Deployment"},
		},
		{
			name: "hooks, notes and partials are left out",
			templates: map[string]string{
				"templates/hook.yaml":    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: test\n  annotations:\n    helm.sh/hook: test\n",
				"templates/NOTES.txt":    "Thanks for installing {{ .Release.Name }}",
				"templates/_helpers.tpl": `{{ define "demo.name" }}x{{ end }}`,
				"templates/cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"demo.name\" . }}\n",
			},
			want: []string{"name: x\n"}, wantNot: []string{"helm.sh/hook", "Thanks"},
		},
		{name: "the clock is refused", templates: map[string]string{"templates/cm.yaml": "a: {{ now }}"}, wantErr: "now is not available"},
		{name: "randomness is refused", templates: map[string]string{"templates/cm.yaml": "a: {{ randAlphaNum 8 }}"}, wantErr: "randAlphaNum is not available"},
		{name: "certificates are refused", templates: map[string]string{"templates/cm.yaml": `a: {{ genCA "x" 3 }}`}, wantErr: "genCA is not available"},
		{name: "the cluster is refused", templates: map[string]string{"templates/cm.yaml": `a: {{ lookup "v1" "Secret" "ns" "x" }}`}, wantErr: "lookup is not available"},
		{name: "DNS is refused", templates: map[string]string{"templates/cm.yaml": `a: {{ getHostByName "example.com" }}`}, wantErr: "getHostByName is not available"},
		{name: "the environment is not there", templates: map[string]string{"templates/cm.yaml": `a: {{ env "HOME" }}`}, wantErr: `function "env" not defined`},
		{name: "a failing template says where", templates: map[string]string{"templates/cm.yaml": `{{ required "greeting2 is required" .Values.greeting2 }}`}, wantErr: "greeting2 is required"},
		{
			name:      "an incompatible kubeVersion is refused",
			templates: map[string]string{"Chart.yaml": "apiVersion: v2\nname: demo\nversion: 0.1.0\nkubeVersion: <1.30.0\n"},
			wantErr:   "requires kubeVersion <1.30.0",
		},
		{
			name:      "a dependency that is not packaged is refused",
			templates: map[string]string{"Chart.yaml": "apiVersion: v2\nname: demo\nversion: 0.1.0\ndependencies:\n  - name: redis\n    version: 1.0.0\n    repository: oci://example.invalid/charts\n"},
			wantErr:   "dependencies redis are not packaged",
		},
		{
			name: "a packaged subchart renders with its values",
			templates: map[string]string{
				"Chart.yaml":                   "apiVersion: v2\nname: demo\nversion: 0.1.0\ndependencies:\n  - name: sub\n    version: 0.1.0\n",
				"charts/sub/Chart.yaml":        "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
				"charts/sub/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sub-{{ .Values.suffix }}\n",
			},
			values: map[string]any{"sub": map[string]any{"suffix": "ok"}},
			want:   []string{"name: sub-ok\n"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Render(Input{Chart: chart(t, tc.templates), ReleaseName: "web", Namespace: "team", Values: tc.values})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want an error with %q, got %v\n%s", tc.wantErr, err, out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out = []byte(yamltemplate.Plain(string(out))) // the values as the chart printed them
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("want %q in\n%s", w, out)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(string(out), w) {
					t.Errorf("want no %q in\n%s", w, out)
				}
			}
		})
	}
}

func TestRenderRefusesWhatIsNotAChart(t *testing.T) {
	if _, err := Render(Input{Chart: []byte("not a chart")}); err == nil || !strings.Contains(err.Error(), "does not load") {
		t.Fatalf("got %v", err)
	}
}

func TestNotDeterministicIsASentinel(t *testing.T) {
	_, err := Render(Input{Chart: chart(t, map[string]string{"templates/cm.yaml": "a: {{ uuidv4 }}"})})
	if !errors.Is(err, ErrNotDeterministic) {
		t.Fatalf("want ErrNotDeterministic, got %v", err)
	}
}

// The same chart and values render the same bytes, every time: helm's engine iterates maps,
// and nothing may leak that order into the output.
func TestRenderIsDeterministic(t *testing.T) {
	templates := map[string]string{"templates/cm.yaml": configMap}
	for i := range 8 {
		templates["templates/svc"+string(rune('a'+i))+".yaml"] = "apiVersion: v1\nkind: Service\nmetadata:\n  name: s" + string(rune('a'+i)) + "\nspec:\n  selector: {{ toJson .Values.labels }}\n"
	}
	values := map[string]any{"labels": map[string]any{"a": "1", "b": "2", "c": "3", "d": "4"}}
	first, err := Render(Input{Chart: chart(t, templates), ReleaseName: "web", Namespace: "team", Values: values})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		again, err := Render(Input{Chart: chart(t, templates), ReleaseName: "web", Namespace: "team", Values: values})
		if err != nil || !bytes.Equal(first, again) {
			t.Fatalf("render %d differs: %v\n%s\n---\n%s", i, err, first, again)
		}
	}
}

// hostile ends the scalar it is printed into in every YAML context, holds template syntax and
// adds an object of its own.
const hostile = "x}}\"'{{ .Release.Name }}\n- apiVersion: v1\n  kind: Pod\n---\nkind: Evil # "

// TestChartValuesStayValues renders charts written the ways charts are (helpers included and
// indented, checksums of an include, toYaml blocks, tpl of toYaml, values printed bare) with a
// value that breaks out of every YAML context: it lands where the chart put it, as a value.
func TestChartValuesStayValues(t *testing.T) {
	helpers := `{{- define "demo.labels" -}}
app: {{ .Values.name }}
team: {{ .Values.team | quote }}
{{- end -}}
{{- define "demo.cm" -}}
greeting: {{ .Values.name }}
{{- end -}}`
	deployment := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels:
    {{- include "demo.labels" . | nindent 4 }}
    extra: fixed
  annotations:
    checksum/config: {{ include "demo.cm" . | sha256sum }}
    bare: {{ .Values.name }}
spec:
  template:
    spec:
      containers:
        - name: app
          env:
          {{- toYaml .Values.env | nindent 12 }}
          args: {{ toJson .Values.args }}
      extra: {{ tpl (toYaml .Values.extra) . | nindent 8 }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-files
data:
  rendered: {{ tpl .Values.name . }}
  config.yaml: |
{{ .Values.name | indent 4 }}
`
	values := map[string]any{
		"name": hostile, "team": hostile, "env": []any{map[string]any{"name": "A", "value": hostile}},
		"args": []any{hostile, "--flag"}, "extra": map[string]any{hostile: []any{hostile}},
	}
	docs := renderedDocs(t, Input{Chart: chart(t, map[string]string{"templates/_helpers.tpl": helpers, "templates/all.yaml": deployment}),
		ReleaseName: "web", Namespace: "team", Values: values})
	byKind := map[string]map[string]any{}
	for _, d := range docs {
		if m, ok := d.(map[string]any); ok {
			byKind[fmt.Sprint(m["kind"])] = m
		}
	}
	dep, cm := byKind["Deployment"], byKind["ConfigMap"]
	if len(byKind) != 2 || dep == nil || cm == nil {
		t.Fatalf("want a Deployment and a ConfigMap, got %d objects: %v", len(byKind), byKind)
	}
	field := func(m map[string]any, path ...string) any {
		var v any = m
		for _, p := range path {
			v = v.(map[string]any)[p]
		}
		return v
	}
	labels := field(dep, "metadata", "labels").(map[string]any)
	if len(labels) != 3 || labels["app"] != hostile || labels["team"] != hostile || labels["extra"] != "fixed" {
		t.Errorf("labels: %#v", labels)
	}
	sum := sha256.Sum256([]byte("greeting: " + hostile)) // what the include printed, as it printed it
	if got := field(dep, "metadata", "annotations", "checksum/config"); got != hex.EncodeToString(sum[:]) {
		t.Errorf("checksum %v is not of what the include printed", got)
	}
	if got := field(dep, "metadata", "annotations", "bare"); got != hostile {
		t.Errorf("bare: %#v", got)
	}
	container := field(dep, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
	if env := container["env"].([]any); len(env) != 1 || env[0].(map[string]any)["value"] != hostile {
		t.Errorf("env: %#v", container["env"])
	}
	if args := container["args"].([]any); len(args) != 2 || args[0] != hostile {
		t.Errorf("args: %#v", container["args"])
	}
	extra := field(dep, "spec", "template", "spec", "extra").(map[string]any)
	if v, ok := extra[hostile].([]any); !ok || len(v) != 1 || v[0] != hostile {
		t.Errorf("tpl of toYaml evaluated or broke a value: %#v", extra)
	}
	data := cm["data"].(map[string]any)
	if data["config.yaml"] != hostile+"\n" {
		t.Errorf("config.yaml: %#v", data["config.yaml"])
	}
	if r, ok := data["rendered"].(string); !ok || !strings.Contains(r, "web") || !strings.Contains(r, "kind: Evil") {
		t.Errorf("tpl of a string is one value: %#v", data["rendered"])
	}
}

// TestChartIdiomsKeepValuesValues: what a chart computes with a helper's output, or with a
// value, keeps the value one: include read back by fromYaml and merged, tpl of an include or of
// a variable holding one (a value's template syntax is never run), bitnami's tplvalues helper
// (toYaml held in a variable, printed), the chart's own files as config. These are the idioms
// where include | fromYaml and tpl (include …) could turn a value back into structure and code.
func TestChartIdiomsKeepValuesValues(t *testing.T) {
	helpers := `{{- define "labels" -}}
app: {{ .Values.name }}
{{- end -}}
{{- define "v" -}}{{ .Values.tenant }}{{- end -}}
{{- define "tplvalues.render" -}}
{{- $value := typeIs "string" .value | ternary .value (.value | toYaml) }}
{{- if contains "{{" (toJson .value) }}
{{- tpl $value .context }}
{{- else }}
{{- $value }}
{{- end }}
{{- end -}}`
	objects := `apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  labels: {{- include "labels" . | fromYaml | toYaml | nindent 4 }}
  annotations: {{- merge (include "labels" . | fromYaml) (dict "extra" "x") | toYaml | nindent 4 }}
data:
  tpl-of-include: {{ tpl (include "v" .) . | quote }}
  {{- $held := include "v" . }}
  tpl-of-held: {{ tpl $held . | quote }}
  checksum: {{ include "labels" . | sha256sum }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: b
  labels: {{- include "tplvalues.render" (dict "value" .Values.podLabels "context" $) | nindent 4 }}
data: {{- (.Files.Glob "files/*").AsConfig | nindent 2 }}
`
	values := map[string]any{
		"name": "web\ninjected: \"yes\"", "tenant": "{{ .Values.secret }}", "secret": "platform-only",
		"podLabels": map[string]any{"team": hostile, "tier": "gold"},
	}
	docs := renderedDocs(t, Input{Chart: chart(t, map[string]string{"templates/_helpers.tpl": helpers, "templates/all.yaml": objects, "files/app.conf": "port: 80\n"}),
		ReleaseName: "web", Namespace: "team", Values: values})
	byName := map[string]map[string]any{}
	for _, d := range docs {
		if m, ok := d.(map[string]any); ok {
			byName[m["metadata"].(map[string]any)["name"].(string)] = m
		}
	}
	a, b := byName["a"], byName["b"]
	if a == nil || b == nil {
		t.Fatalf("objects %v", byName)
	}
	meta := a["metadata"].(map[string]any)
	if labels := meta["labels"].(map[string]any); len(labels) != 1 || labels["app"] != values["name"] {
		t.Errorf("include | fromYaml made structure of a value: %#v", labels)
	}
	if ann := meta["annotations"].(map[string]any); len(ann) != 2 || ann["app"] != values["name"] || ann["extra"] != "x" {
		t.Errorf("merge of include | fromYaml: %#v", ann)
	}
	data := a["data"].(map[string]any)
	for _, k := range []string{"tpl-of-include", "tpl-of-held"} {
		if data[k] != values["tenant"] {
			t.Errorf("%s ran a value as a template: %#v", k, data[k])
		}
	}
	sum := sha256.Sum256([]byte("app: " + values["name"].(string)))
	if data["checksum"] != hex.EncodeToString(sum[:]) {
		t.Errorf("the checksum is not of what the helper printed: %v", data["checksum"])
	}
	if labels, _ := b["metadata"].(map[string]any)["labels"].(map[string]any); len(labels) != 2 || labels["team"] != hostile || labels["tier"] != "gold" {
		t.Errorf("the tplvalues helper: %#v", b["metadata"])
	}
	if conf, _ := b["data"].(map[string]any); conf["app.conf"] != "port: 80\n" {
		t.Errorf("the chart's files as config: %#v", b["data"])
	}
}

// renderedDocs renders in and decodes what it renders, failing the test on either error (the
// output, made plain, shown with a decoding error).
func renderedDocs(t *testing.T, in Input) []any {
	t.Helper()
	stream, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := yamltemplate.Decode(stream)
	if err != nil {
		t.Fatalf("%v\n%s", err, yamltemplate.Plain(string(stream)))
	}
	return docs
}
