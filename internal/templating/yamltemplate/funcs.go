package yamltemplate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"
)

// Fragment is text a guarded template made as structure: a serializer's output (quote, toJson,
// toYaml), a helper's (include), the chart's own files. What a value holds is in it only as
// tokens, so it is printed as it is. Functions that compute with text are given it as plain
// text (fnPlain), and what they return is a value again.
type Fragment string

// The functions a guarded template calls. A config's templates cannot name them: they are
// added to the actions after parsing, and a template's text may not hold the token marker.
const (
	fnValue         = "_scoreValue"
	fnValueHelm     = "_scoreValueHelm"
	fnQuote         = "_scoreQuote"
	fnSquote        = "_scoreSquote"
	fnQuoteJSON     = "_scoreQuoteJSON"
	fnToJSON        = "_scoreToJson"
	fnToPrettyJSON  = "_scoreToPrettyJson"
	fnToYAML        = "_scoreToYaml"
	fnPlain         = "_scorePlain"
	fnFragment      = "_scoreFragment"
	fnText          = "_scoreText"
	fnTpl           = "_scoreTpl"
	fnIndent        = "_scoreIndent"
	fnNindent       = "_scoreNindent"
	fnTrim          = "_scoreTrim"
	fnTrimSuffix    = "_scoreTrimSuffix"
	fnTrimPrefix    = "_scoreTrimPrefix"
	fnFromYAML      = "_scoreFromYaml"
	fnFromYAMLArray = "_scoreFromYamlArray"
	fnFromJSON      = "_scoreFromJson"
	fnFromJSONArray = "_scoreFromJsonArray"
)

// Funcs are the functions guarded templates call: add them to a template's functions after it
// is parsed. They keep no state: a token carries its text.
func Funcs() template.FuncMap {
	return template.FuncMap{
		fnValue:        func(v any) string { return escape(v, "<no value>") },
		fnValueHelm:    func(v any) string { return escape(v, "") },
		fnQuote:        quote('"', goQuoted),
		fnSquote:       quote('\'', singleQuoted),
		fnQuoteJSON:    func(v any) Fragment { return Fragment(`"` + tokenOrWord(jsonString, fmt.Sprint(plainValue(v))) + `"`) },
		fnToJSON:       func(v any) (Fragment, error) { return toJSON(v, false) },
		fnToPrettyJSON: func(v any) (Fragment, error) { return toJSON(v, true) },
		fnToYAML:       toYAML,
		fnPlain:        plainValue,
		fnFragment:     fragment,
		fnText:         text,
		fnTpl:          tplResult,
		fnIndent: func(spaces int, v any) any {
			return format(v, func(s string) string { return indent(spaces, s) })
		},
		fnNindent: func(spaces int, v any) any {
			return format(v, func(s string) string { return "\n" + indent(spaces, s) })
		},
		fnTrim: func(v any) any { return format(v, strings.TrimSpace) },
		fnTrimSuffix: func(suffix string, v any) any {
			return format(v, func(s string) string { return strings.TrimSuffix(s, suffix) })
		},
		fnTrimPrefix: func(prefix string, v any) any {
			return format(v, func(s string) string { return strings.TrimPrefix(s, prefix) })
		},
		fnFromYAML:      fromYAML,
		fnFromYAMLArray: fromYAMLArray,
		fnFromJSON:      fromJSON,
		fnFromJSONArray: fromJSONArray,
	}
}

// escape is what an action prints: a Fragment as it is; anything else as a value, its token
// (none for a missing value).
func escape(v any, none string) string {
	if f, ok := v.(Fragment); ok {
		return string(f)
	}
	return tokenOrWord(printedText, printed(plainValue(v), none))
}

// printed is what text/template prints for v, with none for a missing value.
func printed(v any, none string) string {
	if v == nil {
		return none
	}
	if r := reflect.ValueOf(v); r.Kind() == reflect.Pointer && !r.IsNil() {
		v = r.Elem().Interface()
	}
	return fmt.Sprint(v)
}

// plainValue is v with every Fragment in it read back as the text it stands for: what a
// function that computes with text is given.
func plainValue(v any) any {
	switch x := v.(type) {
	case Fragment:
		return Plain(string(x))
	case map[string]any:
		if !holdsFragment(x) {
			return x
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = plainValue(e)
		}
		return out
	case []any:
		if !holdsFragment(x) {
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plainValue(e)
		}
		return out
	}
	return v
}

// holdsFragment reports whether a map's or list's values hold a Fragment.
func holdsFragment(v any) bool {
	switch x := v.(type) {
	case Fragment:
		return true
	case map[string]any:
		for _, e := range x {
			if holdsFragment(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if holdsFragment(e) {
				return true
			}
		}
	}
	return false
}

// fragment is what a helper (include) or the chart's files gave, a Fragment when it is text.
func fragment(v any) any {
	if s, ok := v.(string); ok {
		return Fragment(s)
	}
	return v
}

// text is what tpl is given to render: a Fragment's text with its tokens, which no template
// text can be made of.
func text(v any) string {
	if f, ok := v.(Fragment); ok {
		return string(f)
	}
	return fmt.Sprint(plainValue(v))
}

// tplResult is what tpl rendered of in: a Fragment when in was one (structure made by the
// chart, values as tokens); else a value, read back as plain text.
func tplResult(in any, out any) any {
	s := fmt.Sprint(out)
	if _, ok := in.(Fragment); ok {
		return Fragment(s)
	}
	return Plain(s)
}

// format applies a formatting function to v, a Fragment staying one.
func format(v any, f func(string) string) any {
	if fr, ok := v.(Fragment); ok {
		return Fragment(f(string(fr)))
	}
	return f(fmt.Sprint(plainValue(v)))
}

// indent is sprig's.
func indent(spaces int, s string) string {
	pad := strings.Repeat(" ", spaces)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}

// quote is sprig's quote or squote printing, between q, a token for each string.
func quote(q byte, k kind) func(...any) Fragment {
	return func(args ...any) Fragment {
		out := make([]string, 0, len(args))
		for _, a := range args {
			if a != nil {
				out = append(out, string(q)+tokenOrWord(k, strval(plainValue(a)))+string(q))
			}
		}
		return Fragment(strings.Join(out, " "))
	}
}

// strval is sprig's string of a value.
func strval(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case error:
		return v.Error()
	case fmt.Stringer:
		return v.String()
	}
	return fmt.Sprintf("%v", v)
}

