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

// The functions a guarded template calls. A config's templates cannot name them: they are
// added to the actions after parsing, and a template's text may not hold the token marker.
const (
	fnValue        = "_scoreValue"
	fnValueHelm    = "_scoreValueHelm"
	fnQuote        = "_scoreQuote"
	fnSquote       = "_scoreSquote"
	fnQuoteJSON    = "_scoreQuoteJSON"
	fnToJSON       = "_scoreToJson"
	fnToPrettyJSON = "_scoreToPrettyJson"
	fnToYAML       = "_scoreToYaml"
	fnPlain        = "_scorePlain"
)

// Funcs are the functions guarded templates call: add them to a template's functions before
// it is parsed. They keep no state: a token carries its text.
func Funcs() template.FuncMap {
	return template.FuncMap{
		fnValue:        func(v any) string { return tokenOrWord(printedText, printed(v, "<no value>")) },
		fnValueHelm:    func(v any) string { return tokenOrWord(printedText, printed(v, "")) },
		fnQuote:        quote('"', goQuoted),
		fnSquote:       quote('\'', singleQuoted),
		fnQuoteJSON:    func(v any) string { return `"` + tokenOrWord(jsonString, fmt.Sprint(v)) + `"` },
		fnToJSON:       func(v any) (string, error) { return toJSON(v, false) },
		fnToPrettyJSON: func(v any) (string, error) { return toJSON(v, true) },
		fnToYAML:       toYAML,
		fnPlain:        Plain,
	}
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

// quote is sprig's quote or squote printing, between q, a token for each string.
func quote(q byte, k kind) func(...any) string {
	return func(args ...any) string {
		out := make([]string, 0, len(args))
		for _, a := range args {
			if a != nil {
				out = append(out, string(q)+tokenOrWord(k, strval(a))+string(q))
			}
		}
		return strings.Join(out, " ")
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

// toJSON is toJson (or toPrettyJson) with every string and key a token: the JSON text with
// each string literal replaced by its token's.
func toJSON(v any, pretty bool) (string, error) {
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
	return out.String(), nil
}

// toYAML is Helm's toYaml with every string and key a token.
func toYAML(v any) (string, error) {
	t, err := tokenized(v, yamlString)
	if err != nil {
		return "", err
	}
	b, err := yaml.Marshal(t)
	return strings.TrimSuffix(string(b), "\n"), err
}

// tokenized is v as JSON would have it, every string and key replaced by its token.
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

// Plain replaces every token of s by the text it stands for, as the action that made it
// would have printed it there: what an include's output is when it is computed with rather
// than printed, and what a token is inside a longer scalar.
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
