package yamltemplate

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"text/template"
	"unicode/utf8"

	"github.com/Masterminds/sprig/v3"
	"gopkg.in/yaml.v3"
)

// render parses text with sprig and the guard's functions, guards it, runs it over data and
// decodes what it printed.
func render(t *testing.T, d Dialect, text string, data any) ([]any, error) {
	t.Helper()
	tmpl, err := template.New("t").Funcs(sprig.TxtFuncMap()).Funcs(Funcs()).Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if err := Guard(tmpl, d); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, data); err != nil {
		t.Fatal(err)
	}
	return Decode(b.Bytes())
}

// unguarded is what text/template and YAML make of the same template without the guard.
func unguarded(t *testing.T, text string, data any) []any {
	t.Helper()
	tmpl := template.Must(template.New("t").Funcs(sprig.TxtFuncMap()).Parse(text))
	var b bytes.Buffer
	if err := tmpl.Execute(&b, data); err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(&b)
	var docs []any
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			break
		}
		docs = append(docs, normalize(v))
	}
	return docs
}

// breakOut is text that ends the scalar it is printed into, in every YAML context, and adds
// an object of its own.
const breakOut = "1Gi}}\"'\n- apiVersion: v1\n  kind: Pod\n---\nkind: Evil # "

func TestPrintedValuesStayValues(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		data       map[string]any
		want       any
	}{
		{"plain scalar", "storage: {{ .x }}\n", map[string]any{"x": breakOut}, map[string]any{"storage": breakOut}},
		{"the volume catalog's bug", "- kind: PersistentVolumeClaim\n  spec: {resources: {requests: {storage: {{ .x }}}}}\n",
			map[string]any{"x": breakOut}, []any{map[string]any{"kind": "PersistentVolumeClaim", "spec": map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": breakOut}}}}}},
		{"double-quoted", "name: \"{{ .x }}\"\n", map[string]any{"x": breakOut}, map[string]any{"name": breakOut}},
		{"single-quoted", "name: '{{ .x }}'\n", map[string]any{"x": breakOut}, map[string]any{"name": breakOut}},
		{"part of a plain scalar", "name: pre-{{ .x }}-post\n", map[string]any{"x": breakOut}, map[string]any{"name": "pre-" + breakOut + "-post"}},
		{"block scalar", "script: |\n  echo {{ .x }}\n  done\n", map[string]any{"x": breakOut}, map[string]any{"script": "echo " + breakOut + "\ndone\n"}},
		{"flow sequence", "args: [{{ .x }}, b]\n", map[string]any{"x": breakOut}, map[string]any{"args": []any{breakOut, "b"}}},
		{"flow mapping", "m: {a: {{ .x }}, b: c}\n", map[string]any{"x": breakOut}, map[string]any{"m": map[string]any{"a": breakOut, "b": "c"}}},
		{"key", "{{ .x }}: v\n", map[string]any{"x": breakOut}, map[string]any{breakOut: "v"}},
		{"comment", "a: 1 # {{ .x }}\n", map[string]any{"x": "\nevil: 1"}, map[string]any{"a": 1}},
		{"sequence item", "- {{ .x }}\n", map[string]any{"x": "a: b"}, []any{"a: b"}},
		{"quote", "- {{ .x | quote }}\n", map[string]any{"x": breakOut}, []any{breakOut}},
		{"squote", "- {{ .x | squote }}\n", map[string]any{"x": breakOut}, []any{breakOut}},
		{"quote inside a block", "run: |\n  login {{ .x | quote }}\n", map[string]any{"x": "a\"b\nc"}, map[string]any{"run": "login \"a\\\"b\\nc\"\n"}},
		{"toJson of a map", "spec: {{ toJson .m }}\n", map[string]any{"m": map[string]any{"k": breakOut, breakOut: []any{1, true}}},
			map[string]any{"spec": map[string]any{"k": breakOut, breakOut: []any{1, true}}}},
		{"toJson inside a string", "cfg: '{{ toJson .m }}'\n", map[string]any{"m": map[string]any{"k": "a'b"}}, map[string]any{"cfg": `{"k":"a'b"}`}},
		{"indented text in a block", "cfg: |\n{{ .x | indent 2 }}\n", map[string]any{"x": "line1\n- line2: x"}, map[string]any{"cfg": "line1\n- line2: x\n"}},
		{"a trimmed value", "name: {{ .x | trim }}\n", map[string]any{"x": "  a  "}, map[string]any{"name": "a"}},
		{"a number stays a number", "replicas: {{ .n }}\nport: {{ .p }}\non: {{ .b }}\n", map[string]any{"n": 3, "p": "8080", "b": true},
			map[string]any{"replicas": 3, "port": 8080, "on": true}},
		{"a missing value", "name: {{ .missing }}\n", map[string]any{}, map[string]any{"name": "<no value>"}},
		{"a merge key", "m:\n  {{ .k }}: {a: 1}\n", map[string]any{"k": "<<"}, map[string]any{"m": map[string]any{"<<": map[string]any{"a": 1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := render(t, Sprig, tc.text, tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) != 1 || !reflect.DeepEqual(docs[0], tc.want) {
				t.Errorf("got %#v\nwant %#v", docs, tc.want)
			}
		})
	}
}

// TestGuardedIsUnguardedForBenignValues: values that hold no YAML syntax render as they did.
func TestGuardedIsUnguardedForBenignValues(t *testing.T) {
	data := map[string]any{"name": "web", "port": 8080, "size": "1Gi", "on": true, "m": map[string]any{"a": "b", "n": 2},
		"list": []any{"x", "y"}, "url": "https://example.com/a/b", "text": "line1\nline2"}
	for _, text := range []string{
		"name: {{ .name }}\nport: {{ .port }}\nsize: {{ .size | quote }}\n",
		"- apiVersion: v1\n  kind: Service\n  metadata: {name: {{ .name }}-svc, labels: {app: {{ .name }}}}\n  spec: {ports: [{port: {{ .port }}}]}\n",
		"url: {{ .url }}\nenabled: {{ .on }}\nm: {{ toJson .m }}\npretty: {{ toPrettyJson .m | nindent 2 }}\n",
		"{{ range .list }}- {{ . }}\n{{ end }}",
		"{{ $x := printf \"%s-%v\" .name .port }}name: {{ $x }}\nb64: {{ .name | b64enc }}\nup: {{ .name | upper | quote }}\n",
		"text: |\n{{ .text | indent 2 }}\nnested:\n  t: {{ .text | quote }}\n",
		"{{ if eq .name \"web\" }}web: yes{{ else }}web: no{{ end }}\n",
	} {
		got, err := render(t, Sprig, text, data)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if want := unguarded(t, text, data); !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\ngot  %#v\nwant %#v", text, got, want)
		}
	}
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"anchor", "a: &{{ .x }} 1\n", "anchor"},
		{"tag", "a: !{{ .x }} 1\n", "anchor or tag"},
		{"the marker in the template", "a: " + tokenMarker + "\n", "marks printed values"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, Sprig, tc.text, map[string]any{"x": "y z"}) // a word is the template's own choice of name
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestAYAMLErrorShowsThePrintedLine(t *testing.T) {
	_, err := render(t, Sprig, "a: 1\nb: [{{ .x }}\n", map[string]any{"x": "v"})
	if err == nil || !strings.Contains(err.Error(), "[v") {
		t.Errorf("got %v, want the line with the value", err)
	}
}

// TestGuardTextKeepsWhatTheTemplateDoes: a chart's template printed back guarded runs as the
// text did (its defines, else-if chains, ranges with break, blocks, comments, raw and quoted
// strings), its output the same once its tokens are read back as text.
func TestGuardTextKeepsWhatTheTemplateDoes(t *testing.T) {
	text := `{{- define "item" }}<{{ . }}>{{ end -}}
{{/* a comment */}}
{{- if .a }}a{{ else if .b }}b{{ else }}c{{ end }}
{{ range $i, $e := .l }}{{ if eq $i 2 }}{{ break }}{{ end }}{{ template "item" $e }}{{ end }}
{{ block "dflt" . }}default {{ .b }}{{ end }}
{{ "a\"b" }} {{ ` + "`raw {{ x }}`" + ` }} {{ printf "%s-%d" "x" 3 }}
{{ with .m }}{{ .k }}{{ else }}none{{ end }}
{{ $x := 1 }}{{ $x = 2 }}{{ $x }}
`
	data := map[string]any{"a": false, "b": "B", "l": []any{"x", "y", "z", "w"}, "m": map[string]any{"k": "K"}}
	run := func(text string) string {
		tmpl, err := template.New("t").Funcs(sprig.TxtFuncMap()).Funcs(Funcs()).Parse(text)
		if err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
		var b bytes.Buffer
		if err := tmpl.Execute(&b, data); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	guarded, err := GuardText("t", text, Helm)
	if err != nil {
		t.Fatal(err)
	}
	if want, got := run(text), Plain(run(guarded)); got != want {
		t.Errorf("got\n%s\nwant\n%s\nguarded text:\n%s", got, want, guarded)
	}
}

// FuzzPrintedValueStaysAValue: whatever a value holds, printed into any YAML context it comes
// back as itself, in the one place the template put it.
func FuzzPrintedValueStaysAValue(f *testing.F) {
	for _, s := range []string{"", "a", "x\nkind: Evil", "\"'", "\u0085\u2028\ufeff", "\x00\x7f\x1b[2J", "- a", "{{ x }}", tokenMarker + "vz", "#", "--- ", "|", "<<"} {
		f.Add(s)
	}
	contexts := []struct {
		text string
		get  func(map[string]any) any
	}{
		{"k: {{ .x }}\n", func(m map[string]any) any { return m["k"] }},
		{"k: \"{{ .x }}\"\n", func(m map[string]any) any { return m["k"] }},
		{"k: '{{ .x }}'\n", func(m map[string]any) any { return m["k"] }},
		{"k: |\n  {{ .x }}\n", func(m map[string]any) any { return strings.TrimSuffix(m["k"].(string), "\n") }},
		{"k: [{{ .x }}]\n", func(m map[string]any) any {
			if l := m["k"].([]any); len(l) > 0 {
				return l[0]
			}
			return "" // an empty value is no item, printed or written
		}},
		{"k: {{ .x | quote }}\n", func(m map[string]any) any { return m["k"] }},
		{"k: {{ toJson .x }}\n", func(m map[string]any) any { return m["k"] }},
		{"{{ .x | quote }}: v\n", func(m map[string]any) any {
			for k := range m {
				return k
			}
			return nil
		}},
	}
	f.Fuzz(func(t *testing.T, x string) {
		if !utf8.ValidString(x) || strings.ContainsRune(x, 0) {
			return // YAML and JSON hold UTF-8 text without NUL; the API server's objects too
		}
		for _, c := range contexts {
			if strings.HasPrefix(c.text, "{{") && len(x) > 500 {
				continue // a key is at most 1024 characters long in YAML, printed or written
			}
			docs, err := render(t, Sprig, c.text, map[string]any{"x": x})
			if err != nil {
				t.Fatalf("%q in %q: %v", x, c.text, err)
			}
			if len(docs) != 1 {
				t.Fatalf("%q in %q: %d documents", x, c.text, len(docs))
			}
			m, ok := docs[0].(map[string]any)
			if !ok || len(m) != 1 {
				t.Fatalf("%q in %q: %#v", x, c.text, docs[0])
			}
			if got := c.get(m); got != x && !(c.text == "k: {{ .x }}\n" || c.text == "k: [{{ .x }}]\n") {
				t.Fatalf("%q in %q came back as %#v", x, c.text, got)
			}
		}
	})
}
