package orchconfig

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Param is a param a definition supports (supported_params): score-k8s's plain name, or a
// mapping that also says what its value may be, checked before the definition renders.
//
//	supported_params:
//	  - path                                  # any value
//	  - {name: size, type: quantity}          # a Kubernetes quantity
//	  - {name: tier, pattern: "^(gold|silver)$", maxLength: 6}
type Param struct {
	Name string `json:"name" yaml:"name"`
	// Type is what the value must be (ParamTypes); empty admits any value.
	Type string `json:"type,omitempty" yaml:"type,omitempty"`
	// Pattern is a regular expression (RE2) the whole value, as a string, must match.
	Pattern string `json:"pattern,omitempty" yaml:"pattern,omitempty"`
	// MaxLength bounds the value's length, as a string, in bytes.
	MaxLength int `json:"maxLength,omitempty" yaml:"maxLength,omitempty"`
}

// ParamTypes say, by name, what a param's value may be, in the words of the message that
// refuses another.
var ParamTypes = map[string]string{
	"string":      "a string",
	"integer":     "an integer",
	"boolean":     "true or false",
	"quantity":    "a Kubernetes quantity such as 1Gi or 500m",
	"port":        "a port number from 1 to 65535",
	"servicePort": "a port number from 1 to 65535 or a port name (lower-case letters, digits and hyphens, at most 15)",
	"dnsLabel":    "a DNS label (lower-case letters, digits and hyphens, at most 63)",
	"dnsName":     "a lower-case DNS name such as app.example.com",
	"urlPath":     "a URL path that starts with / and holds no query, fragment, white space, control character or . or .. segment",
}

// UnmarshalYAML takes a plain name (score-k8s's form) or the mapping, whose unknown fields are
// errors as everywhere in the config.
func (p *Param) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		p.Name = n.Value
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a supported param is a name or a mapping with name, type, pattern and maxLength", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch k := n.Content[i].Value; k {
		case "name", "type", "pattern", "maxLength":
		default:
			return fmt.Errorf("line %d: field %s not found in a supported param", n.Content[i].Line, k)
		}
	}
	type plain Param
	return n.Decode((*plain)(p))
}

// UnmarshalJSON takes the same two forms.
func (p *Param) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &p.Name)
	}
	type plain Param
	return json.Unmarshal(b, (*plain)(p))
}

// MarshalJSON writes a param that says nothing of its value as its plain name.
func (p Param) MarshalJSON() ([]byte, error) {
	if p.Type == "" && p.Pattern == "" && p.MaxLength == 0 {
		return json.Marshal(p.Name)
	}
	type plain Param
	return json.Marshal(plain(p))
}

// MarshalYAML likewise.
func (p Param) MarshalYAML() (any, error) {
	if p.Type == "" && p.Pattern == "" && p.MaxLength == 0 {
		return p.Name, nil
	}
	type plain Param
	return plain(p), nil
}

// CheckParams checks the params a claim gives the definition against what its supported
// params say of their values; the error names the first param refused, in name order, and
// quotes its value cut short.
func (p Provisioner) CheckParams(params map[string]any) error {
	names := make([]string, 0, len(p.SupportedParams))
	rules := map[string]Param{}
	for _, sp := range p.SupportedParams {
		if sp.Type != "" || sp.Pattern != "" || sp.MaxLength > 0 {
			names = append(names, sp.Name)
			rules[sp.Name] = sp
		}
	}
	sort.Strings(names)
	for _, name := range names {
		v, ok := params[name]
		if !ok || v == nil {
			continue
		}
		if err := rules[name].Check(v); err != nil {
			return &ParamError{Param: name, Want: err.Error(), Value: shown(v)}
		}
	}
	return nil
}

// ParamError is a param whose value its definition refuses.
type ParamError struct {
	// Param is its name; Want what its value must be; Value the value, quoted and cut short.
	Param, Want, Value string
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("params.%s must be %s, not %s", e.Param, e.Want, e.Value)
}

// paramError is what a value should have been.
type paramError string

func (e paramError) Error() string { return string(e) }

// Check checks one value.
func (p Param) Check(v any) error {
	s, isString := v.(string)
	if !isString {
		b, _ := json.Marshal(v)
		s = string(b)
	}
	if p.Type != "" && !typed(p.Type, v, s, isString) {
		return paramError(ParamTypes[p.Type])
	}
	if p.MaxLength > 0 && len(s) > p.MaxLength {
		return paramError(fmt.Sprintf("at most %d bytes long", p.MaxLength))
	}
	if p.Pattern != "" {
		if re, err := regexp.Compile(p.Pattern); err != nil || !re.MatchString(s) {
			return paramError(fmt.Sprintf("a value that matches %s", p.Pattern))
		}
	}
	return nil
}

// typed reports whether v is of the type named t; s is its string (JSON for a non-string).
func typed(t string, v any, s string, isString bool) bool {
	switch t {
	case "string":
		return isString
	case "integer":
		_, ok := integer(v)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "quantity":
		if !isString {
			_, ok := integer(v)
			return ok
		}
		_, err := resource.ParseQuantity(s)
		return err == nil
	case "port":
		n, ok := integer(v)
		return ok && n >= 1 && n <= 65535
	case "servicePort":
		if n, ok := integer(v); ok {
			return n >= 1 && n <= 65535
		}
		return isString && len(validation.IsValidPortName(s)) == 0
	case "dnsLabel":
		return isString && len(validation.IsDNS1123Label(s)) == 0
	case "dnsName":
		return isString && len(validation.IsDNS1123Subdomain(s)) == 0
	case "urlPath":
		return isString && urlPath(s)
	}
	return false
}

// integer is v as a whole number: a JSON number without a fraction, or a string of digits.
func integer(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case float64:
		return int64(x), x == math.Trunc(x) && math.Abs(x) < 1<<53
	case json.Number:
		n, err := x.Int64()
		return n, err == nil
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// urlPath reports whether s is an absolute URL path with nothing but the path.
func urlPath(s string) bool {
	if !strings.HasPrefix(s, "/") || strings.ContainsAny(s, "?#\\") {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	for _, seg := range strings.Split(s, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// shown is a value as a message quotes it: as Go quotes strings (control characters
// escaped), cut to 64 bytes.
func shown(v any) string {
	s, ok := v.(string)
	if !ok {
		b, _ := json.Marshal(v)
		s = string(b)
	}
	if len(s) > 64 {
		s = s[:61] + "..."
	}
	return strconv.Quote(s)
}
