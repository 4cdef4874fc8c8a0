package crdcompat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/score-orchestrator/score-orchestrator/internal/testing/previousrelease"
)

// crd is a CRD of one version, v1b1, stored, with the schema given for its spec.
func crd(spec apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "score.dev", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Thing"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1b1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec},
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
}

// object is an object schema with the given fields.
func object(fields map[string]apiextensionsv1.JSONSchemaProps, required ...string) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: fields, Required: required}
}

func str() apiextensionsv1.JSONSchemaProps { return apiextensionsv1.JSONSchemaProps{Type: "string"} }

func enum(values ...string) apiextensionsv1.JSONSchemaProps {
	s := str()
	for _, v := range values {
		raw, _ := json.Marshal(v)
		s.Enum = append(s.Enum, apiextensionsv1.JSON{Raw: raw})
	}
	return s
}

func withRule(s apiextensionsv1.JSONSchemaProps, rule string) apiextensionsv1.JSONSchemaProps {
	s.XValidations = append(s.XValidations, apiextensionsv1.ValidationRule{Rule: rule})
	return s
}

// base is the old release's spec: a name, a mode from an enum, a size that is an integer, a
// list of ports, a map of labels, a free-form values object and an object of options.
func base() apiextensionsv1.JSONSchemaProps {
	return object(map[string]apiextensionsv1.JSONSchemaProps{
		"name":    str(),
		"mode":    enum("fast", "safe"),
		"size":    {Type: "integer"},
		"ports":   {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: ptr.To(object(map[string]apiextensionsv1.JSONSchemaProps{"port": {Type: "integer"}}))}},
		"labels":  {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: ptr.To(str())}},
		"values":  {Type: "object", XPreserveUnknownFields: ptr.To(true)},
		"options": object(map[string]apiextensionsv1.JSONSchemaProps{"debug": {Type: "boolean"}}),
	}, "name")
}

// changed is base with change made to its spec.
func changed(change func(spec *apiextensionsv1.JSONSchemaProps)) *apiextensionsv1.CustomResourceDefinition {
	spec := base()
	change(&spec)
	return crd(spec)
}

func set(s *apiextensionsv1.JSONSchemaProps, field string, to apiextensionsv1.JSONSchemaProps) {
	s.Properties[field] = to
}

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		name string
		new  *apiextensionsv1.CustomResourceDefinition
		// breaking and ratcheted are the findings' paths, in order (breaking first).
		breaking, ratcheted []string
	}{
		{name: "unchanged", new: crd(base())},
		{name: "an optional field added", new: changed(func(s *apiextensionsv1.JSONSchemaProps) { set(s, "extra", str()) })},
		{name: "a new object with required fields and rules of its own", new: changed(func(s *apiextensionsv1.JSONSchemaProps) {
			set(s, "extra", withRule(object(map[string]apiextensionsv1.JSONSchemaProps{"a": {Type: "string", MaxLength: ptr.To[int64](3)}}, "a"), "self.a != 'x'"))
		})},
		{name: "a field removed", new: changed(func(s *apiextensionsv1.JSONSchemaProps) { delete(s.Properties, "size") }), breaking: []string{".spec.size"}},
		{name: "a field removed inside a list's items", new: changed(func(s *apiextensionsv1.JSONSchemaProps) {
			set(s, "ports", apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: ptr.To(object(nil))}})
		}), breaking: []string{".spec.ports[*].port"}},
		{name: "a type narrowed", new: changed(func(s *apiextensionsv1.JSONSchemaProps) {
			set(s, "name", apiextensionsv1.JSONSchemaProps{Type: "integer"})
		}), breaking: []string{".spec.name"}},
		{name: "a map's values narrowed", new: changed(func(s *apiextensionsv1.JSONSchemaProps) {
			set(s, "labels", apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{Type: "boolean"}}})
		}), breaking: []string{".spec.labels[*]"}},
		{name: "a type widened to integer-or-string", new: changed(func(s *apiextensionsv1.JSONSchemaProps) {
			set(s, "size", apiextensionsv1.JSONSchemaProps{XIntOrString: true})
		})},
		{name: "a new required field", new: changed(func(s *apiextensionsv1.JSONSchemaProps) {
			set(s, "owner", str())
			s.Required = append(s.Required, "owner")
		}), breaking: []string{".spec.owner"}},
		{name: "an existing field made required", new: changed(func(s *apiextensionsv1.JSONSchemaProps) { s.Required = append(s.Required, "size") }), breaking: []string{".spec.size"}},
		{name: "an enum value dropped", new: changed(func(s *apiextensionsv1.JSONSchemaProps) { set(s, "mode", enum("safe")) }), breaking: []string{".spec.mode"}},
		{name: "an enum value added", new: changed(func(s *apiextensionsv1.JSONSchemaProps) { set(s, "mode", enum("fast", "safe", "careful")) })},
		{name: "an enum where there was none", new: changed(func(s *apiextensionsv1.JSONSchemaProps) { set(s, "name", enum("a", "b")) }), breaking: []string{".spec.name"}},
		{name: "a new CEL rule on an existing field", new: changed(func(s *apiextensionsv1.JSONSchemaProps) {
			set(s, "options", withRule(s.Properties["options"], "!has(self.debug) || !self.debug"))
		}), breaking: []string{".spec.options"}},
		{name: "a new transition rule", new: changed(func(s *apiextensionsv1.JSONSchemaProps) {
			set(s, "name", withRule(str(), "self == oldSelf"))
		})},
		{name: "unknown fields no longer preserved", new: changed(func(s *apiextensionsv1.JSONSchemaProps) { set(s, "values", object(nil)) }), breaking: []string{".spec.values"}},
		{name: "a list made a set", new: changed(func(s *apiextensionsv1.JSONSchemaProps) {
			p := s.Properties["ports"]
			p.XListType = ptr.To("set")
			set(s, "ports", p)
		}), breaking: []string{".spec.ports"}},
		{name: "a list said atomic, as it was by default", new: changed(func(s *apiextensionsv1.JSONSchemaProps) {
			p := s.Properties["ports"]
			p.XListType = ptr.To("atomic")
			set(s, "ports", p)
		})},
		{name: "stricter bounds, ratcheted", new: changed(func(s *apiextensionsv1.JSONSchemaProps) {
			set(s, "name", apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: ptr.To[int64](63), Pattern: "^[a-z]+$"})
			p := s.Properties["ports"]
			p.MaxItems = ptr.To[int64](10)
			set(s, "ports", p)
			set(s, "size", apiextensionsv1.JSONSchemaProps{Type: "integer", Minimum: ptr.To(0.0)})
		}), ratcheted: []string{".spec.name", ".spec.name", ".spec.ports", ".spec.size"}},
		{name: "the version no longer served", new: func() *apiextensionsv1.CustomResourceDefinition {
			n := crd(base())
			n.Spec.Versions[0].Name = "v1"
			return n
		}(), breaking: []string{".", "."}}, // v1b1 gone, and the storage version moved
		{name: "a new version stored, v1b1 served, through a conversion webhook", new: func() *apiextensionsv1.CustomResourceDefinition {
			n := crd(base())
			n.Spec.Versions[0].Storage = false
			n.Spec.Versions = append(n.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}})
			n.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
			return n
		}()},
		{name: "the status subresource dropped", new: func() *apiextensionsv1.CustomResourceDefinition {
			n := crd(base())
			n.Spec.Versions[0].Subresources = nil
			return n
		}(), breaking: []string{"."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Compare(crd(base()), tc.new)
			var breaking, ratcheted []string
			for _, f := range got {
				switch f.Severity {
				case Breaking:
					breaking = append(breaking, f.Path)
					if !strings.Contains(f.Message, "new API version") || !strings.Contains(f.Message, "conversion") {
						t.Errorf("a breaking finding does not say a new API version with conversion is the way: %s", f)
					}
				case Ratcheted:
					ratcheted = append(ratcheted, f.Path)
				}
			}
			if strings.Join(breaking, " ") != strings.Join(tc.breaking, " ") || strings.Join(ratcheted, " ") != strings.Join(tc.ratcheted, " ") {
				t.Errorf("breaking %q, ratcheted %q; want %q, %q\n%v", breaking, ratcheted, tc.breaking, tc.ratcheted, got)
			}
		})
	}
}

