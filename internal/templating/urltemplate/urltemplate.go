// Package urltemplate parses the URL templates of http+api:// provisioners so that every value
// they print lands in the URL as data, as html/template does for HTML: each action that prints
// is made to end in an escaper chosen by the part of the URL it prints into, read from the
// template's literal text before it. A tenant's param then cannot add a path segment, a query
// parameter or a fragment, and cannot change the host.
//
//   - In the path, a value is one segment: every character but letters, digits and -._~ is
//     percent-encoded (a slash too), and a value that is or holds the dot-segment . or ..
//     (between slashes or backslashes) is refused, since servers that decode %2F before
//     routing would take it as a traversal.
//   - In the query and the fragment, a value is one component: encoded the same way, so & = +
//     and # are data.
//   - Before the path (scheme, userinfo, host and port), a value may hold only letters, digits
//     and hyphens: it can name a label of the host (a region), not another host or domain.
//
// A missing value prints "<no value>", escaped, as text/template prints it. A template whose if or with branches end in different parts of
// the URL, whose range body ends in another part than it starts in, or that calls another
// template is refused: where its values land could not be told.
package urltemplate

import (
	"errors"
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/score-orchestrator/score-orchestrator/internal/templating/tplfuncs"
)

// part is where in a URL a printed value lands.
type part int

const (
	scheme   part = iota // before the first ':'
	slashes              // the "//" after the scheme's ':'
	host                 // userinfo, host and port
	path                 // from the first '/' after the host to '?' or '#'
	query                // from '?' to '#'
	fragment             // from '#'
)

func (p part) String() string {
	return [...]string{"scheme", "authority", "host", "path", "query", "fragment"}[p]
}

// Escaper names: a template cannot call them (a config's templates are parsed without them), so
// they are added to each action after parsing.
const (
	escapeHostLabel = "_urltemplate_hostlabel"
	escapeSegment   = "_urltemplate_segment"
	escapeComponent = "_urltemplate_component"
)

// escapers are the functions the rewritten actions call.
var escapers = template.FuncMap{
	escapeHostLabel: hostLabel,
	escapeSegment:   pathSegment,
	escapeComponent: component,
}

// Parse parses text as a URL template with the provisioner function set (tplfuncs.Parse, with
// options), every printing action ending in the escaper of the part of the URL it prints
// into. The result is a template of its own: the shared parsed one is not changed.
func Parse(name, text string, options ...string) (*template.Template, error) {
	return parseFrom(scheme, name, text, options...)
}

// ParseForm parses text as an application/x-www-form-urlencoded body (name=value&...), every
// value it prints escaped as one component, as in a URL's query: a tenant's value cannot add
// a field.
func ParseForm(name, text string, options ...string) (*template.Template, error) {
	return parseFrom(query, name, text, options...)
}

func parseFrom(start part, name, text string, options ...string) (*template.Template, error) {
	t, err := tplfuncs.Parse(name, text, escapers, options...)
	if err != nil {
		return nil, err
	}
	if t.Tree == nil {
		return t, nil // empty text: nothing to escape
	}
	t.Tree = t.Tree.Copy()
	w := walker{tree: t.Tree}
	if _, err := w.list(start, t.Root, nil); err != nil {
		return nil, err
	}
	return t, nil
}

// Check reports whether text parses as a URL template (for config validation).
func Check(text string) error {
	_, err := Parse("url", text)
	return err
}

// walker rewrites a template's actions, tracking the part of the URL its output is in.
type walker struct {
	tree *parse.Tree
}

// list walks the nodes of l from part p and returns the part after them. loop is the part a
// range body started in (nil outside a range): break and continue must leave from it.
func (w walker) list(p part, l *parse.ListNode, loop *part) (part, error) {
	if l == nil {
		return p, nil
	}
	for _, n := range l.Nodes {
		var err error
		switch n := n.(type) {
		case *parse.TextNode:
			p = advance(p, n.Text)
		case *parse.ActionNode:
			if len(n.Pipe.Decl) == 0 { // a declaration prints nothing
				n.Pipe.Cmds = append(n.Pipe.Cmds, w.call(escaperFor(p), n.Pos))
			}
		case *parse.IfNode:
			p, err = w.branches("an if", p, &n.BranchNode, loop)
		case *parse.WithNode:
			p, err = w.branches("a with", p, &n.BranchNode, loop)
		case *parse.RangeNode:
			p, err = w.loop(p, &n.BranchNode)
		case *parse.BreakNode, *parse.ContinueNode:
			if loop == nil || *loop != p {
				err = fmt.Errorf("a break or continue leaves its range in the %s, not where the range started", p)
			}
		case *parse.TemplateNode:
			err = errors.New("a url template may not call another template: where its values land could not be told")
		case *parse.CommentNode:
		default:
			err = fmt.Errorf("unexpected %s in a url template", n)
		}
		if err != nil {
			return p, err
		}
	}
	return p, nil
}

