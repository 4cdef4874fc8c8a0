// Package crdcompat judges whether a CRD can replace the one a cluster serves without leaving an
// object it stores behind: every object the old schema admitted must still be admitted, and
// read back, under the new one. It compares two CustomResourceDefinitions version by version
// (a version the new CRD adds is not compared: it is reached through conversion) and returns
// what changed, each finding breaking or ratcheted.
//
// How a change is judged:
//   - Breaking (the CRD cannot replace the old one in the same version): a version no longer
//     served, the storage version moved without conversion, a field removed, a type changed
//     other than widened (to integer-or-string, integer to number, or to any), unknown fields
//     no longer preserved (the API server would prune what is stored), a field newly required
//     (required is not ratcheted), an enum value dropped or an enum put on a field that had
//     none, null no longer admitted, a list's or map's type or keys changed, a new or changed
//     CEL rule (x-kubernetes-validations) on a field the old schema had that is not a
//     transition rule (one that reads oldSelf).
//   - Ratcheted (allowed): a value bound made stricter on a field the old schema had (maxLength,
//     minLength, pattern, format, minimum, maximum, multipleOf, minItems, maxItems, uniqueItems,
//     minProperties, maxProperties). Kubernetes 1.30 and later (the floor README.md gives)
//     ratchets them: an update that leaves such a value as it is keeps passing, so stored
//     objects still update (their status, their other fields); only a new or changed value
//     must meet the bound, which is what tightening a bound is for.
//
// A CEL rule is judged conservatively: Kubernetes ratchets a rule that does not read oldSelf
// too, but a rule can tie fields together and no comparison of schemas can tell which stored
// objects it refuses; it is admitted where it cannot refuse a stored object's unchanged data —
// a transition rule (oldSelf), or any rule inside a field the old schema did not have (no
// stored object has one; constraints there are never compared).
//
// A breaking change is made by serving a new API version next to the old one, with conversion
// between them (docs/upgrading.md, "Moving from v1b1"); each breaking finding says so.
package crdcompat

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Severity is how a change weighs on the objects a cluster stores.
type Severity string

const (
	// Breaking is a change that refuses, prunes or loses something a stored object may hold.
	Breaking Severity = "breaking"
	// Ratcheted is a stricter bound that stored objects keep passing while they leave the
	// value as it is (Kubernetes' validation ratcheting).
	Ratcheted Severity = "ratcheted"
)

// Finding is one change between two CRDs.
type Finding struct {
	// CRD is the CRD's name; Version the API version compared.
	CRD, Version string
	// Path is the field, as .spec.resources[*].type (a map's values as [*] too).
	Path     string
	Severity Severity
	// Message says what changed and, for a breaking change, what to do instead.
	Message string
}

func (f Finding) String() string {
	return fmt.Sprintf("%s %s %s: %s: %s", f.CRD, f.Version, f.Path, f.Severity, f.Message)
}

// newVersionHint is what a breaking finding tells the author to do.
const newVersionHint = "a breaking change needs a new API version served next to this one, with conversion (docs/upgrading.md, \"Moving from v1b1\")"

