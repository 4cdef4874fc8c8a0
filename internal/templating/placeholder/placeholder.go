// Package placeholder parses and resolves Score placeholders exactly as score-go does:
// ${metadata.<key>...} and ${resources.<name>.<output>...}, with "$$" unescaping to "$" (so
// "$${x}" is the literal "${x}") and "\." escaping a dot inside a key. It is pure.
package placeholder

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// scanner finds score-go's placeholder expressions (framework/substitution.go's
// `\$((?:\$?{([^}]*)})|\$)`, leftmost first) without a regular expression: linear in the
// string, whatever it holds, and allocating nothing per match.
type scanner struct {
	s string
	// closeAt is the index of the first "}" at or after the last position close searched from
	// (-1: none), once known; positions only grow, so finding every closing brace is linear
	// in all.
	closeAt int
	known   bool
}

// close returns the index of the first "}" at or after i, or -1. i never decreases from one
// call to the next.
func (sc *scanner) close(i int) int {
	if sc.known && (sc.closeAt == -1 || sc.closeAt >= i) {
		return sc.closeAt
	}
	sc.known, sc.closeAt = true, -1
	if j := strings.IndexByte(sc.s[i:], '}'); j >= 0 {
		sc.closeAt = i + j
	}
	return sc.closeAt
}

// next finds the first expression at or after from: [start, end) is the whole match; for
// "$$" and "$${...}" escaped is true (the match minus its first "$" is literal text), else
// [cs, ce) is a placeholder's content. ok is false when there is none.
func (sc *scanner) next(from int) (start, end, cs, ce int, escaped, ok bool) {
	s := sc.s
	for i := from; i < len(s)-1; i++ {
		if s[i] != '$' {
			continue
		}
		switch {
		case s[i+1] == '$' && i+2 < len(s) && s[i+2] == '{' && sc.close(i+3) >= 0:
			return i, sc.close(i+3) + 1, 0, 0, true, true
		case s[i+1] == '{' && sc.close(i+2) >= 0:
			c := sc.close(i + 2)
			return i, c + 1, i + 2, c, false, true
		case s[i+1] == '$':
			return i, i + 2, 0, 0, true, true
		}
	}
	return 0, 0, 0, 0, false, false
}

// wellFormed is score-go's rule for a placeholder's content (loader/validate.go), with "\."
// allowed inside a part.
var wellFormed = regexp.MustCompile(`^[a-zA-Z0-9_-]+(\.([a-zA-Z0-9_-]|\\\.)+)+$`)

// Root is what a placeholder refers to.
type Root string

// The placeholder roots.
const (
	RootMetadata  Root = "metadata"
	RootResources Root = "resources"
)

// Ref is one placeholder.
type Ref struct {
	// Raw is the content between ${ and }.
	Raw string
	// Root is metadata or resources.
	Root Root
	// Path is what follows the root: for resources, the resource name then the output path.
	Path []string
}

// Resource is the resource name a resources placeholder names.
func (r Ref) Resource() string {
	if r.Root != RootResources || len(r.Path) == 0 {
		return ""
	}
	return r.Path[0]
}

// Output is the dotted output path of a resources placeholder ("" for the whole resource).
func (r Ref) Output() string {
	if r.Root != RootResources || len(r.Path) < 2 {
		return ""
	}
	return strings.Join(r.Path[1:], ".")
}

// Part is a literal or a placeholder of a parsed string.
type Part struct {
	Literal string
	Ref     *Ref
}

// ParseError is a malformed placeholder.
type ParseError struct {
	Raw    string
	Reason string
}

func (e *ParseError) Error() string { return fmt.Sprintf("placeholder ${%s} %s", e.Raw, e.Reason) }

// Parse splits s into literals and placeholders, unescaping "$$". Adjacent literals are
// merged; an empty string gives no parts.
func Parse(s string) ([]Part, error) {
	var parts []Part
	var lit strings.Builder
	last := 0
	sc := scanner{s: s}
	for {
		start, end, cs, ce, escaped, ok := sc.next(last)
		if !ok {
			break
		}
		lit.WriteString(s[last:start])
		last = end
		if escaped {
			lit.WriteString(s[start+1 : end]) // "$$" → "$", "$${x}" → "${x}"
			continue
		}
		ref, err := parseRef(s[cs:ce])
		if err != nil {
			return nil, err
		}
		if lit.Len() > 0 {
			parts = append(parts, Part{Literal: lit.String()})
			lit.Reset()
		}
		parts = append(parts, Part{Ref: &ref})
	}
	lit.WriteString(s[last:])
	if lit.Len() > 0 {
		parts = append(parts, Part{Literal: lit.String()})
	}
	return parts, nil
}

func parseRef(raw string) (Ref, error) {
	if !wellFormed.MatchString(raw) {
		return Ref{}, &ParseError{Raw: raw, Reason: `is malformed: it must have at least two parts separated by ".", each of letters, digits, "_" or "-"`}
	}
	parts := splitRefParts(raw)
	switch Root(parts[0]) {
	case RootMetadata, RootResources:
		return Ref{Raw: raw, Root: Root(parts[0]), Path: parts[1:]}, nil
	default:
		return Ref{}, &ParseError{Raw: raw, Reason: fmt.Sprintf("has an unsupported first part %q: use metadata or resources, or $$ to escape it", parts[0])}
	}
}