// branches walks an if or with: both branches must end in the same part.
func (w walker) branches(kind string, p part, b *parse.BranchNode, loop *part) (part, error) {
	then, err := w.list(p, b.List, loop)
	if err != nil {
		return p, err
	}
	otherwise, err := w.list(p, b.ElseList, loop)
	if err != nil {
		return p, err
	}
	if then != otherwise {
		return p, fmt.Errorf("the branches of %s end in different parts of the url (%s and %s)", kind, then, otherwise)
	}
	return then, nil
}

// loop walks a range: its body runs any number of times, so it must end where it starts, and
// its else branch too.
func (w walker) loop(p part, b *parse.BranchNode) (part, error) {
	start := p
	body, err := w.list(p, b.List, &start)
	if err != nil {
		return p, err
	}
	otherwise, err := w.list(p, b.ElseList, nil)
	if err != nil {
		return p, err
	}
	if body != p || otherwise != p {
		return p, fmt.Errorf("a range in the %s must end in the %s", p, p)
	}
	return p, nil
}

// call is a command calling the escaper name, for a pipeline at pos.
func (w walker) call(name string, pos parse.Pos) *parse.CommandNode {
	id := parse.NewIdentifier(name).SetTree(w.tree).SetPos(pos)
	return &parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos, Args: []parse.Node{id}}
}

func escaperFor(p part) string {
	switch p {
	case scheme, slashes, host:
		return escapeHostLabel
	case path:
		return escapeSegment
	}
	return escapeComponent
}

// advance reads literal text from part p and returns the part after it.
func advance(p part, text []byte) part {
	n := 0 // slashes seen after the scheme's ':'
	for _, c := range text {
		switch p {
		case scheme:
			switch c {
			case ':':
				p = slashes
			case '/':
				p = path // no scheme: rejected once rendered, for not being https
			case '?':
				p = query
			case '#':
				p = fragment
			}
		case slashes:
			if c == '/' && n < 2 {
				n++
				if n == 2 {
					p = host
				}
				continue
			}
			p = host
			fallthrough
		case host:
			switch c {
			case '/':
				p = path
			case '?':
				p = query
			case '#':
				p = fragment
			}
		case path:
			switch c {
			case '?':
				p = query
			case '#':
				p = fragment
			}
		case query:
			if c == '#' {
				p = fragment
			}
		}
	}
	return p
}

// printed is what text/template prints for v.
func printed(v any) string {
	if v == nil {
		return "<no value>"
	}
	return fmt.Sprint(v)
}

// hostLabel lets through a value made of letters, digits and hyphens only.
func hostLabel(v any) (string, error) {
	s := printed(v)
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return "", errors.New("a value before the url's path (in its scheme, host or port) may hold only letters, digits and hyphens")
		}
	}
	return s, nil
}

// errDotSegment refuses a path value that servers could take as a traversal.
var errDotSegment = errors.New("a value in the url's path may not be . or .. nor hold them between slashes")

// pathSegment encodes a value as (part of) one path segment, refusing dot-segments.
func pathSegment(v any) (string, error) {
	s := printed(v)
	for _, seg := range strings.FieldsFunc(s, func(c rune) bool { return c == '/' || c == '\\' }) {
		if seg == "." || seg == ".." {
			return "", errDotSegment
		}
	}
	return escape(s), nil
}

// component encodes a value as (part of) one query or fragment component.
func component(v any) string { return escape(printed(v)) }

// escape percent-encodes every byte of s but RFC 3986's unreserved characters (letters,
// digits and -._~): what is left cannot delimit anything in any part of a URL.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}
