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
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/tplfuncs"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/breakout"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/conformance"
)

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
				// The benign value the break-outs are compared with: a breakout.Benign one when the
				// definition takes it, so that where it lands is told apart from the rest.
				benign, baseline := any(breakout.Benign), base
				params := with(d.params, name, breakout.Benign)
				if b, err := renderObjects(def, params, nil); err == nil {
					baseline = b
				} else {
					benign = d.params[name]
				}
				printed := benign == breakout.Benign && breakout.Holds(baseline, breakout.Benign)
				for _, v := range breakout.Values {
					got, err := renderObjects(def, with(d.params, name, v), nil)
					if err != nil {
						if breakout.Broken(err) {
							t.Errorf("params.%s = %q broke the output: %v", name, v, err)
						}
						continue // refused by the template (fail): nothing is applied
					}
					if diff := breakout.Same(baseline, got, fmt.Sprint(benign), v); diff != "" {
						t.Errorf("params.%s = %q: %s", name, v, diff)
					}
					if printed && !breakout.Holds(got, v) {
						t.Errorf("params.%s = %q is printed, and not as one value", name, v)
					}
				}
			}
			for _, v := range breakout.Values {
				got, err := renderObjects(def, d.params, map[string]any{"hostile": v})
				if err != nil {
					if breakout.Broken(err) {
						t.Errorf("an annotation %q broke the output: %v", v, err)
					}
					continue
				}
				if diff := breakout.Same(base, got, breakout.Benign, v); diff != "" {
					t.Errorf("an annotation %q: %s", v, diff)
				}
			}
		})
	}
	if rendered < 20 {
		t.Errorf("only %d definitions rendered: the test proves little", rendered)
	}
}

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
		if s, _ := orchconfig.StrategyOf(p.URI); !s.Pure() || p.Helm != nil {
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
			if s, _ := orchconfig.StrategyOf(def.URI); s != orchconfig.StrategyTemplate {
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
	strategy, err := orchconfig.StrategyOf(def.URI)
	if err != nil {
		return nil, err
	}
	if annotations == nil {
		annotations = map[string]any{"hostile": breakout.Benign}
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

// What the hostile tests count as a value breaking out, breakout.Broken, is every run error of
// an output that is not the YAML it must be, and no refusal.
func TestBrokenOutputIsTold(t *testing.T) {
	for _, tc := range []struct {
		name   string
		def    orchconfig.Provisioner
		broken bool
	}{
		{"outputs that do not parse", orchconfig.Provisioner{Outputs: "a: [\n"}, true},
		{"outputs that are a list", orchconfig.Provisioner{Outputs: "- 1\n"}, true},
		{"manifests that are a mapping", orchconfig.Provisioner{Manifests: "a: 1\n"}, true},
		{"a manifest that is a scalar", orchconfig.Provisioner{Manifests: "- 1\n"}, true},
		{"a manifest without a kind", orchconfig.Provisioner{Manifests: "- {apiVersion: v1}\n"}, true},
		{"a template that refuses", orchconfig.Provisioner{Outputs: `{{ fail "no" }}`}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			def := tc.def
			def.URI, def.Type = "template://broken", "broken"
			_, err := renderObjects(def, nil, nil)
			if err == nil {
				t.Fatal("rendered")
			}
			if got := breakout.Broken(err); got != tc.broken {
				t.Errorf("Broken(%v) = %v, want %v", err, got, tc.broken)
			}
		})
	}
}
