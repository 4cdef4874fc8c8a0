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

// pattern is score-go's placeholder expression (framework/substitution.go).
var pattern = regexp.MustCompile(`\$((?:\$?{([^}]*)})|\$)`)

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
	for _, m := range pattern.FindAllStringSubmatchIndex(s, -1) {
		lit.WriteString(s[last:m[0]])
		last = m[1]
		whole := s[m[0]:m[1]]
		if strings.HasPrefix(s[m[2]:m[3]], "$") {
			lit.WriteString(whole[1:]) // "$$" → "$", "$${x}" → "${x}"
			continue
		}
		ref, err := parseRef(s[m[4]:m[5]])
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
	parts, err := Parse(s)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Ref == nil {
			b.WriteString(p.Literal)
			continue
		}
		v, ok := lookup(*p.Ref)
		if !ok {
			return "", &Unresolved{Ref: *p.Ref}
		}
		str, err := Stringify(v)
		if err != nil {
			return "", fmt.Errorf("placeholder ${%s}: %w", p.Ref.Raw, err)
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

// SubstituteValue resolves placeholders in every string inside v (maps and lists are copied).
func SubstituteValue(v any, lookup Lookup) (any, error) {
	return MapStrings(v, func(s string) (string, error) { return Substitute(s, lookup) })
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
