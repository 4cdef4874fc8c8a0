package placeholder

import (
	"reflect"
	"strings"
	"testing"

	"github.com/score-spec/score-go/framework"
)

// FuzzSubstitute checks, for any string: parsing is a function (same parts twice);
// substitution writes the literals and one value per placeholder, in order; whatever
// score-go substitutes, we substitute to the same result; and any text escaped
// as Score users escape it comes back literally, whatever placeholders it holds.
func FuzzSubstitute(f *testing.F) {
	for _, s := range []string{"", "$$", "$${x}", "$$${metadata.name}", "${metadata.name}", "${resources.db.host}:${resources.db.port}",
		"${", "$}", "${a.b.c.d}", `${metadata.a\.b}`, `${resources.db.nested}`, "postgres://${resources.db.user}:$${x}@${resources.db.host}",
		"100$ and $$5", "${metadata}", "${foo.bar}", "$${resources.db.host}$", "${resources.db.host"} {
		f.Add(s)
	}
	scoreGo := framework.BuildSubstitutionFunction(values["metadata"].(map[string]any), map[string]framework.OutputLookupFunc{
		"db": func(keys ...string) (any, error) {
			return lookupPathErr(values["resources"].(map[string]any)["db"], keys)
		},
		"dns": func(keys ...string) (any, error) {
			return lookupPathErr(values["resources"].(map[string]any)["dns"], keys)
		},
	})
	f.Fuzz(func(t *testing.T, s string) {
		parts, err := Parse(s)
		again, err2 := Parse(s)
		if (err == nil) != (err2 == nil) || !reflect.DeepEqual(parts, again) {
			t.Fatalf("Parse(%q) is not a function: %v %v / %v %v", s, parts, err, again, err2)
		}

		escaped := escapeLiteral(s)
		switch lit, err := Parse(escaped); {
		case err != nil:
			t.Fatalf("the escaped form %q does not parse: %v", escaped, err)
		case s == "" && len(lit) != 0, s != "" && (len(lit) != 1 || lit[0].Ref != nil || lit[0].Literal != s):
			t.Fatalf("the escaped form %q parses to %+v, not the literal %q", escaped, lit, s)
		}
		if out, err := Substitute(escaped, func(Ref) (any, bool) { return nil, false }); err != nil || out != s {
			t.Fatalf("substituting the escaped form %q gives %q, %v", escaped, out, err)
		}

		if err != nil {
			if _, err := Substitute(s, lookupFrom(values)); err == nil {
				t.Fatalf("%q does not parse, yet substitutes", s)
			}
			return
		}
		var want strings.Builder
		for _, p := range parts {
			if p.Ref == nil {
				want.WriteString(p.Literal)
			} else {
				want.WriteString("<" + p.Ref.Raw + ">")
			}
		}
		if got, err := Substitute(s, func(r Ref) (any, bool) { return "<" + r.Raw + ">", true }); err != nil || got != want.String() {
			t.Fatalf("Substitute(%q) = %q, %v; want %q", s, got, err, want.String())
		}

		ours, err := Substitute(s, lookupFrom(values))
		theirs, theirErr := framework.SubstituteString(s, scoreGo)
		switch {
		case theirErr == nil && err != nil:
			t.Fatalf("Substitute(%q): score-go gives %q, we fail: %v", s, theirs, err)
		case err == nil && theirErr == nil && ours != theirs:
			t.Fatalf("Substitute(%q): score-go gives %q, we give %q", s, theirs, ours)
		}
	})
}

// escapeLiteral writes s so that it substitutes to itself, in score-go's grammar: every "$"
// doubled, except that a "${...}" span (up to its first "}") is only prefixed with one "$":
// score-go turns "$${...}" into "${...}" and unescapes nothing inside it.
func escapeLiteral(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.HasPrefix(s[i:], "${") {
			if end := strings.IndexByte(s[i:], '}'); end >= 0 {
				b.WriteString("$" + s[i:i+end+1])
				i += end
				continue
			}
		}
		if s[i] == '$' {
			b.WriteByte('$')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