// splitRefParts splits on "." but not on "\." (score-go's SplitRefParts).
func splitRefParts(ref string) []string {
	parts := strings.Split(strings.ReplaceAll(ref, `\.`, "\x00"), ".")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(p, "\x00", ".")
	}
	return parts
}

// Refs returns every placeholder in s.
func Refs(s string) ([]Ref, error) {
	parts, err := Parse(s)
	if err != nil {
		return nil, err
	}
	var refs []Ref
	for _, p := range parts {
		if p.Ref != nil {
			refs = append(refs, *p.Ref)
		}
	}
	return refs, nil
}

// MaxExpanded is the most bytes one object derived from a Workload may hold once its
// placeholders are substituted: its plan, or the params of all its claims together. A
// Workload is the API server's to bound (etcd keeps objects up to 1.5 MiB), but substitution
// multiplies it: a placeholder of 20 bytes may stand for a 256 KiB annotation, so a Workload
// of a few kilobytes could ask for gigabytes. 1 MiB leaves a plan room under etcd's limit.
const MaxExpanded = 1 << 20

// TooLarge refuses a substitution that would produce more than its budget allowed.
type TooLarge struct{ Limit int }

func (e *TooLarge) Error() string {
	size := fmt.Sprintf("%d KiB", e.Limit>>10)
	if e.Limit%(1<<20) == 0 {
		size = fmt.Sprintf("%d MiB", e.Limit>>20)
	}
	return "the workload's placeholders expand to more than " + size + ", the most a workload may expand to"
}

// Budget is how many bytes substitution may still produce; a nil Budget is unbounded. Every
// producer of expanded text spends from it before it writes, so the bound is met before the
// memory is taken.
type Budget struct{ limit, left int }

// NewBudget is a budget of limit bytes.
func NewBudget(limit int) *Budget { return &Budget{limit: limit, left: limit} }

// Spend takes n bytes, or refuses with *TooLarge once the budget would be overdrawn (and every
// later call too).
func (b *Budget) Spend(n int) error {
	if b == nil {
		return nil
	}
	b.left -= n
	if b.left < 0 {
		return &TooLarge{Limit: b.limit}
	}
	return nil
}

// Lookup resolves a placeholder to a value. ok is false when the value is not (yet) known.
type Lookup func(Ref) (value any, ok bool)

// Unresolved is a placeholder whose value is not known.
type Unresolved struct {
	Ref Ref
}

func (e *Unresolved) Error() string {
	return fmt.Sprintf("placeholder ${%s} is not resolved", e.Ref.Raw)
}

// Substitute resolves every placeholder in s. Non-string values are written as JSON, as
// score-go does. The first unknown placeholder is returned as an *Unresolved error.
func Substitute(s string, lookup Lookup) (string, error) {
	return SubstituteWithin(s, lookup, nil)
}

// SubstituteWithin is Substitute spending what it writes from budget: *TooLarge once the
// budget is spent.
func SubstituteWithin(s string, lookup Lookup, budget *Budget) (string, error) {
	parts, err := Parse(s)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range parts {
		str := p.Literal
		if p.Ref != nil {
			v, ok := lookup(*p.Ref)
			if !ok {
				return "", &Unresolved{Ref: *p.Ref}
			}
			if str, err = Stringify(v); err != nil {
				return "", fmt.Errorf("placeholder ${%s}: %w", p.Ref.Raw, err)
			}
		}
		if err := budget.Spend(len(str)); err != nil {
			return "", err
		}
		b.WriteString(str)
	}
	return b.String(), nil
}

// MapStrings returns a copy of v (maps and lists copied) with f applied to every string in it.
func MapStrings(v any, f func(string) (string, error)) (any, error) {
	switch x := v.(type) {
	case string:
		return f(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := MapStrings(e, f)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := MapStrings(e, f)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	default:
		return v, nil
	}
}

// SubstituteValue resolves placeholders in every string inside v (maps and lists are copied),
// spending from budget.
func SubstituteValue(v any, lookup Lookup, budget *Budget) (any, error) {
	return MapStrings(v, func(s string) (string, error) { return SubstituteWithin(s, lookup, budget) })
}

// RefsInValue returns every placeholder in the strings inside v.
func RefsInValue(v any) ([]Ref, error) {
	var refs []Ref
	_, err := MapStrings(v, func(s string) (string, error) {
		r, err := Refs(s)
		refs = append(refs, r...)
		return s, err
	})
	return refs, err
}

// Stringify writes a resolved value as score-go does: strings as they are, anything else as
// JSON.
func Stringify(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// LookupPath walks a nested map along path.
func LookupPath(m map[string]any, path []string) (any, bool) {
	var cur any = m
	for _, k := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = mm[k]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}
