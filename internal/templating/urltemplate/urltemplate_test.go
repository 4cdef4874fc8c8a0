package urltemplate

import (
	"strings"
	"testing"
)

func render(t *testing.T, text string, data any) (string, error) {
	t.Helper()
	tpl, err := Parse("url", text, "missingkey=zero")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	err = tpl.Execute(&b, data)
	return b.String(), err
}

// Each printed value is escaped for the part of the URL it lands in, read from the literal
// text before it, through branches and loops.
func TestValuesAreEscapedForTheirPart(t *testing.T) {
	v := map[string]any{"v": "a/b?c=d&e#f", "label": "eu-1", "n": 42, "list": []any{"x y", "z&w"}}
	cases := []struct {
		name, text, want string
	}{
		{"path", "https://h/dbs/{{ .v }}", "https://h/dbs/a%2Fb%3Fc%3Dd%26e%23f"},
		{"path, within a segment", "https://h/dbs/pre-{{ .v }}-post/x", "https://h/dbs/pre-a%2Fb%3Fc%3Dd%26e%23f-post/x"},
		{"query", "https://h/dbs?q={{ .v }}&n={{ .n }}", "https://h/dbs?q=a%2Fb%3Fc%3Dd%26e%23f&n=42"},
		{"query right after the host", "https://h?q={{ .v }}", "https://h?q=a%2Fb%3Fc%3Dd%26e%23f"},
		{"fragment", "https://h/x#{{ .v }}", "https://h/x#a%2Fb%3Fc%3Dd%26e%23f"},
		{"host label", "https://{{ .label }}.api.example/x", "https://eu-1.api.example/x"},
		{"port", "https://h:{{ .n }}/x", "https://h:42/x"},
		{"after a pipeline", "https://h/{{ .v | upper }}", "https://h/A%2FB%3FC%3DD%26E%23F"},
		{"in both branches", "https://h/{{ if .n }}{{ .v }}{{ else }}none{{ end }}?q={{ .v }}", "https://h/a%2Fb%3Fc%3Dd%26e%23f?q=a%2Fb%3Fc%3Dd%26e%23f"},
		{"in a range", "https://h/x?{{ range .list }}t={{ . }}&{{ end }}", "https://h/x?t=x%20y&t=z%26w&"},
		{"a declaration prints nothing", "https://h/{{ $x := .v }}{{ $x }}", "https://h/a%2Fb%3Fc%3Dd%26e%23f"},
		{"a condition is not printed", "https://h/{{ if eq .label \"eu-1\" }}eu{{ end }}", "https://h/eu"},
		{"a missing value, as text/template prints it", "https://h/{{ .missing }}", "https://h/%3Cno%20value%3E"},
		{"a template with no action", "https://h/x?y=1", "https://h/x?y=1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := render(t, tc.text, v)
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	v := map[string]any{"dots": "..", "slashdot": "a/./b", "host": "evil.example", "empty": ""}
	cases := []struct {
		name, text, want string
	}{
		{"a dot-segment in the path", "https://h/dbs/{{ .dots }}", "may not be . or .."},
		{"a dot-segment within a value", "https://h/dbs/{{ .slashdot }}", "may not be . or .."},
		{"a host", "https://{{ .host }}/x", "only letters, digits and hyphens"},
		{"a host after the scheme", "{{ .host }}", "only letters, digits and hyphens"},
		{"branches ending apart", "https://h/{{ if .dots }}?{{ end }}x", "the branches of an if end in different parts of the url (query and path)"},
		{"a range leaving its part", "https://h/{{ range .list }}?{{ end }}", "a range in the path must end in the path"},
		{"another template", `{{ define "x" }}y{{ end }}https://h/{{ template "x" . }}`, "may not call another template"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := render(t, tc.text, v)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %q, %v; want an error saying %q", got, err, tc.want)
			}
		})
	}
	if got, err := render(t, "https://{{ .empty }}h/x", v); err != nil || got != "https://h/x" {
		t.Fatalf("an empty host label: %q, %v", got, err)
	}
}

// The shared parsed template is not changed: the same text parsed by tplfuncs elsewhere prints
// its values as they are.
func TestParseLeavesTheSharedTemplate(t *testing.T) {
	const text = "https://h/{{ .v }}"
	if _, err := Parse("url", text); err != nil {
		t.Fatal(err)
	}
	again, err := Parse("url", text)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := again.Execute(&b, map[string]any{"v": "a/b"}); err != nil || b.String() != "https://h/a%2Fb" {
		t.Fatalf("parsed twice: %q, %v (escaped twice, or not at all)", b.String(), err)
	}
}

func TestCheck(t *testing.T) {
	if err := Check("https://h/{{ .Params.x }}"); err != nil {
		t.Fatal(err)
	}
	if err := Check("https://h/{{ if .x }}?{{ end }}"); err == nil {
		t.Fatal("branches ending apart pass")
	}
	if err := Check("https://h/{{ .x "); err == nil {
		t.Fatal("a template that does not parse passes")
	}
}
