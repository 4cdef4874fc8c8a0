package yamltemplate

import (
	"fmt"
	"sort"
	"strings"
	"text/template"
	"text/template/parse"
)

// Dialect is what a function set prints structure with: the functions whose output is a
// serialization (quote, toJson, toYaml), each replaced, where an action ends in it, by the
// guarded one that prints tokens in place of the strings; and, for Helm, include and tpl.
type Dialect struct {
	// Serializers maps a serializing function to the guarded one a printing action calls
	// instead.
	Serializers map[string]string
	// Value is the function every other printing action ends in.
	Value string
	// Helm: include prints another template (whose own actions are guarded), and tpl renders
	// a text as a template.
	Helm bool
}

// The dialects of the function sets that print YAML.
var (
	// Sprig is the provisioner templates' set: sprig and encodeSecretRef (tplfuncs).
	Sprig = Dialect{Serializers: sprigSerializers, Value: fnValue}
	// Manifests is the backend manifests templates' set (render.Funcs): its quote prints JSON.
	Manifests = Dialect{Serializers: map[string]string{"quote": fnQuoteJSON, "toJson": fnToJSON}, Value: fnValue}
	// Helm is a chart's: sprig, Helm's toYaml family, include and tpl; a value that is not
	// there prints nothing, as Helm prints it.
	Helm = Dialect{Serializers: helmSerializers, Value: fnValueHelm, Helm: true}
)

var sprigSerializers = map[string]string{
	"quote": fnQuote, "squote": fnSquote,
	"toJson": fnToJSON, "toRawJson": fnToJSON, "mustToJson": fnToJSON, "mustToRawJson": fnToJSON,
	"toPrettyJson": fnToPrettyJSON, "mustToPrettyJson": fnToPrettyJSON,
}

var helmSerializers = func() map[string]string {
	m := map[string]string{"toYaml": fnToYAML, "mustToYaml": fnToYAML, "toYamlPretty": fnToYAML}
	for k, v := range sprigSerializers {
		m[k] = v
	}
	return m
}()

// Guard rewrites every template associated with t (its own and those it defines) so that
// whatever an action prints reaches the output as tokens, which Decode puts back as values.
// Call it once, right after parsing, with the dialect of the functions t was parsed with and
// Funcs among them.
func Guard(t *template.Template, d Dialect) error {
	for _, tmpl := range t.Templates() {
		if tmpl.Tree == nil || tmpl.Root == nil {
			continue
		}
		if err := checkLiteral(tmpl.Root); err != nil {
			return err
		}
		g := guard{tree: tmpl.Tree, d: d}
		g.list(tmpl.Root)
	}
	return nil
}

// GuardText is Guard for a template given as text (a chart's, which Helm parses itself): the
// text parsed, guarded and printed back, defines included. Comments are left out.
func GuardText(name, text string, d Dialect) (string, error) {
	trees := map[string]*parse.Tree{}
	t := parse.New(name)
	t.Mode = parse.SkipFuncCheck
	if _, err := t.Parse(text, "", "", trees); err != nil {
		return "", err
	}
	names := make([]string, 0, len(trees))
	for n := range trees {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		tree := trees[n]
		if err := checkLiteral(tree.Root); err != nil {
			return "", err
		}
		g := guard{tree: tree, d: d}
		g.list(tree.Root)
		if n == name {
			continue
		}
		fmt.Fprintf(&b, "{{define %q}}%s{{end}}", n, tree.Root.String())
	}
	if top, ok := trees[name]; ok {
		b.WriteString(top.Root.String())
	}
	return b.String(), nil
}

// checkLiteral refuses a template whose own text holds the token marker: its output could not
// be told from a value's.
func checkLiteral(root *parse.ListNode) error {
	if strings.Contains(root.String(), tokenMarker) {
		return fmt.Errorf("the template's text holds %q, which marks printed values", tokenMarker)
	}
	return nil
}

// guard rewrites the pipelines of one tree.
type guard struct {
	tree *parse.Tree
	d    Dialect
}

func (g guard) list(l *parse.ListNode) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		switch n := n.(type) {
		case *parse.ActionNode:
			g.pipe(n.Pipe, len(n.Pipe.Decl) == 0 && !n.Pipe.IsAssign)
		case *parse.IfNode:
			g.branch(&n.BranchNode)
		case *parse.WithNode:
			g.branch(&n.BranchNode)
		case *parse.RangeNode:
			g.branch(&n.BranchNode)
		case *parse.TemplateNode:
			if n.Pipe != nil {
				g.pipe(n.Pipe, false)
			}
		}
	}
}

func (g guard) branch(b *parse.BranchNode) {
	g.pipe(b.Pipe, false)
	g.list(b.List)
	g.list(b.ElseList)
}

