// Package planner turns a Workload, the selected backend and the observed claims into the
// objects the orchestrator wants: the ResourceClaims, in dependency order, and the
// WorkloadPlan. It also decides which inputs are SpecInvalid. It is pure.
package planner

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/values"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/placeholder"
)

// BuildResourceTypes can supply the image of a container whose image is ".".
var BuildResourceTypes = []string{"image", "build", "buildpack"}

// Problem is one invalid input: the field and what is wrong, in neutral words.
type Problem struct {
	Field   string
	Message string
}

func (p Problem) String() string { return p.Field + ": " + p.Message }

// Error makes a Problem an error, for the steps after CheckInputs that find one.
func (p Problem) Error() string { return p.String() }

// Sentence turns an error's text into a message: capitalised, ending with a period. The
// planner's errors reach the Workload's status this way.
func Sentence(s string) string {
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// Allowed is what the platform allows a Workload beyond the defaults, for the checks that
// depend on it.
type Allowed struct {
	// ProbeHosts admits probes that name a host (the config's probeHosts selects the
	// Workload's namespace).
	ProbeHosts bool
}

// CheckInputs finds what makes a Workload SpecInvalid beyond what the API server checks:
// placeholders that are malformed or name undeclared resources or unknown metadata, whole
// resources used where an output is needed, volume sources that are not one reference,
// file sources left in, before cycles, an image "." with no build resource, a probe that names
// a host where the platform does not allow it, and the characters of a secret reference where
// a definition would see them. Problems are sorted by field.
func CheckInputs(w *scorev1b1.Workload, allowed Allowed) []Problem {
	c := &inputCheck{w: w, meta: Metadata(w), metaSize: map[string]int{}}
	for _, name := range slices.Sorted(maps.Keys(w.Spec.Containers)) {
		c.container(name, w.Spec.Containers[name], allowed)
	}
	if cycle := beforeCycle(w); cycle != "" {
		c.add("spec.containers", "The before relationships form a cycle: %s.", cycle)
	}
	c.expanded = 0 // the params of all the claims have a budget of their own, as in DesiredClaims
	for _, key := range slices.Sorted(maps.Keys(w.Spec.Resources)) {
		c.resource(key, w.Spec.Resources[key])
	}
	if cycle := paramsCycle(w); cycle != "" {
		c.add("spec.resources", "The resources' params refer to each other in a cycle: %s.", cycle)
	}
	c.out = append(c.out, secretRefProblems(w)...)
	sort.SliceStable(c.out, func(i, j int) bool { return c.out[i].Field < c.out[j].Field })
	return c.out
}

// inputCheck is one pass of CheckInputs over a Workload: the problems found so far, and what
// the strings checked so far expand to, told early and by field: the text of each and the
// metadata its placeholders stand for (BuildPlan and DesiredClaims hold the exact bound,
// outputs included).
type inputCheck struct {
	w    *scorev1b1.Workload
	meta map[string]any
	out  []Problem
	// expanded is the length of the text checked so far, placeholders of metadata expanded;
	// metaSize is the length of each of those placeholders, by its text.
	expanded int
	metaSize map[string]int
}

// add records a problem of field.
func (c *inputCheck) add(field, format string, args ...any) {
	c.out = append(c.out, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
}

// grow counts n more characters of expanded text, a problem of field the first time they pass
// placeholder.MaxExpanded.
func (c *inputCheck) grow(field string, n int) {
	if c.expanded <= placeholder.MaxExpanded && c.expanded+n > placeholder.MaxExpanded {
		c.add(field, "%s", Sentence((&placeholder.TooLarge{Limit: placeholder.MaxExpanded}).Error()))
	}
	c.expanded += n
}

// text checks a string of field whose placeholders are expanded: its length and its
// placeholders.
func (c *inputCheck) text(field, s string) {
	refs, err := placeholder.Refs(s)
	c.grow(field, len(s))
	c.refs(field, refs, err, false)
}

// refs checks the placeholders of field, or the error parsing them: metadata the Workload has
// (its expansion counted), resources it declares, and an output of each resource unless a
// whole resource is allowed there.
func (c *inputCheck) refs(field string, refs []placeholder.Ref, err error, wholeAllowed bool) {
	if err != nil {
		c.add(field, "%s", Sentence(err.Error()))
		return
	}
	for _, r := range refs {
		switch r.Root {
		case placeholder.RootMetadata:
			v, ok := placeholder.LookupPath(c.meta, r.Path)
			if !ok {
				c.add(field, "The placeholder ${%s} names metadata the workload does not have.", r.Raw)
				continue
			}
			size, known := c.metaSize[r.Raw]
			if !known {
				str, _ := placeholder.Stringify(v)
				size = len(str)
				c.metaSize[r.Raw] = size
			}
			c.grow(field, size)
		case placeholder.RootResources:
			if _, ok := c.w.Spec.Resources[r.Resource()]; !ok {
				c.add(field, "The placeholder ${%s} names resource %q, which is not declared.", r.Raw, r.Resource())
			} else if r.Output() == "" && !wholeAllowed {
				c.add(field, "The placeholder ${%s} must name an output of the resource.", r.Raw)
			}
		}
	}
}

// container checks a container: its command, args, variables and files' content, its
// volumes' sources, its probes' hosts and an image "." with no build resource.
func (c *inputCheck) container(name string, ctr scorev1b1.Container, allowed Allowed) {
	base := "spec.containers." + name
	for i, a := range ctr.Command {
		c.text(fmt.Sprintf("%s.command[%d]", base, i), a)
	}
	for i, a := range ctr.Args {
		c.text(fmt.Sprintf("%s.args[%d]", base, i), a)
	}
	for _, k := range slices.Sorted(maps.Keys(ctr.Variables)) {
		c.text(base+".variables."+k, ctr.Variables[k])
	}
	for _, target := range slices.Sorted(maps.Keys(ctr.Files)) {
		c.file(base+".files."+target, ctr.Files[target])
	}
	for _, target := range slices.Sorted(maps.Keys(ctr.Volumes)) {
		c.volumeSource(base+".volumes."+target+".source", ctr.Volumes[target].Source)
	}
	if !allowed.ProbeHosts {
		c.probeHosts(base, ctr)
	}
	if ctr.Image == "." && buildResource(c.w) == "" {
		c.add(base+".image", "The image \".\" needs a resource of type %s to supply it.", strings.Join(BuildResourceTypes, ", "))
	}
}

// file checks a container's file: its source inlined, and its content unless it is not
// expanded.
func (c *inputCheck) file(field string, f scorev1b1.ContainerFile) {
	if f.Source != nil {
		c.add(field, "The file's source must be inlined before the workload is submitted; scorectl convert does it.")
		return
	}
	if f.Content != nil && (f.NoExpand == nil || !*f.NoExpand) {
		c.text(field+".content", *f.Content)
	}
}

// volumeSource checks a volume's source: a plain name or a single reference to a whole
// resource.
func (c *inputCheck) volumeSource(field, source string) {
	parts, err := placeholder.Parse(source)
	if err != nil {
		c.add(field, "%s", Sentence(err.Error()))
		return
	}
	if len(parts) > 1 || (len(parts) == 1 && parts[0].Ref != nil && parts[0].Ref.Root != placeholder.RootResources) {
		c.add(field, "A volume source must be a single ${resources.<name>} reference or a plain name.")
		return
	}
	if len(parts) == 1 && parts[0].Ref != nil {
		c.refs(field, []placeholder.Ref{*parts[0].Ref}, nil, true)
	}
}

// probeHosts finds the container's probes that name a host, where the platform does not allow
// it.
func (c *inputCheck) probeHosts(base string, ctr scorev1b1.Container) {
	for _, probe := range []struct {
		name string
		p    *scorev1b1.ContainerProbe
	}{{"livenessProbe", ctr.LivenessProbe}, {"readinessProbe", ctr.ReadinessProbe}} {
		if probe.p != nil && probe.p.HTTPGet != nil && probe.p.HTTPGet.Host != nil {
			c.add(base+"."+probe.name+".httpGet.host", "The platform does not allow a probe to name a host in this namespace: the kubelet would send it to %q from the node; leave host out to probe the container.", *probe.p.HTTPGet.Host)
		}
	}
}

// resource checks a resource: its params an object, their placeholders, and its policy
// annotation.
func (c *inputCheck) resource(key string, res scorev1b1.Resource) {
	field := "spec.resources." + key
	params, err := values.Object(res.Params)
	if err != nil {
		c.add(field+".params", "The params are not an object.")
		return
	}
	refs, err := placeholder.RefsInValue(params)
	c.refs(field+".params", refs, err, false)
	if _, err := PolicyAnnotation(res); err != nil {
		c.add(field+".metadata.annotations", "%s", Sentence(err.Error()))
	}
}

// Metadata is what ${metadata.*} placeholders and definitions (as the Workload's metadata) see:
// the Score metadata of the Workload (name, annotations but those that are not Score metadata
// (scoreAnnotation), labels but the shard's (values.UserLabels) and any other Score metadata
// keys).
func Metadata(w *scorev1b1.Workload) map[string]any {
	m := map[string]any{"name": w.Name}
	if raw := w.Annotations[scorev1b1.AnnotationScoreMetadata]; raw != "" {
		var extra map[string]any
		if json.Unmarshal([]byte(raw), &extra) == nil {
			for k, v := range extra {
				m[k] = v
			}
		}
	}
	anns := map[string]any{}
	for k, v := range w.Annotations {
		if k != scorev1b1.AnnotationScoreMetadata && scoreAnnotation(k) {
			anns[k] = v
		}
	}
	if len(anns) > 0 {
		m["annotations"] = anns
	}
	if user := values.UserLabels(w.Labels); len(user) > 0 {
		labels := map[string]any{}
		for k, v := range user {
			labels[k] = v
		}
		m["labels"] = labels
	}
	return m
}

// scoreAnnotation reports whether the Workload's annotation k reaches its metadata (the
// annotation of the other Score metadata keys does, unpacked). Two are bookkeeping, not
// Score's: the converter's record of file sources, and kubectl's record of a client-side
// apply, which holds the whole Workload as last applied — a definition seeing it would see
// every container variable and file, and a secret reference's characters in one (which a
// definition never sees otherwise) would refuse the Workload applied that way.
func scoreAnnotation(k string) bool {
	return k != scorev1b1.AnnotationFileSources && k != corev1.LastAppliedConfigAnnotation
}

// buildResource is the resource that supplies "." images: the first, by name, of a build type.
func buildResource(w *scorev1b1.Workload) string {
	for _, key := range slices.Sorted(maps.Keys(w.Spec.Resources)) {
		for _, t := range BuildResourceTypes {
			if w.Spec.Resources[key].Type == t {
				return key
			}
		}
	}
	return ""
}

// beforeCycle returns a cycle in the containers' before relationships, or "".
func beforeCycle(w *scorev1b1.Workload) string {
	graph := map[string][]string{}
	for name, c := range w.Spec.Containers {
		for dep := range c.Before {
			if _, ok := w.Spec.Containers[dep]; ok && dep != name {
				graph[name] = append(graph[name], dep)
			}
		}
	}
	return findCycle(slices.Sorted(maps.Keys(w.Spec.Containers)), graph)
}

// paramsCycle returns a cycle among resources whose params reference each other, or "".
func paramsCycle(w *scorev1b1.Workload) string {
	graph := map[string][]string{}
	for key := range w.Spec.Resources {
		graph[key] = paramsDependencies(w, key)
	}
	return findCycle(slices.Sorted(maps.Keys(w.Spec.Resources)), graph)
}

// paramsDependencies are the declared resources whose outputs key's params use, sorted.
func paramsDependencies(w *scorev1b1.Workload, key string) []string {
	params, err := values.Object(w.Spec.Resources[key].Params)
	if err != nil {
		return nil
	}
	refs, _ := placeholder.RefsInValue(params)
	seen := map[string]bool{}
	var deps []string
	for _, r := range refs {
		d := r.Resource()
		if _, declared := w.Spec.Resources[d]; declared && !seen[d] && r.Root == placeholder.RootResources {
			seen[d] = true
			deps = append(deps, d)
		}
	}
	sort.Strings(deps)
	return deps
}

// findCycle returns "a → b → a" for the first cycle found from nodes in order, or "".
func findCycle(nodes []string, graph map[string][]string) string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var found []string
	var visit func(string) bool
	visit = func(n string) bool {
		color[n] = grey
		stack = append(stack, n)
		deps := append([]string(nil), graph[n]...)
		sort.Strings(deps)
		for _, d := range deps {
			if color[d] == grey {
				for i, s := range stack {
					if s == d {
						found = append(append([]string(nil), stack[i:]...), d)
					}
				}
				return true
			}
			if color[d] == white && visit(d) {
				return true
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
		return false
	}
	for _, n := range nodes {
		if color[n] == white && visit(n) {
			return strings.Join(found, " → ")
		}
	}
	return ""
}

// NamedVolume is a volume a Workload mounts by name: a source that is a plain name, not a
// ${resources.<name>} reference.
type NamedVolume struct {
	// Field is the source's field, Name the volume's name.
	Field, Name string
}

// NamedVolumes are the Workload's volumes mounted by name, by container and target.
func NamedVolumes(w *scorev1b1.Workload) []NamedVolume {
	var out []NamedVolume
	for _, cname := range slices.Sorted(maps.Keys(w.Spec.Containers)) {
		c := w.Spec.Containers[cname]
		for _, target := range slices.Sorted(maps.Keys(c.Volumes)) {
			parts, err := placeholder.Parse(c.Volumes[target].Source)
			if err != nil || len(parts) != 1 || parts[0].Ref != nil || parts[0].Literal == "" {
				continue
			}
			out = append(out, NamedVolume{Field: "spec.containers." + cname + ".volumes." + target + ".source", Name: parts[0].Literal})
		}
	}
	return out
}
