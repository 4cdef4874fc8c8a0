package placeholder

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/score-spec/score-go/framework"
)

func lookupFrom(values map[string]any) Lookup {
	return func(r Ref) (any, bool) {
		return LookupPath(values, append([]string{string(r.Root)}, r.Path...))
	}
}

var values = map[string]any{
	"metadata": map[string]any{"name": "web", "annotations": map[string]any{"a.b/c": "x"}},
	"resources": map[string]any{
		"db":  map[string]any{"host": "db.local", "port": 5432, "nested": map[string]any{"k": "v"}},
		"dns": map[string]any{"host": "app.example.com"},
	},
}

// Cases follow score-go's own substitution tests (framework/substitution_test.go).
func TestSubstitute(t *testing.T) {
	cases := []struct {
		in, want string
		wantErr  string
	}{
		{in: "", want: ""},
		{in: "abc", want: "abc"},
		{in: "$abc", want: "$abc"},
		{in: "abc $$ abc", want: "abc $ abc"},
		{in: "$${abc}", want: "${abc}"},
		{in: "$${metadata.name}", want: "${metadata.name}"},
		{in: "$$${metadata.name}", want: "$web"},
		{in: "${metadata.name}", want: "web"},
		{in: "${metadata.name}-${metadata.name}", want: "web-web"},
		{in: `${metadata.annotations.a\.b/c}`, wantErr: "malformed"},
		{in: "${resources.db.host}:${resources.db.port}", want: "db.local:5432"},
		{in: "${resources.db.nested}", want: `{"k":"v"}`},
		{in: "${resources.db.nested.k}", want: "v"},
		{in: "${resources.dns.host}/path", want: "app.example.com/path"},
		{in: "${resources.db.user}", wantErr: "not resolved"},
		{in: "${resources.cache.host}", wantErr: "not resolved"},
		{in: "${metadata}", wantErr: "malformed"},
		{in: "${}", wantErr: "malformed"},
		{in: "${foo.bar}", wantErr: "unsupported first part"},
		{in: "${metadata.na me}", wantErr: "malformed"},
		{in: "x ${ unclosed", want: "x ${ unclosed"},
		{in: "{{ .Values.x }}", want: "{{ .Values.x }}"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Substitute(tc.in, lookupFrom(values))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want error %q, got %q, %v", tc.wantErr, got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("want %q, got %q", tc.want, got)
			}
		})
	}
}

// Our substitution agrees with score-go's on everything both accept.
func TestAgreesWithScoreGo(t *testing.T) {
	inputs := []string{"", "plain", "$$", "$${x}", "a${metadata.name}b", "$$${metadata.name}", "${resources.db.host}:${resources.db.port}", "${resources.db.nested}", "100$ and $$5"}
	goLookup := framework.BuildSubstitutionFunction(values["metadata"].(map[string]any), map[string]framework.OutputLookupFunc{
		"db": func(keys ...string) (any, error) {
			return lookupPathErr(values["resources"].(map[string]any)["db"], keys)
		},
		"dns": func(keys ...string) (any, error) {
			return lookupPathErr(values["resources"].(map[string]any)["dns"], keys)
		},
	})
	for _, in := range inputs {
		want, err := framework.SubstituteString(in, goLookup)
		if err != nil {
			t.Fatalf("score-go: %q: %v", in, err)
		}
		got, err := Substitute(in, lookupFrom(values))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if got != want {
			t.Errorf("%q: score-go gives %q, we give %q", in, want, got)
		}
	}
}

func lookupPathErr(v any, keys []string) (any, error) {
	m, _ := v.(map[string]any)
	r, ok := LookupPath(m, keys)
	if !ok {
		return nil, errors.New("not found")
	}
	return r, nil
}

func TestParse(t *testing.T) {
	parts, err := Parse("postgres://${resources.db.user}:$${x}@${resources.db.host}")
	if err != nil {
		t.Fatal(err)
	}
	want := []Part{
		{Literal: "postgres://"},
		{Ref: &Ref{Raw: "resources.db.user", Root: RootResources, Path: []string{"db", "user"}}},
		{Literal: ":${x}@"},
		{Ref: &Ref{Raw: "resources.db.host", Root: RootResources, Path: []string{"db", "host"}}},
	}
	if !reflect.DeepEqual(parts, want) {
		t.Fatalf("got %+v", parts)
	}
	if parts[1].Ref.Resource() != "db" || parts[1].Ref.Output() != "user" {
		t.Fatalf("resource %q output %q", parts[1].Ref.Resource(), parts[1].Ref.Output())
	}
}

func TestRefsInValue(t *testing.T) {
	refs, err := RefsInValue(map[string]any{"a": []any{"${resources.x.y}", 3, map[string]any{"b": "${metadata.name}"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 2 {
		t.Fatalf("got %v", refs)
	}
	sub, err := SubstituteValue(map[string]any{"host": "${resources.dns.host}", "n": 1}, lookupFrom(values), nil)
	if err != nil || !reflect.DeepEqual(sub, map[string]any{"host": "app.example.com", "n": 1}) {
		t.Fatalf("got %v, %v", sub, err)
	}
}

// A budget refuses the substitution that would overdraw it, before the text is written, and
// every later one; a nil budget is unbounded.
func TestSubstituteWithinBudget(t *testing.T) {
	lookup := func(Ref) (any, bool) { return strings.Repeat("v", 10), true }
	for _, tc := range []struct {
		name    string
		limit   int
		inputs  []string
		refused int // the index of the first refused input; -1 none
	}{
		{"exactly the budget", 24, []string{"${metadata.a}-${metadata.a}", "abc"}, -1},
		{"one byte over", 24, []string{"${metadata.a}-${metadata.a}", "abcd"}, 1},
		{"literals count too", 3, []string{"abcd"}, 0},
		{"a literal alone over it", 10, []string{strings.Repeat("x", 11), ""}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBudget(tc.limit)
			refused := -1
			for i, in := range tc.inputs {
				_, err := SubstituteWithin(in, lookup, b)
				var tooLarge *TooLarge
				if errors.As(err, &tooLarge) && refused < 0 {
					refused = i
				} else if err != nil && refused < 0 {
					t.Fatal(err)
				}
			}
			if refused != tc.refused {
				t.Fatalf("refused at %d, want %d", refused, tc.refused)
			}
		})
	}
	if out, err := SubstituteWithin(strings.Repeat("${metadata.a}", 1000), lookup, nil); err != nil || len(out) != 10000 {
		t.Fatalf("a nil budget bounds: %d, %v", len(out), err)
	}
}