// Compare is what changed from old to new, the breaking findings first; both are the same
// CRD (by name) as two releases ship it.
func Compare(old, new *apiextensionsv1.CustomResourceDefinition) []Finding {
	c := &comparison{crd: old.Name}
	if old.Spec.Group != new.Spec.Group || old.Spec.Names.Kind != new.Spec.Names.Kind || old.Spec.Scope != new.Spec.Scope {
		c.breaking("", "", fmt.Sprintf("group, kind or scope changed (%s %s %s -> %s %s %s): the API server would serve the stored objects under another name or not at all",
			old.Spec.Group, old.Spec.Names.Kind, old.Spec.Scope, new.Spec.Group, new.Spec.Names.Kind, new.Spec.Scope))
	}
	newVersions := map[string]*apiextensionsv1.CustomResourceDefinitionVersion{}
	for i := range new.Spec.Versions {
		newVersions[new.Spec.Versions[i].Name] = &new.Spec.Versions[i]
	}
	oldStorage, newStorage := storageVersion(old), storageVersion(new)
	if oldStorage != newStorage && (new.Spec.Conversion == nil || new.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter) {
		c.breaking("", "", fmt.Sprintf("the storage version moved from %s to %s without a conversion webhook: objects stored at %s would be served as %s unconverted", oldStorage, newStorage, oldStorage, newStorage))
	}
	for i := range old.Spec.Versions {
		ov := &old.Spec.Versions[i]
		if !ov.Served {
			continue
		}
		nv, ok := newVersions[ov.Name]
		if !ok || !nv.Served {
			c.breaking(ov.Name, "", "the version is no longer served: clients and stored objects that use it are cut off; keep serving it (deprecated) until a storage version migration has moved every object")
			continue
		}
		c.version = ov.Name
		if ov.Schema != nil && nv.Schema != nil {
			c.schema("", ov.Schema.OpenAPIV3Schema, nv.Schema.OpenAPIV3Schema)
		}
		c.subresources(ov, nv)
	}
	sort.SliceStable(c.findings, func(i, j int) bool {
		return c.findings[i].Severity == Breaking && c.findings[j].Severity != Breaking
	})
	return c.findings
}

// Broken are the breaking findings of fs.
func Broken(fs []Finding) []Finding {
	return slices.DeleteFunc(slices.Clone(fs), func(f Finding) bool { return f.Severity != Breaking })
}

// comparison collects the findings of one CRD.
type comparison struct {
	crd, version string
	findings     []Finding
}

func (c *comparison) breaking(version, path, msg string) {
	if version == "" {
		version = c.version
	}
	c.findings = append(c.findings, Finding{CRD: c.crd, Version: version, Path: pathOrRoot(path), Severity: Breaking, Message: msg + "; " + newVersionHint})
}

func (c *comparison) ratcheted(path, msg string) {
	c.findings = append(c.findings, Finding{CRD: c.crd, Version: c.version, Path: pathOrRoot(path), Severity: Ratcheted,
		Message: msg + " (ratcheted: stored objects pass while they leave the value as it is; new values must meet it)"})
}

func pathOrRoot(path string) string {
	if path == "" {
		return "."
	}
	return path
}

func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// subresources: a status subresource dropped would let spec writes overwrite status and refuse
// the controllers' status writes; a scale subresource dropped would cut off its clients.
func (c *comparison) subresources(ov, nv *apiextensionsv1.CustomResourceDefinitionVersion) {
	if ov.Subresources == nil {
		return
	}
	if ov.Subresources.Status != nil && (nv.Subresources == nil || nv.Subresources.Status == nil) {
		c.breaking("", "", "the status subresource is gone: writes to /status are refused")
	}
	if ov.Subresources.Scale != nil && (nv.Subresources == nil || nv.Subresources.Scale == nil) {
		c.breaking("", "", "the scale subresource is gone: writes to /scale are refused")
	}
}

// schema compares the schema of one field, and of the fields within it that both have.
func (c *comparison) schema(path string, o, n *apiextensionsv1.JSONSchemaProps) {
	if o == nil {
		return // the old schema said nothing here: the new one constrains only new data
	}
	if n == nil {
		c.breaking("", path, "the field's schema is gone")
		return
	}
	c.typ(path, o, n)
	c.structure(path, o, n)
	c.enum(path, o, n)
	c.bounds(path, o, n)
	c.rules(path, o, n)

	// The fields within.
	for _, name := range slices.Sorted(maps.Keys(o.Properties)) {
		op := o.Properties[name]
		np, ok := n.Properties[name]
		if !ok {
			c.breaking("", path+"."+name, "field removed: stored values would be pruned (or refused) and clients that set it refused")
			continue
		}
		c.schema(path+"."+name, &op, &np)
	}
	if o.Items != nil && o.Items.Schema != nil {
		if n.Items == nil || n.Items.Schema == nil {
			c.breaking("", path+"[*]", "the items' schema is gone")
		} else {
			c.schema(path+"[*]", o.Items.Schema, n.Items.Schema)
		}
	}
	if o.AdditionalProperties != nil {
		switch {
		case n.AdditionalProperties == nil && len(n.Properties) == 0 && n.Type == "object" && !preserves(n):
			c.breaking("", path+"[*]", "a map's entries are no longer admitted")
		case n.AdditionalProperties != nil && o.AdditionalProperties.Allows && !n.AdditionalProperties.Allows:
			c.breaking("", path+"[*]", "a map's entries are no longer admitted")
		case n.AdditionalProperties != nil:
			c.schema(path+"[*]", o.AdditionalProperties.Schema, n.AdditionalProperties.Schema)
		}
	}

	// Fields newly required. Only where both schemas have the object: a new field's required
	// fields constrain only data no stored object has.
	for _, name := range n.Required {
		if !slices.Contains(o.Required, name) {
			c.breaking("", path+"."+name, "field newly required: stored objects without it are refused on their next write (required is not ratcheted)")
		}
	}
}