// pipe rewrites a pipeline: the pipelines nested in its arguments, include (Helm) made to
// return what it printed wherever its output is computed with, and, when the pipeline
// prints, its end: a serializer replaced by its guarded form, or the value escaper added
// before the indentation that ends it.
func (g guard) pipe(p *parse.PipeNode, prints bool) {
	if p == nil {
		return
	}
	for _, c := range p.Cmds {
		for _, a := range c.Args {
			g.arg(a)
		}
	}
	head, rest := -1, len(p.Cmds)
	if prints {
		head, rest = g.end(p)
	}
	var cmds []*parse.CommandNode
	for i, c := range p.Cmds {
		if i == head {
			c = g.structural(c)
		}
		if i == rest && head < 0 {
			cmds = append(cmds, g.call(g.d.Value, c.Position()))
		}
		cmds = append(cmds, c)
		if g.d.Helm && isCall(c, "include") && i != head {
			cmds = append(cmds, g.call(fnPlain, c.Position()))
		}
	}
	if prints && head < 0 && rest == len(p.Cmds) {
		cmds = append(cmds, g.call(g.d.Value, p.Position()))
	}
	p.Cmds = cmds
}

// arg rewrites the pipelines nested in an argument.
func (g guard) arg(a parse.Node) {
	switch a := a.(type) {
	case *parse.PipeNode:
		g.pipe(a, false)
	case *parse.ChainNode:
		g.arg(a.Node)
	}
}

// end finds where a printing pipeline's value is made: the index of a structural head (a
// serializer, include, or tpl of a serializer) followed only by formatting, or -1; and the
// index of the indentation that ends the pipeline, where the value escaper goes otherwise.
func (g guard) end(p *parse.PipeNode) (head, rest int) {
	rest = len(p.Cmds)
	for rest > 1 && indents(p.Cmds[rest-1]) {
		rest--
	}
	i := rest - 1
	for i > 0 && trimsSpace(p.Cmds[i]) {
		i--
	}
	if i >= 0 && g.isStructural(p.Cmds[i]) {
		return i, rest
	}
	return -1, rest
}

// isStructural reports whether a command prints structure that is safe to splice once
// guarded: a serializer, include (whose template's own actions are guarded), or tpl of a
// serializer's output.
func (g guard) isStructural(c *parse.CommandNode) bool {
	name, ok := callee(c)
	if !ok {
		return false
	}
	if _, ok := g.d.Serializers[name]; ok {
		return true
	}
	if !g.d.Helm {
		return false
	}
	if name == "include" {
		return true
	}
	return name == "tpl" && g.serializes(c)
}

// serializes reports whether tpl's template argument is a serializer's output.
func (g guard) serializes(tpl *parse.CommandNode) bool {
	if len(tpl.Args) < 2 {
		return false
	}
	inner, ok := tpl.Args[1].(*parse.PipeNode)
	if !ok || len(inner.Decl) > 0 || len(inner.Cmds) == 0 {
		return false
	}
	name, ok := callee(inner.Cmds[len(inner.Cmds)-1])
	_, serializer := g.d.Serializers[name]
	return ok && serializer
}

// structural returns the structural head guarded: a serializer replaced by its guarded form,
// or tpl's serializer.
func (g guard) structural(c *parse.CommandNode) *parse.CommandNode {
	name, _ := callee(c)
	if guarded, ok := g.d.Serializers[name]; ok {
		c.Args[0] = g.ident(guarded, c.Args[0].Position())
		return c
	}
	if name == "tpl" {
		inner := c.Args[1].(*parse.PipeNode)
		last := inner.Cmds[len(inner.Cmds)-1]
		last.Args[0] = g.ident(g.d.Serializers[mustCallee(last)], last.Args[0].Position())
	}
	return c
}

// call is a command calling fn.
func (g guard) call(fn string, pos parse.Pos) *parse.CommandNode {
	return &parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos, Args: []parse.Node{g.ident(fn, pos)}}
}

func (g guard) ident(fn string, pos parse.Pos) *parse.IdentifierNode {
	return parse.NewIdentifier(fn).SetTree(g.tree).SetPos(pos)
}

// callee is the function a command calls, if it calls one.
func callee(c *parse.CommandNode) (string, bool) {
	if len(c.Args) == 0 {
		return "", false
	}
	id, ok := c.Args[0].(*parse.IdentifierNode)
	if !ok {
		return "", false
	}
	return id.Ident, true
}

func mustCallee(c *parse.CommandNode) string {
	name, _ := callee(c)
	return name
}

func isCall(c *parse.CommandNode, name string) bool {
	n, ok := callee(c)
	return ok && n == name
}

// indents reports whether a command (after the first) indents what it is given.
func indents(c *parse.CommandNode) bool {
	return isCall(c, "indent") || isCall(c, "nindent")
}

// trimsSpace reports whether a command only trims white space off what it is given: trim,
// or trimSuffix, trimPrefix and trimAll of a literal of white space.
func trimsSpace(c *parse.CommandNode) bool {
	name, ok := callee(c)
	switch {
	case !ok:
		return false
	case name == "trim":
		return len(c.Args) == 1
	case name == "trimSuffix", name == "trimPrefix", name == "trimAll":
		if len(c.Args) != 2 {
			return false
		}
		s, ok := c.Args[1].(*parse.StringNode)
		return ok && strings.TrimSpace(s.Text) == ""
	}
	return false
}
