package yamltemplate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// OutputError is a template's output that is not the YAML its use needs: text that does not
// parse, or a document of the wrong shape (not an object, a list where a mapping is needed, an
// object without apiVersion or kind). A value a guarded template prints never causes one, so
// a value that does has broken out of its place.
type OutputError struct{ Err error }

func (e *OutputError) Error() string { return e.Err.Error() }

func (e *OutputError) Unwrap() error { return e.Err }

// OutputErrorf is an OutputError with fmt.Errorf's message.
func OutputErrorf(format string, a ...any) error {
	return &OutputError{Err: fmt.Errorf(format, a...)}
}

// errMangled is a token whose text was changed after it was printed.
var errMangled = errors.New("a printed value was changed after it was printed")

// Decode reads the YAML documents a guarded template printed, and puts back, in place of
// each token, the text it stands for, as a value: the whole scalar it fills (typed as YAML
// types a plain scalar, when it was printed as one: 3, true) or a part of a string. Whatever
// the text holds, it is never read as YAML, so it cannot add a key, an item, an object or a
// document, end a block or start a comment. Maps come out with string keys.
func Decode(out []byte) ([]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(out))
	var docs []any
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, located(err, out)
		}
		if err := substitute(&n, false); err != nil {
			return nil, err
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, err
		}
		docs = append(docs, normalize(v))
	}
}

// DecodeOne is Decode of output that is one document (nil when it is empty).
func DecodeOne(out []byte) (any, error) {
	docs, err := Decode(out)
	if err != nil {
		return nil, err
	}
	switch len(docs) {
	case 0:
		return nil, nil
	case 1:
		return docs[0], nil
	}
	return nil, fmt.Errorf("the output holds %d documents, not one", len(docs))
}

// substitute puts the tokens of n and its children back. Each node is reached once: an alias
// is not followed (the node it names comes before it, where it was put back).
func substitute(n *yaml.Node, key bool) error {
	if hasToken(n.Anchor) || hasToken(n.Tag) {
		return errors.New("a printed value is used as a YAML anchor or tag: values are only ever scalars")
	}
	switch n.Kind {
	case yaml.AliasNode:
		if hasToken(n.Value) {
			return errors.New("a printed value is used as a YAML alias: values are only ever scalars")
		}
	case yaml.ScalarNode:
		return scalar(n, key)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := substitute(n.Content[i], true); err != nil {
				return err
			}
			if err := substitute(n.Content[i+1], false); err != nil {
				return err
			}
		}
	default:
		for _, c := range n.Content {
			if err := substitute(c, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// scalar puts back the tokens of one scalar. A plain scalar of printed text only (and the
// template's own text) is typed as YAML would type it, a key aside; any other is a string.
func scalar(n *yaml.Node, key bool) error {
	if !hasToken(n.Value) {
		return nil
	}
	pieces, err := tokensIn(n.Value)
	if err != nil {
		return err
	}
	if len(pieces) == 0 {
		return nil
	}
	whole := len(pieces) == 1 && pieces[0].start == 0 && pieces[0].end == len(n.Value)
	typed := n.Style == 0 // plain, with no tag of the template's
	var b strings.Builder
	at := 0
	for _, p := range pieces {
		typed = typed && p.kind == printedText
		b.WriteString(n.Value[at:p.start])
		if whole {
			b.WriteString(p.text)
		} else {
			b.WriteString(inText(p))
		}
		at = p.end
	}
	b.WriteString(n.Value[at:])
	n.Value = b.String()
	switch {
	case n.Style&yaml.TaggedStyle != 0: // the template's own tag stands
	case typed && !key && n.Value != "<<":
		n.Tag = "" // typed as a plain scalar of this text would be
	default:
		n.Tag = "!!str"
	}
	return nil
}

// normalize makes a decoded value JSON's: maps with string keys.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
		return x
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = normalize(e)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
	}
	return v
}

var errorLine = regexp.MustCompile(`line (\d+)`)

// located adds to a YAML error the lines of the output it names (and the next, as YAML often
// names where a construct began), its tokens as the text they stand for, cut short, so that
// the template's author sees what was printed there.
func located(err error, out []byte) error {
	m := errorLine.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	n, _ := strconv.Atoi(m[1])
	lines := strings.Split(string(out), "\n")
	if n < 1 || n > len(lines) {
		return err
	}
	shown := lines[n-1 : min(n+1, len(lines))]
	for i := range shown {
		shown[i] = strings.TrimSpace(shown[i])
	}
	line := Plain(strings.Join(shown, " ⏎ "))
	if len(line) > 120 {
		line = line[:117] + "..."
	}
	return fmt.Errorf("%w: %q", err, line)
}
