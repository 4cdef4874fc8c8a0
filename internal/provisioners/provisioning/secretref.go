package provisioning

import (
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/placeholder"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/tplfuncs"
)

// Secret references. score-k8s encodes a reference to a key of a Secret as
// "🔐💬<secret>_<key>💬🔐" in an output (encodeSecretRef); a run replaces it with the key's
// value, which goes to the claim's outputs Secret only. Whoever could put that text in an
// output would read a Secret with the provisioner's rights, so a reference resolves only when
// both hold:
//
//   - The definition made it, in this run: with encodeSecretRef, in its templates' own text, or
//     in its command's answer. A run marks those references with the process's mark
//     (madePrefix) and resolves marked ones only; text that came from the run's data (a param,
//     metadata, the state, an API's answer, a run's published outputs) is never marked, and an
//     output holding it is refused. The mark is taken off everything else a run produces (its
//     state, shared state and manifests), so it never leaves the run: a reference kept in the
//     state is a reference the next run did not make.
//   - It names a Secret of the instance (one the run's manifests create, one that carries the
//     instance's label, one an object of the run owns), or one the definition lists in
//     platformSecrets.
//
// Before a run, the tenant's part of its data (params, the resource's metadata, the
// Workload's metadata) is checked to hold neither character of a reference (CheckData): the
// orchestrator refuses them first (planner.CheckInputs), this is the defence in depth, for
// params composed from other claims' outputs.

// ErrReferenceRefused is a secret reference that is not resolved: the characters of one in
// what a tenant wrote, a reference the definition did not make, or a Secret that is neither
// the instance's nor one the definition lists. Terminal until the claim or the config changes.
var ErrReferenceRefused = errors.New("secret reference refused")

// referenceMark marks the references this process's runs make; drawn at random once, and
// never written anywhere.
var referenceMark = sync.OnceValue(rand.Text)

// madePrefix begins a reference a run made.
func madePrefix() string { return tplfuncs.SecretRefPrefix + referenceMark() + "/" }

// madePattern is a reference a run made: the made prefix, the Secret's name (which cannot hold
// "_"), "_", the key and score-k8s's suffix.
var madePattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(regexp.QuoteMeta(madePrefix()) + `([a-z0-9.-]+)_(.+?)` + regexp.QuoteMeta(tplfuncs.SecretRefSuffix))
})

// templates are the texts of a definition's templates that can make references: those the
// strategies render, and a chart's release and values.
func templates(def *orchconfig.Provisioner) []*string {
	out := []*string{&def.Init, &def.State, &def.Shared, &def.Outputs, &def.Manifests}
	if def.Helm != nil {
		out = append(out, &def.Helm.Release, &def.Helm.Values)
	}
	return out
}

// withMadeReferences is a definition prepared for a run: the references its templates make
// come out marked as the run's (madeText).
func withMadeReferences(def orchconfig.Provisioner) orchconfig.Provisioner {
	if def.Helm != nil {
		h := *def.Helm
		def.Helm = &h
	}
	for _, text := range templates(&def) {
		*text = madeText(*text)
	}
	return def
}

// madeTexts keeps the marked form of each template text, so that a process parses a text to
// mark it once: the marked text is the same for the whole process, and so is the parsed
// template tplfuncs caches for it. Bounded as tplfuncs's cache is: a config holds far fewer
// templates, and a new config's replace the old ones over time.
var madeTexts = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

// madeText is a template's text with the references it makes marked as the run's: score-k8s's
// prefix written in its own text takes the mark, and each call of encodeSecretRef becomes a
// printf of the marked form (EncodeSecretRef's, mark added). The calls are found by parsing,
// so a string or a comment that spells the name is left as it is; a text that does not parse
// is left for the render to report.
func madeText(text string) string {
	if !strings.Contains(text, tplfuncs.SecretRefPrefix) && !strings.Contains(text, encodeSecretRef) {
		return text
	}
	madeTexts.Lock()
	out, ok := madeTexts.m[text]
	madeTexts.Unlock()
	if ok {
		return out
	}
	out = strings.ReplaceAll(text, tplfuncs.SecretRefPrefix, madePrefix())
	if t, err := template.New("made").Funcs(tplfuncs.Provisioner()).Parse(out); err == nil {
		var calls []int
		for _, named := range t.Templates() {
			if named.Tree != nil {
				calls = append(calls, encodeCalls(named.Root)...)
			}
		}
		slices.Sort(calls)
		encode := `printf "` + madePrefix() + `%s_%s` + tplfuncs.SecretRefSuffix + `"`
		for _, pos := range slices.Backward(calls) {
			if strings.HasPrefix(out[pos:], encodeSecretRef) {
				out = out[:pos] + encode + out[pos+len(encodeSecretRef):]
			}
		}
	}
	madeTexts.Lock()
	if len(madeTexts.m) >= 1024 {
		madeTexts.m = map[string]string{}
	}
	madeTexts.m[text] = out
	madeTexts.Unlock()
	return out
}

// encodeSecretRef is the name of score-k8s's function that makes a reference.
const encodeSecretRef = "encodeSecretRef"

