package yamltemplate

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
)

// Dialect is what a function set prints structure with: the functions whose output is a
// serialization (quote, toJson, toYaml), each replaced by the guarded one that prints tokens in
// place of the strings and returns a Fragment; and, for Helm, include, tpl and the chart's files.
type Dialect struct {
	// Serializers maps a serializing function to its guarded form.
	Serializers map[string]string
	// Value is the function every printing action ends in (before the indentation that ends
	// it).
	Value string
	// Helm: include prints another template (whose own actions are guarded), tpl renders a
	// text as a template, fromYaml and fromJson read a text, and .Files reads the chart's
	// files.
	Helm bool
}

// The dialects of the function sets that print YAML.
var (
	// Sprig is the provisioner templates' set: sprig and encodeSecretRef (tplfuncs).
	Sprig = Dialect{Serializers: sprigSerializers, Value: fnValue}
	// Manifests is the backend manifests templates' set (render.Funcs): its quote prints JSON.
	Manifests = Dialect{Serializers: map[string]string{"quote": fnQuoteJSON, "toJson": fnToJSON}, Value: fnValue}
	// Helm is a chart's: sprig, Helm's toYaml and fromYaml families, include, tpl; a value
	// that is not there prints nothing, as Helm prints it.
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

// Functions that keep what they are given as it is (a Fragment stays one): they choose, hold
// or pass on values, or format a Fragment (replaced by a form that keeps it one). Every other
// function is given plain text for a Fragment (fnPlain): it computes with what was printed, and
// what it returns is a value.
var (
	// formatters are replaced by forms that keep a Fragment one.
	formatters = map[string]string{
		"indent": fnIndent, "nindent": fnNindent,
		"trim": fnTrim, "trimSuffix": fnTrimSuffix, "trimPrefix": fnTrimPrefix,
	}
	// holders choose among, hold or pass on their arguments.
	holders = map[string]bool{
		"default": true, "ternary": true, "coalesce": true, "first": true, "last": true, "index": true,
		"get": true, "dict": true, "list": true, "tuple": true, "set": true, "unset": true, "merge": true,
		"mergeOverwrite": true, "mustMerge": true, "mustMergeOverwrite": true, "append": true, "mustAppend": true,
		"prepend": true, "mustPrepend": true, "concat": true, "pluck": true, "compact": true, "mustCompact": true,
		"initial": true, "mustInitial": true, "rest": true, "mustRest": true, "reverse": true, "mustReverse": true,
		"uniq": true, "mustUniq": true, "without": true, "mustWithout": true, "values": true, "deepCopy": true,
		"mustDeepCopy": true, "required": true, "and": true, "or": true,
	}
	// readers parse a text: replaced by forms that read a Fragment's tokens as values (Helm).
	readers = map[string]string{
		"fromYaml": fnFromYAML, "fromYamlArray": fnFromYAMLArray,
		"fromJson": fnFromJSON, "fromJsonArray": fnFromJSONArray, "mustFromJson": fnFromJSON,
	}
)

// Guard rewrites every template associated with t (its own and those it defines) so that
// whatever an action prints reaches the output as tokens, which Decode puts back as values.
// Call it once, right after parsing, with the dialect of the functions t was parsed with, then
// add Funcs.
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
	names := slices.Sorted(maps.Keys(trees))
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

// pipe rewrites a pipeline: each command by what it calls (command), and, when the pipeline
// prints, the value escaper added before the indentation that ends it. The escaper prints a
// Fragment as it is and anything else as a token.
func (g guard) pipe(p *parse.PipeNode, prints bool) {
	if p == nil {
		return
	}
	rest := len(p.Cmds)
	for rest > 1 && indents(p.Cmds[rest-1]) {
		rest--
	}
	var cmds []*parse.CommandNode
	for i, c := range p.Cmds {
		if prints && i == rest {
			cmds = append(cmds, g.call(g.d.Value, c.Position()))
		}
		cmds = append(cmds, g.command(c, i > 0)...)
	}
	if prints && rest == len(p.Cmds) {
		cmds = append(cmds, g.call(g.d.Value, p.Position()))
	}
	p.Cmds = cmds
}

// command rewrites one command, which is given the pipeline's value when piped; it returns the
// commands that stand for it.
func (g guard) command(c *parse.CommandNode, piped bool) []*parse.CommandNode {
	for _, a := range c.Args {
		g.arg(a)
	}
	name, calls := callee(c)
	switch {
	case !calls:
		if g.d.Helm && readsFiles(c) {
			// The chart's own files are structure as the chart wrote them.
			return []*parse.CommandNode{c, g.call(fnFragment, c.Position())}
		}
		return []*parse.CommandNode{c}
	case strings.HasPrefix(name, "_score"):
		return []*parse.CommandNode{c}
	case g.d.Serializers[name] != "":
		g.rename(c, g.d.Serializers[name])
		return []*parse.CommandNode{c}
	case formatters[name] != "":
		g.rename(c, formatters[name])
		return []*parse.CommandNode{c}
	case holders[name]:
		return []*parse.CommandNode{c}
	case g.d.Helm && name == "include":
		// A helper prints with its own actions guarded: what it prints is structure with
		// values as tokens.
		return []*parse.CommandNode{c, g.call(fnFragment, c.Position())}
	case g.d.Helm && readers[name] != "":
		g.rename(c, readers[name])
		return []*parse.CommandNode{c}
	case g.d.Helm && name == "tpl" && len(c.Args) == 3 && !piped:
		return []*parse.CommandNode{g.tpl(c)}
	}
	// Any other function computes with plain text: a Fragment given to it is read back.
	for i := 1; i < len(c.Args); i++ {
		if !literal(c.Args[i]) {
			c.Args[i] = g.wrap(fnPlain, c.Args[i])
		}
	}
	if piped {
		return []*parse.CommandNode{g.call(fnPlain, c.Position()), c}
	}
	return []*parse.CommandNode{c}
}

// tpl rewrites "tpl TEXT CONTEXT" as "_scoreTpl TEXT (tpl (_scoreText TEXT) CONTEXT)": the
// text is rendered with its tokens in it, which are inert there (no template text can be
// made of them), and what tpl printed stays a Fragment only when the text was one.
func (g guard) tpl(c *parse.CommandNode) *parse.CommandNode {
	text, ctx := c.Args[1], c.Args[2]
	inner := &parse.CommandNode{NodeType: parse.NodeCommand, Pos: c.Pos, Args: []parse.Node{c.Args[0], g.wrap(fnText, text.Copy()), ctx}}
	pipe := &parse.PipeNode{NodeType: parse.NodePipe, Pos: c.Pos, Cmds: []*parse.CommandNode{inner}}
	return &parse.CommandNode{NodeType: parse.NodeCommand, Pos: c.Pos, Args: []parse.Node{g.ident(fnTpl, c.Pos), text, pipe}}
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

// wrap is the argument a given to fn: "(fn A)".
func (g guard) wrap(fn string, a parse.Node) parse.Node {
	cmd := &parse.CommandNode{NodeType: parse.NodeCommand, Pos: a.Position(), Args: []parse.Node{g.ident(fn, a.Position()), a}}
	return &parse.PipeNode{NodeType: parse.NodePipe, Pos: a.Position(), Cmds: []*parse.CommandNode{cmd}}
}

func (g guard) rename(c *parse.CommandNode, fn string) {
	c.Args[0] = g.ident(fn, c.Args[0].Position())
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

func isCall(c *parse.CommandNode, name string) bool {
	n, ok := callee(c)
	return ok && n == name
}

// indents reports whether a command (after the first) indents what it is given.
func indents(c *parse.CommandNode) bool {
	return isCall(c, "indent") || isCall(c, "nindent")
}

// literal reports whether an argument is written in the template: it holds no Fragment.
func literal(n parse.Node) bool {
	switch n.(type) {
	case *parse.StringNode, *parse.NumberNode, *parse.BoolNode, *parse.NilNode:
		return true
	}
	return false
}

// readsFiles reports whether a command reads the chart's files: .Files.Get, .Files.Glob and
// what they give (AsConfig, AsSecrets, Lines), from the top ($.Files) or the chart's values.
func readsFiles(c *parse.CommandNode) bool {
	if len(c.Args) == 0 {
		return false
	}
	switch n := c.Args[0].(type) {
	case *parse.FieldNode:
		return len(n.Ident) > 0 && n.Ident[0] == "Files"
	case *parse.VariableNode:
		return len(n.Ident) > 1 && n.Ident[0] == "$" && n.Ident[1] == "Files"
	case *parse.ChainNode:
		if p, ok := n.Node.(*parse.PipeNode); ok && len(p.Cmds) > 0 {
			return readsFiles(p.Cmds[len(p.Cmds)-1]) || isCall(p.Cmds[len(p.Cmds)-1], fnFragment)
		}
	}
	return false
}
