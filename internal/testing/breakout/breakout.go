// Package breakout is what tests of values that must never become structure share: values
// that break out of every YAML context, and the comparison of what a template rendered with a
// benign value and with one of them.
package breakout

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/score-orchestrator/score-orchestrator/internal/templating/yamltemplate"
)

// Values end the scalar they are printed into, in each YAML context a template can print
// into (plain, flow, double- and single-quoted, block, comment, document), and add an object
// or a field of their own; or hold template syntax, anchors and tags, or the secret-reference
// markers; the last is a volume size that adds a privileged Deployment.
var Values = []string{
	"x\nkind: ClusterRoleBinding",
	"x], kind: ClusterRoleBinding, y: [z",
	"x}, {apiVersion: v1, kind: Pod, metadata: {name: evil}}, {y: z",
	"x\"\nhostNetwork: true\ny: \"z",
	"x'\nhostNetwork: true\ny: 'z",
	"x\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: evil}",
	"x # \n- apiVersion: v1\n  kind: Pod\n  metadata: {name: evil}",
	"x\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: evil}\n",
	"{{ .Namespace }}{{ .State }}",
	"&anchor *alias !!binary <<",
	"🔐💬colleague-db_password💬🔐",
	"1Gi}}\n    - apiVersion: apps/v1\n      kind: Deployment\n      metadata: {name: pwn}\n      spec: {template: {spec: {hostNetwork: true, hostPID: true, containers: [{name: c, image: x, securityContext: {privileged: true}}], volumes: [{name: r, hostPath: {path: /}}]}}}\n    - {apiVersion: v1, kind: ConfigMap, metadata: {name: y}, data: {x: \"",
}

// Benign is a value no template writes itself, rendered to compare with.
const Benign = "zbenign7"

// Broken reports whether a render failed for its output's YAML, which a value may never
// cause.
func Broken(err error) bool {
	var out *yamltemplate.OutputError
	return errors.As(err, &out)
}

// Holds reports whether some string of the objects (a value or a key) holds s as it is.
func Holds(objs []map[string]any, s string) bool {
	var walk func(any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case string:
			return strings.Contains(x, s)
		case map[string]any:
			for k, e := range x {
				if strings.Contains(k, s) || walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	for _, o := range objs {
		if walk(o) {
			return true
		}
	}
	return false
}

// Same says how got differs from base beyond the value printed (benign in base, hostile in
// got): the objects' number, kinds, namespaces, names and fields; "" when it does not. Only
// Benign is looked for in names and keys: a short value (/, 80) would be found where the
// template wrote it.
func Same(base, got []map[string]any, benign, hostile string) string {
	if len(base) != len(got) {
		return fmt.Sprintf("%d objects instead of %d: %v", len(got), len(base), identities(got))
	}
	replaced := func(s string) string {
		if benign != Benign {
			return s
		}
		return strings.ReplaceAll(s, benign, hostile)
	}
	for i := range base {
		b, g := base[i], got[i]
		for _, k := range []string{"apiVersion", "kind"} {
			if b[k] != g[k] {
				return fmt.Sprintf("object %d is %v %v, not %v %v", i, g["apiVersion"], g["kind"], b["apiVersion"], b["kind"])
			}
		}
		bm, _ := b["metadata"].(map[string]any)
		gm, _ := g["metadata"].(map[string]any)
		if bm["namespace"] != gm["namespace"] {
			return fmt.Sprintf("object %d is in namespace %v, not %v", i, gm["namespace"], bm["namespace"])
		}
		if name := stamped(gm); name != stamped(bm) && name != replaced(stamped(bm)) {
			return fmt.Sprintf("object %d is named %q, not %q", i, name, bm["name"])
		}
		bp, gp := paths("", b, replaced), paths("", g, func(s string) string { return s })
		if strings.Join(bp, "\n") != strings.Join(gp, "\n") {
			return fmt.Sprintf("object %d %v has other fields:\n%s", i, g["kind"], difference(bp, gp))
		}
	}
	return ""
}

// stamped is an object's name but for a digest of its content or inputs that ends it (a
// run's, the files' ConfigMap's): other content is another object by design.
func stamped(meta map[string]any) string {
	return digestSuffix.ReplaceAllString(fmt.Sprint(meta["name"]), "")
}

var digestSuffix = regexp.MustCompile(`-[0-9a-f]{8,}$`)

// paths lists the fields of v: every key (through name) and list index, to every scalar.
func paths(prefix string, v any, name func(string) string) []string {
	switch x := v.(type) {
	case map[string]any:
		var out []string
		for k, e := range x {
			out = append(out, paths(prefix+"."+name(k), e, name)...)
		}
		sort.Strings(out)
		return out
	case []any:
		var out []string
		for i, e := range x {
			out = append(out, paths(fmt.Sprintf("%s[%d]", prefix, i), e, name)...)
		}
		return out
	}
	return []string{prefix}
}

func difference(a, b []string) string {
	in := map[string]int{}
	for _, s := range a {
		in[s]++
	}
	for _, s := range b {
		in[s]--
	}
	var out []string
	for s, n := range in {
		switch {
		case n > 0:
			out = append(out, "- "+s)
		case n < 0:
			out = append(out, "+ "+s)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func identities(objs []map[string]any) []string {
	var out []string
	for _, o := range objs {
		m, _ := o["metadata"].(map[string]any)
		out = append(out, fmt.Sprintf("%v/%v", o["kind"], m["name"]))
	}
	return out
}
