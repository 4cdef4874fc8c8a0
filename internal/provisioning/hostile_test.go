package provisioning

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/conformance"
	"github.com/score-orchestrator/score-orchestrator/internal/tplfuncs"
)

// breakOuts end the scalar they are printed into, in each YAML context a template can print
// into (plain, flow, double- and single-quoted, block, comment, document), and add an object
// or a field of their own; or hold template syntax, anchors and tags, or the secret-reference
// markers; the last is issue 47's volume size.
var breakOuts = []string{
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

// TestHostileValuesNeverBecomeStructure feeds every param of every definition of the
// development catalog and of the conformance corpus (and the metadata a definition sees)
// break-out values for each YAML context, the definition's param types ignored (as if its
// author had forgotten them), and shows that what it renders is the same objects (kinds,
// namespaces, names but for the value printed in them, and the same fields) as with a benign
// value: a value lands where the template put it, as a value, or the run fails.
func TestHostileValuesNeverBecomeStructure(t *testing.T) {
	defs := catalogUnderTest(t)
	if dir := conformance.Require(t); dir != "" {
		defs = append(defs, corpusUnderTest(t, dir)...)
	}
	rendered := 0
	for _, d := range defs {
		t.Run(d.name, func(t *testing.T) {
			def := d.def
			def.SupportedParams = nil // the engine alone: no type refuses a value first
			base, err := renderObjects(def, d.params, nil)
			if err != nil {
				t.Fatalf("the definition does not render with benign params %v: %v", d.params, err)
			}
			rendered++
			for _, name := range paramNames(d) {
				// The benign value the break-outs are compared with: a distinctive one when the
				// definition takes it, so that where it lands is told apart from the rest.
				benign, baseline := any(distinctive), base
				params := with(d.params, name, distinctive)
				if b, err := renderObjects(def, params, nil); err == nil {
					baseline = b
				} else {
					benign = d.params[name]
				}
				printed := benign == distinctive && holds(baseline, distinctive)
				for _, v := range breakOuts {
					got, err := renderObjects(def, with(d.params, name, v), nil)
					if err != nil {
						if broken(err) {
							t.Errorf("params.%s = %q broke the output: %v", name, v, err)
						}
						continue // refused by the template (fail): nothing is applied
					}
					if diff := sameObjects(baseline, got, fmt.Sprint(benign), v); diff != "" {
						t.Errorf("params.%s = %q: %s", name, v, diff)
					}
					if printed && !holds(got, v) {
						t.Errorf("params.%s = %q is printed, and not as one value", name, v)
					}
				}
			}
			for _, v := range breakOuts {
				got, err := renderObjects(def, d.params, map[string]any{"hostile": v})
				if err != nil {
					if broken(err) {
						t.Errorf("an annotation %q broke the output: %v", v, err)
					}
					continue
				}
				if diff := sameObjects(base, got, distinctive, v); diff != "" {
					t.Errorf("an annotation %q: %s", v, diff)
				}
			}
		})
	}
	if rendered < 20 {
		t.Errorf("only %d definitions rendered: the test proves little", rendered)
	}
}

// distinctive is a benign value no template writes itself.
const distinctive = "zbenign7"

// with is params with name set to v.
func with(params map[string]any, name string, v any) map[string]any {
	out := map[string]any{}
	for k, e := range params {
		out[k] = e
	}
	out[name] = v
	return out
}

// benignParams are values of the corpus's params that its definitions check (a host name, a
// path, the web workload and its port), for params a paired Score file does not give or gives
// as a placeholder.
var benignParams = map[string]any{"host": "app.example.com", "path": "/api", "workload": "web", "port": "web"}

// underTest is a definition and the benign params it renders with.
type underTest struct {
	name   string
	def    orchconfig.Provisioner
	params map[string]any
}

// catalogUnderTest are the development catalog's definitions that render templates.
func catalogUnderTest(t *testing.T) []underTest {
	var out []underTest
	for _, p := range loadCatalog(t).Provisioners {
		if s, _ := StrategyOf(p.URI); !s.Pure() || p.Helm != nil {
			continue
		}
		params := catalogParams[p.Type]
		if p.Type == "image" {
			params = map[string]any{"context": "https://git.example/app.git", "revision": "main", "dockerfile": "Dockerfile"}
		}
		out = append(out, underTest{name: "catalog/" + p.Type, def: p, params: params})
	}
	return out
}

// corpusUnderTest are the corpus's template:// definitions, with the params their paired
// Score files give them (else each supported param "benign").
func corpusUnderTest(t *testing.T, dir string) []underTest {
	files, err := conformance.ProvisionerFiles()
	if err != nil {
		t.Fatal(err)
	}
	var out []underTest
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var defs []orchconfig.Provisioner
		if err := yaml.Unmarshal(raw, &defs); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		paired := pairedParams(t, f)
		for i, def := range defs {
			if s, _ := StrategyOf(def.URI); s != StrategyTemplate {
				continue
			}
			params := map[string]any{}
			for _, sp := range def.SupportedParams {
				params[sp.Name] = "benign"
			}
			for k, v := range paired[def.Type] {
				params[k] = v
			}
			for k, v := range params {
				if s, ok := v.(string); ok && (s == "benign" || strings.Contains(s, "${")) && benignParams[k] != nil {
					params[k] = benignParams[k] // a placeholder the orchestrator resolves
				}
			}
			rel, _ := filepath.Rel(dir, f)
			out = append(out, underTest{name: fmt.Sprintf("corpus/%s#%d", rel, i), def: def, params: params})
		}
	}
	return out
}