// toJSON is toJson (or toPrettyJson) with every string and key that is not a word a token: the
// JSON text with each such string literal replaced by its token's.
func toJSON(v any, pretty bool) (Fragment, error) {
	v = plainValue(v)
	var b []byte
	var err error
	if pretty {
		b, err = json.MarshalIndent(v, "", "  ")
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		return "", err
	}
	var out strings.Builder
	out.Grow(len(b) * 2)
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			out.WriteByte(b[i])
			continue
		}
		end, escaped := i+1, false // the closing quote
		for ; b[end] != '"'; end++ {
			if b[end] == '\\' {
				end, escaped = end+1, true
			}
		}
		literal := b[i+1 : end]
		str := string(literal)
		if escaped {
			if err := json.Unmarshal(b[i:end+1], &str); err != nil {
				return "", err
			}
		}
		out.WriteByte('"')
		if escaped || !word(str) {
			out.WriteString(token(jsonString, str))
		} else {
			out.Write(literal)
		}
		out.WriteByte('"')
		i = end
	}
	return Fragment(out.String()), nil
}

// toYAML is Helm's toYaml with every string and key that is not a word a token.
func toYAML(v any) (Fragment, error) {
	t, err := tokenized(plainValue(v), yamlString)
	if err != nil {
		return "", err
	}
	b, err := yaml.Marshal(t)
	return Fragment(strings.TrimSuffix(string(b), "\n")), err
}

// tokenized is v as JSON would have it, every string and key that is not a word replaced by
// its token.
func tokenized(v any, k kind) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	var walk func(any) any
	walk = func(x any) any {
		switch x := x.(type) {
		case string:
			if word(x) {
				return x // the encoder quotes it where YAML would read another type
			}
			return token(k, x)
		case map[string]any:
			m := make(map[string]any, len(x))
			for key, e := range x {
				if !word(key) {
					key = token(k, key)
				}
				m[key] = walk(e)
			}
			return m
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
			return x
		}
		return x
	}
	return walk(tree), nil
}

// fromYAML is Helm's fromYaml of a text: a Fragment's tokens are read as the values they stand
// for, never as YAML; an error goes under "Error", as Helm's.
func fromYAML(v any) map[string]any {
	m := map[string]any{}
	doc, err := read(v)
	if err == nil {
		if mm, ok := doc.(map[string]any); ok {
			return mm
		}
		if doc != nil {
			err = fmt.Errorf("the document is not a mapping")
		}
	}
	if err != nil {
		m["Error"] = err.Error()
	}
	return m
}

// fromYAMLArray is Helm's fromYamlArray, reading tokens as values.
func fromYAMLArray(v any) []any {
	doc, err := read(v)
	if err != nil {
		return []any{err.Error()}
	}
	if l, ok := doc.([]any); ok {
		return l
	}
	return []any{}
}

// fromJSON is fromJson, reading tokens as values.
func fromJSON(v any) any {
	doc, _ := read(v)
	return doc
}

// fromJSONArray is Helm's fromJsonArray, reading tokens as values.
func fromJSONArray(v any) []any {
	doc, err := read(v)
	if err != nil {
		return []any{err.Error()}
	}
	l, _ := doc.([]any)
	return l
}

// read parses a text as one YAML (or JSON) document: a Fragment with its tokens put back as
// values (Decode), other text as it is.
func read(v any) (any, error) {
	if f, ok := v.(Fragment); ok {
		return DecodeOne([]byte(f))
	}
	var out any
	err := yaml.Unmarshal([]byte(fmt.Sprint(plainValue(v))), &out)
	return out, err
}

// Plain replaces every token of s by the text it stands for, as the action that made it
// would have printed it there: what a Fragment is when it is computed with rather than
// printed, and what a token is inside a longer scalar.
func Plain(s string) string {
	if !hasToken(s) {
		return s
	}
	pieces, err := tokensIn(s)
	if err != nil {
		return s
	}
	var b strings.Builder
	at := 0
	for _, p := range pieces {
		b.WriteString(s[at:p.start])
		b.WriteString(inText(p))
		at = p.end
	}
	b.WriteString(s[at:])
	return b.String()
}

// inText is how a token's text reads in the middle of other text: inside the quotes a
// quoting function printed, escaped as it escapes; a YAML string as a double-quoted one.
func inText(p piece) string {
	switch p.kind {
	case goQuoted:
		q := strconv.Quote(p.text)
		return q[1 : len(q)-1]
	case jsonString:
		b, _ := json.Marshal(p.text)
		return string(b[1 : len(b)-1])
	case yamlString:
		b, _ := json.Marshal(p.text)
		return string(b)
	}
	return p.text
}