// typ: a type may widen (to any, to integer-or-string, integer to number), never change.
func (c *comparison) typ(path string, o, n *apiextensionsv1.JSONSchemaProps) {
	if o.XIntOrString && !n.XIntOrString {
		c.breaking("", path, fmt.Sprintf("no longer integer-or-string (now %q): stored values of the other type are refused", n.Type))
		return
	}
	if o.Type == n.Type || n.XIntOrString || n.Type == "" && preserves(n) || o.Type == "integer" && n.Type == "number" {
		return
	}
	c.breaking("", path, fmt.Sprintf("type changed from %q to %q: stored values of the old type are refused", o.Type, n.Type))
}

// structure: what the API server keeps of an object (unknown fields preserved, null admitted,
// embedded objects) and how lists and maps merge.
func (c *comparison) structure(path string, o, n *apiextensionsv1.JSONSchemaProps) {
	if preserves(o) && !preserves(n) {
		c.breaking("", path, "unknown fields are no longer preserved: the API server prunes what stored objects hold there")
	}
	if o.Nullable && !n.Nullable {
		c.breaking("", path, "null is no longer admitted: stored nulls are refused (or pruned)")
	}
	if o.XEmbeddedResource != n.XEmbeddedResource {
		c.breaking("", path, fmt.Sprintf("x-kubernetes-embedded-resource changed (%v -> %v)", o.XEmbeddedResource, n.XEmbeddedResource))
	}
	if listType(o) != listType(n) {
		c.breaking("", path, fmt.Sprintf("list type changed from %q to %q: stored lists may not meet it and appliers' merges change (not ratcheted)", listType(o), listType(n)))
	}
	if !slices.Equal(o.XListMapKeys, n.XListMapKeys) {
		c.breaking("", path, fmt.Sprintf("list map keys changed from %v to %v", o.XListMapKeys, n.XListMapKeys))
	}
	if mapType(o) != mapType(n) {
		c.breaking("", path, fmt.Sprintf("map type changed from %q to %q: appliers' merges change", mapType(o), mapType(n)))
	}
}

// enum: every value the old enum admitted still admitted; an enum where there was none drops
// every other value.
func (c *comparison) enum(path string, o, n *apiextensionsv1.JSONSchemaProps) {
	if len(n.Enum) == 0 {
		return
	}
	if len(o.Enum) == 0 {
		c.breaking("", path, fmt.Sprintf("an enum (%s) where any value was admitted: stored values outside it are refused", enumValues(n.Enum)))
		return
	}
	admitted := map[string]bool{}
	for _, v := range n.Enum {
		admitted[string(v.Raw)] = true
	}
	var dropped []apiextensionsv1.JSON
	for _, v := range o.Enum {
		if !admitted[string(v.Raw)] {
			dropped = append(dropped, v)
		}
	}
	if len(dropped) > 0 {
		c.breaking("", path, fmt.Sprintf("enum value dropped (%s): stored objects holding it are refused on their next write, and controllers that write it fail", enumValues(dropped)))
	}
}