// pairedParams are the params, by resource type, of the Score file paired with a community
// provisioner file (NAME.provisioners__score.yaml beside NAME.provisioners.yaml).
func pairedParams(t *testing.T, file string) map[string]map[string]any {
	raw, err := os.ReadFile(strings.TrimSuffix(file, ".yaml") + "__score.yaml")
	if err != nil {
		return nil
	}
	var score struct {
		Resources map[string]struct {
			Type   string         `yaml:"type"`
			Params map[string]any `yaml:"params"`
		} `yaml:"resources"`
	}
	if err := yaml.Unmarshal(raw, &score); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	out := map[string]map[string]any{}
	for _, r := range score.Resources {
		if r.Params != nil {
			out[r.Type] = r.Params
		}
	}
	return out
}

// paramNames are the params tried: those the definition supports and those it is given.
func paramNames(d underTest) []string {
	seen := map[string]bool{}
	for _, p := range d.def.SupportedParams {
		seen[p.Name] = true
	}
	for k := range d.params {
		seen[k] = true
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// renderObjects runs a definition as the provisioner does (offline: deterministic random
// functions) for Workload web, whose annotations the metadata a definition sees carries.
func renderObjects(def orchconfig.Provisioner, params, annotations map[string]any) ([]map[string]any, error) {
	strategy, err := StrategyOf(def.URI)
	if err != nil {
		return nil, err
	}
	if annotations == nil {
		annotations = map[string]any{"hostile": distinctive}
	}
	web := &scorev1b1.Workload{}
	web.Name, web.Namespace = "web", "team"
	web.Annotations = map[string]string{}
	for k, v := range annotations {
		web.Annotations[k] = fmt.Sprint(v)
	}
	web.Spec.Service = &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"web": {Port: 8080, TargetPort: ptr.To(int32(8081))}}}
	dep := &scorev1b1.Workload{}
	dep.Name, dep.Namespace = "dep", "team"
	dep.Spec.Service = &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"http": {Port: 8080}}}
	data := NewData(DataInput{
		Identity: NewIdentity("team", "web", "dep", def.Type, "", ""),
		Params:   params, Metadata: map[string]any{"annotations": annotations},
		Source: "web", SourceWorkload: web, Workloads: []*scorev1b1.Workload{web, dep},
	})
	res, err := Provision(context.Background(), strategy, def, data, Env{Funcs: tplfuncs.Deterministic("hostile")})
	return res.Manifests, err
}

// sameObjects says how got differs from base beyond the value printed (benign in base,
// hostile in got): the objects' number, kinds, namespaces, names and fields.
func sameObjects(base, got []map[string]any, benign, hostile string) string {
	if len(base) != len(got) {
		return fmt.Sprintf("%d objects instead of %d: %v", len(got), len(base), identities(got))
	}
	replaced := func(s string) string {
		if benign != distinctive {
			return s // a short value (/, 80) would be found where the template wrote it
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

// broken reports whether a run failed for its output's YAML: what a value may never cause.
func broken(err error) bool {
	for _, s := range []string{"not YAML", "must produce", "is not an object", "no apiVersion or kind"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}

// holds reports whether some string of the objects (a value or a key) holds s as it is.
func holds(objs []map[string]any, s string) bool {
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

// stamped is an object's name, but for the digest of its inputs that a runnable's run is
// stamped with (runnable.Stamp): every input makes another run.
func stamped(meta map[string]any) string {
	name := fmt.Sprint(meta["name"])
	labels, _ := meta["labels"].(map[string]any)
	if _, isRun := labels[scorev1b1.LabelRunOf]; isRun {
		if i := strings.LastIndex(name, "-"); i > 0 {
			return name[:i]
		}
	}
	return name
}

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
	in := func(l []string, s string) bool {
		for _, e := range l {
			if e == s {
				return true
			}
		}
		return false
	}
	var out []string
	for _, s := range a {
		if !in(b, s) {
			out = append(out, "- "+s)
		}
	}
	for _, s := range b {
		if !in(a, s) {
			out = append(out, "+ "+s)
		}
	}
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