// TestCompareIntOrStringNarrowed: an integer-or-string field that becomes a string (base
// cannot hold it: its size is an integer).
func TestCompareIntOrStringNarrowed(t *testing.T) {
	old := base()
	set(&old, "size", apiextensionsv1.JSONSchemaProps{XIntOrString: true})
	got := Broken(Compare(crd(old), changed(func(s *apiextensionsv1.JSONSchemaProps) { set(s, "size", str()) })))
	if len(got) != 1 || got[0].Path != ".spec.size" {
		t.Errorf("got %v, want one breaking finding at .spec.size", got)
	}
}

// repoRoot is the repository's root, which holds this package.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// bases is where the CRDs are, relative to the repository's root.
const bases = "config/crd/bases"

// TestCRDCompatibility is the upgrade's CRD check: this commit's CRDs (config/crd/bases) can
// replace the previous release's (hack/previous-release, read from the clone's history) under
// the objects a cluster stores: no CRD gone, and no breaking change in any version the previous
// release served. A breaking change needs a new API version with conversion; the failure says so.
func TestCRDCompatibility(t *testing.T) {
	root := repoRoot()
	paths, err := previousrelease.List(root, bases)
	if err != nil {
		t.Fatalf("the previous release's CRDs: %v", err)
	}
	if len(paths) == 0 {
		t.Fatalf("the previous release has no CRDs under %s", bases)
	}
	compared := 0
	for _, p := range paths {
		if !strings.HasSuffix(p, ".yaml") {
			continue
		}
		raw, err := previousrelease.Show(root, p)
		if err != nil {
			t.Fatal(err)
		}
		var old, cur apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(raw, &old); err != nil {
			t.Fatalf("the previous release's %s: %v", p, err)
		}
		now, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Errorf("%s: the previous release's CRD is gone from this commit: every object stored of it is cut off (%v); a kind is retired by a new API version without it, and a migration", old.Name, err)
			continue
		}
		if err := yaml.Unmarshal(now, &cur); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, f := range Compare(&old, &cur) {
			if f.Severity == Breaking {
				t.Errorf("%s", f)
			} else {
				t.Logf("%s", f)
			}
		}
		compared++
	}
	if compared == 0 {
		t.Fatal("no CRD compared")
	}
	t.Logf("%d CRDs of the previous release compared with this commit's", compared)
}