// encodeCalls are the positions, in the text, of the calls of encodeSecretRef under node.
func encodeCalls(node parse.Node) []int {
	var out []int
	var walk func(parse.Node)
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n != nil {
				for _, c := range n.Nodes {
					walk(c)
				}
			}
		case *parse.ActionNode:
			walk(n.Pipe)
		case *parse.PipeNode:
			if n != nil {
				for _, c := range n.Cmds {
					walk(c)
				}
			}
		case *parse.CommandNode:
			for _, a := range n.Args {
				walk(a)
			}
		case *parse.ChainNode:
			walk(n.Node)
		case *parse.IdentifierNode:
			if n.Ident == encodeSecretRef {
				out = append(out, int(n.Pos))
			}
		case *parse.IfNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.RangeNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.WithNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.TemplateNode:
			walk(n.Pipe)
		}
	}
	walk(node)
	return out
}

// unmark takes the run's mark off the references in v's strings: what a run keeps or applies
// holds score-k8s's references, as the definition wrote them. v itself is returned when it holds
// none, as it mostly does (a copy only where there is a mark to take off).
func unmark(v any) any {
	prefix := madePrefix()
	if !holds(v, prefix) {
		return v
	}
	out, _ := placeholder.MapStrings(v, func(s string) (string, error) {
		return strings.ReplaceAll(s, prefix, tplfuncs.SecretRefPrefix), nil
	})
	return out
}

// holds reports whether a string in v holds text.
func holds(v any, text string) bool {
	switch x := v.(type) {
	case string:
		return strings.Contains(x, text)
	case map[string]any:
		for _, e := range x {
			if holds(e, text) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if holds(e, text) {
				return true
			}
		}
	}
	return false
}

// unmarkMap is unmark of a map, nil kept nil.
func unmarkMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return unmark(m).(map[string]any)
}

// unmarkManifests is unmark of each manifest.
func unmarkManifests(ms []map[string]any) {
	for i, m := range ms {
		ms[i] = unmarkMap(m)
	}
}

// markCommand marks the references in a command's outputs as the run's: the command is the
// definition, and its input held none a tenant wrote (CheckData).
func markCommand(outputs map[string]any) map[string]any {
	if !holds(outputs, tplfuncs.SecretRefPrefix) {
		return outputs
	}
	prefix := madePrefix()
	out, _ := placeholder.MapStrings(outputs, func(s string) (string, error) {
		return strings.ReplaceAll(s, tplfuncs.SecretRefPrefix, prefix), nil
	})
	return out.(map[string]any)
}

// CheckData refuses data whose tenant part — the params, the resource's metadata and the
// Workload's metadata — holds a character of a secret reference, naming the field.
func CheckData(d Data) error {
	for _, part := range []struct {
		field string
		v     map[string]any
	}{{"params", d.Params}, {"metadata", d.Metadata}, {"the workload's metadata", d.WorkloadMetadata}} {
		if path := planner.SecretRefIn(part.field, part.v); path != "" {
			return fmt.Errorf("%w: %s holds 🔐 or 💬, the characters of a secret reference, which only a definition may write", ErrReferenceRefused, path)
		}
	}
	return nil
}

// ReferencedSecret is a Secret a reference names, as read: whose it is, and the key's value.
type ReferencedSecret struct {
	Labels map[string]string
	// Owners are the UIDs of its owner references.
	Owners []string
	// Value is the key's; HasKey says whether the Secret has the key.
	Value  string
	HasKey bool
}

// ownedBy reports whether the Secret is the instance's: it carries the instance's label, or an
// object the run placed owns it (an operator's Secret of a resource the definition created).
func (s ReferencedSecret) ownedBy(instance string, placed []scorev1b1.AppliedObject) bool {
	if instance != "" && s.Labels[scorev1b1.LabelInstance] == instance {
		return true
	}
	for _, owner := range s.Owners {
		for _, o := range placed {
			if o.UID != "" && o.UID == owner {
				return true
			}
		}
	}
	return false
}

// referredSecret is the lookup of a run's references: a Secret the run's manifests create is
// read from them; any other through read, and only when it is the instance's or one the
// definition lists.
func referredSecret(def orchconfig.Provisioner, instance string, placed []scorev1b1.AppliedObject, inManifests map[SecretRef]string, read func(SecretRef) (ReferencedSecret, error)) func(SecretRef) (string, error) {
	return func(ref SecretRef) (string, error) {
		if v, ok := inManifests[ref]; ok {
			return v, nil
		}
		if read == nil {
			return "", fmt.Errorf("secret %s referenced by an output cannot be read here", ref.Name)
		}
		s, err := read(ref)
		if err != nil {
			return "", err
		}
		if !s.ownedBy(instance, placed) && !def.MayReferToPlatformSecret(ref.Name) {
			return "", fmt.Errorf("%w: secret %s is not the instance's (created by its manifests, labelled as its own or owned by one of its objects) and the definition does not list it in platformSecrets", ErrReferenceRefused, ref.Name)
		}
		if !s.HasKey {
			return "", fmt.Errorf("secret %s has no key %s", ref.Name, ref.Key)
		}
		return s.Value, nil
	}
}