// bounds: value validations made stricter, ratcheted.
func (c *comparison) bounds(path string, o, n *apiextensionsv1.JSONSchemaProps) {
	upper := func(name string, ov, nv *int64) {
		if nv != nil && (ov == nil || *nv < *ov) {
			c.ratcheted(path, fmt.Sprintf("%s %s -> %d", name, intOrNone(ov), *nv))
		}
	}
	lower := func(name string, ov, nv *int64) {
		if nv != nil && *nv > 0 && (ov == nil || *nv > *ov) {
			c.ratcheted(path, fmt.Sprintf("%s %s -> %d", name, intOrNone(ov), *nv))
		}
	}
	upper("maxLength", o.MaxLength, n.MaxLength)
	lower("minLength", o.MinLength, n.MinLength)
	upper("maxItems", o.MaxItems, n.MaxItems)
	lower("minItems", o.MinItems, n.MinItems)
	upper("maxProperties", o.MaxProperties, n.MaxProperties)
	lower("minProperties", o.MinProperties, n.MinProperties)
	if n.Maximum != nil && (o.Maximum == nil || *n.Maximum < *o.Maximum || n.ExclusiveMaximum && !o.ExclusiveMaximum) {
		c.ratcheted(path, fmt.Sprintf("maximum %s -> %v (exclusive %v)", floatOrNone(o.Maximum), *n.Maximum, n.ExclusiveMaximum))
	}
	if n.Minimum != nil && (o.Minimum == nil || *n.Minimum > *o.Minimum || n.ExclusiveMinimum && !o.ExclusiveMinimum) {
		c.ratcheted(path, fmt.Sprintf("minimum %s -> %v (exclusive %v)", floatOrNone(o.Minimum), *n.Minimum, n.ExclusiveMinimum))
	}
	if n.MultipleOf != nil && (o.MultipleOf == nil || *n.MultipleOf != *o.MultipleOf) {
		c.ratcheted(path, fmt.Sprintf("multipleOf %s -> %v", floatOrNone(o.MultipleOf), *n.MultipleOf))
	}
	if n.Pattern != "" && n.Pattern != o.Pattern {
		c.ratcheted(path, fmt.Sprintf("pattern %q -> %q", o.Pattern, n.Pattern))
	}
	if n.Format != "" && n.Format != o.Format {
		c.ratcheted(path, fmt.Sprintf("format %q -> %q", o.Format, n.Format))
	}
	if n.UniqueItems && !o.UniqueItems {
		c.ratcheted(path, "uniqueItems added")
	}
}

// readsOldSelf is a CEL rule that reads the object's previous value: a transition rule.
var readsOldSelf = regexp.MustCompile(`\boldSelf\b`)

// rules: a CEL rule the old schema did not have on this field must be a transition rule.
func (c *comparison) rules(path string, o, n *apiextensionsv1.JSONSchemaProps) {
	had := map[string]bool{}
	for _, r := range o.XValidations {
		had[strings.TrimSpace(r.Rule)] = true
	}
	for _, r := range n.XValidations {
		rule := strings.TrimSpace(r.Rule)
		if had[rule] || readsOldSelf.MatchString(rule) {
			continue
		}
		c.breaking("", path, fmt.Sprintf("a new or changed CEL rule %q on a field the old schema had, not a transition rule: it may refuse what stored objects hold (make it a transition rule reading oldSelf, or put it on a new field)", rule))
	}
}

func preserves(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
}

// listType is a list's x-kubernetes-list-type, atomic when unset.
func listType(s *apiextensionsv1.JSONSchemaProps) string {
	if s.XListType == nil {
		return "atomic"
	}
	return *s.XListType
}

// mapType is an object's x-kubernetes-map-type, granular when unset.
func mapType(s *apiextensionsv1.JSONSchemaProps) string {
	if s.XMapType == nil {
		return "granular"
	}
	return *s.XMapType
}

func intOrNone(p *int64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

func floatOrNone(p *float64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

func enumValues(vs []apiextensionsv1.JSON) string {
	var out []string
	for _, v := range vs {
		out = append(out, string(v.Raw))
	}
	return strings.Join(out, ", ")
}
