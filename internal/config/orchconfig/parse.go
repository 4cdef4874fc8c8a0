package orchconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// FieldError is one problem in a document: where it is and what is wrong.
type FieldError struct {
	// Line is the 1-based line in the document, or 0 when unknown.
	Line int `json:"line,omitempty"`
	// Path is the field path, for example profiles[0].backends[1].version.
	Path string `json:"path,omitempty"`
	// Message says what is wrong.
	Message string `json:"message"`
}

func (e FieldError) String() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// InvalidError lists every problem found in a document. An invalid document is never used.
type InvalidError struct {
	Errors []FieldError
}

func (e *InvalidError) Error() string {
	msgs := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		msgs[i] = fe.String()
	}
	return "invalid orchestrator config: " + strings.Join(msgs, "; ")
}

// Parse decodes one Orchestrator Config document strictly (unknown fields are errors) and
// validates it as a whole. Every error carries the line it refers to. On error the returned
// Config is nil: an invalid document is never half-used.
func Parse(data []byte) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &InvalidError{Errors: []FieldError{yamlSyntaxError(err, data)}}
	}
	if root.Kind == 0 {
		return nil, &InvalidError{Errors: []FieldError{{Message: "the document is empty"}}}
	}
	if err := rejectExtraDocuments(data); err != nil {
		return nil, err
	}

	var cfg Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return nil, &InvalidError{Errors: decodeErrors(err, data)}
	}

	if errs := Validate(&cfg); len(errs) > 0 {
		for i := range errs {
			errs[i].Line = lineOf(&root, errs[i].Path)
		}
		return nil, &InvalidError{Errors: errs}
	}
	return &cfg, nil
}

func rejectExtraDocuments(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var first, second yaml.Node
	if err := dec.Decode(&first); err != nil {
		return nil
	}
	switch err := dec.Decode(&second); {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil: // what follows the first document is not YAML
		return &InvalidError{Errors: []FieldError{yamlSyntaxError(err, data)}}
	}
	return &InvalidError{Errors: []FieldError{{Line: second.Line, Message: "a config must be exactly one YAML document"}}}
}

var (
	yamlLine     = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	unknownField = regexp.MustCompile(`^line (\d+): field (\S+) not found in type \S+$`)
	lineMessage  = regexp.MustCompile(`^line (\d+): (.*)$`)
	typeMismatch = regexp.MustCompile(`^line (\d+): cannot unmarshal !!(\w+) (.*) into (\S+)$`)
)

func yamlSyntaxError(err error, data []byte) FieldError {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return FieldError{Line: line, Message: "not valid YAML: " + m[2]}
	}
	return FieldError{Line: syntaxErrorLine(err, data), Message: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
}

// syntaxErrorLine places a YAML error that yaml.v3 reports without a line (an unterminated
// quote or bracket, a tab, an unknown alias): on the first line whose prefix of the document
// fails with the same error (yaml.v3 has no typed syntax error: the same message), else at the
// end of the document. Past 1,000 lines the search costs too much and the end is the answer.
func syntaxErrorLine(err error, data []byte) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	last := len(lines)
	if last > 1 && len(lines[last-1]) == 0 {
		last-- // the document ends with a newline
	}
	if last > 1000 {
		return last
	}
	for n := 1; n < last; n++ {
		var node yaml.Node
		if e := yaml.Unmarshal(bytes.Join(lines[:n], nil), &node); e != nil && e.Error() == err.Error() {
			return n
		}
	}
	return last
}

// decodeErrors turns yaml.v3's decoding errors into field errors. The text is reworded for
// people; no decision depends on it.
func decodeErrors(err error, data []byte) []FieldError {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return []FieldError{yamlSyntaxError(err, data)}
	}
	out := make([]FieldError, 0, len(te.Errors))
	for _, msg := range te.Errors {
		switch m := unknownField.FindStringSubmatch(msg); {
		case m != nil:
			line, _ := strconv.Atoi(m[1])
			out = append(out, FieldError{Line: line, Message: fmt.Sprintf("unknown field %q", m[2])})
			continue
		}
		if m := typeMismatch.FindStringSubmatch(msg); m != nil {
			line, _ := strconv.Atoi(m[1])
			out = append(out, FieldError{Line: line, Message: fmt.Sprintf("expected %s, found %s %s", goTypeNoun(m[4]), m[2], m[3])})
			continue
		}
		if m := lineMessage.FindStringSubmatch(msg); m != nil {
			line, _ := strconv.Atoi(m[1])
			out = append(out, FieldError{Line: line, Message: m[2]})
			continue
		}
		out = append(out, FieldError{Line: syntaxErrorLine(err, data), Message: msg})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

func goTypeNoun(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping"
	case t == "string":
		return "a string"
	case t == "int" || t == "int32" || t == "int64":
		return "an integer"
	case t == "bool":
		return "true or false"
	default:
		return "a mapping"
	}
}

// LineOf is the line of a field path in a document, 0 when the document does not parse.
func LineOf(data []byte, path string) int {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil || root.Kind == 0 {
		return 0
	}
	return lineOf(&root, path)
}

// lineOf finds the line of a field path such as profiles[0].backends[1].version in the
// document, falling back to the nearest ancestor that exists.
func lineOf(root *yaml.Node, path string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, step := range splitPath(path) {
		next, keyLine := child(n, step)
		if next == nil {
			if keyLine > 0 {
				return keyLine
			}
			return line
		}
		n, line = next, keyLine
	}
	return line
}

type pathStep struct {
	key   string
	index int // -1 for a map key
}

func splitPath(path string) []pathStep {
	var steps []pathStep
	for _, part := range strings.Split(path, ".") {
		if part == "" {
			continue
		}
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			steps = append(steps, pathStep{key: name, index: -1})
		}
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			i, err := strconv.Atoi(idx)
			if err != nil {
				steps = append(steps, pathStep{key: idx, index: -1})
			} else {
				steps = append(steps, pathStep{index: i})
			}
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return steps
}

// child returns the node a step leads to and the line where it is written.
func child(n *yaml.Node, s pathStep) (*yaml.Node, int) {
	switch {
	case s.index >= 0 && n.Kind == yaml.SequenceNode:
		if s.index < len(n.Content) {
			return n.Content[s.index], n.Content[s.index].Line
		}
	case s.index < 0 && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == s.key {
				return n.Content[i+1], n.Content[i].Line
			}
		}
		// Inlined structs (ProfileSelector embeds Selector) have no node of their own.
	}
	return nil, 0
}
