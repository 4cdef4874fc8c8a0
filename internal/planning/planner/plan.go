package planner

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/config/podrules"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/values"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/placeholder"
)

// PlanInput is what BuildPlan looks at.
type PlanInput struct {
	Workload *scorev1b1.Workload
	Profile  string
	Backend  orchconfig.Backend
	// Claims are the Workload's claims by key; all must be ready.
	Claims map[string]ClaimView
	// Cluster is the member cluster the plan is placed on ("" is the hub) and ClusterLabels
	// its labels: the backend's placement overrides that match them join its defaults.
	Cluster       string
	ClusterLabels map[string]string
	// ProbeHosts says whether the platform admits probes that name a host in the Workload's
	// namespace (the config's probeHosts): the plan's pods may then have them.
	ProbeHosts bool
}

// PlanResult is the plan spec, or the placeholders that keep it from being emitted.
type PlanResult struct {
	Spec *scorev1b1.WorkloadPlanSpec
	// Unresolved lists placeholders whose outputs are not published; when not empty, Spec is
	// nil: no plan is emitted while a placeholder is unresolved.
	Unresolved []string
}

// BuildPlan composes the plan: values = defaults ⊕ normalize(Workload) ⊕ outputs (non-secret
// outputs only, under resources.<key>.outputs), where defaults are the backend's for the
// cluster (Defaults), and the projection of every string that may hold placeholders, where
// outputs stay references. Same input, same plan.
func BuildPlan(in PlanInput) (PlanResult, error) {
	w := in.Workload
	b := &builder{meta: Metadata(w), claims: in.Claims, budget: placeholder.NewBudget(placeholder.MaxExpanded)}

	outputs := map[string]any{}
	for _, key := range slices.Sorted(maps.Keys(w.Spec.Resources)) {
		res := w.Spec.Resources[key]
		entry := map[string]any{"type": res.Type, "outputs": copyMap(in.Claims[key].Outputs)}
		if res.Class != nil {
			entry["class"] = *res.Class
		}
		if res.ID != nil {
			entry["id"] = *res.ID
		}
		outputs[key] = entry
	}
	composed := values.Compose(Defaults(in.Backend, in.Cluster, in.ClusterLabels), values.Normalize(w), map[string]any{"resources": outputs})

	var projection scorev1b1.Projection
	for _, cname := range slices.Sorted(maps.Keys(w.Spec.Containers)) {
		projection.Containers = append(projection.Containers, b.container(w, cname))
	}
	if b.err != nil {
		return PlanResult{}, b.err
	}
	if len(b.unresolved) > 0 {
		return PlanResult{Unresolved: slices.Sorted(maps.Keys(b.unresolved))}, nil
	}

	raw, err := json.Marshal(composed)
	if err != nil {
		return PlanResult{}, fmt.Errorf("encoding values: %w", err)
	}
	if err := b.budget.Spend(len(raw)); err != nil {
		return PlanResult{}, err
	}
	spec := &scorev1b1.WorkloadPlanSpec{
		WorkloadRef:                scorev1b1.LocalWorkloadRef{Name: w.Name, UID: string(w.UID)},
		ObservedWorkloadGeneration: w.Generation,
		Profile:                    in.Profile,
		RuntimeClass:               in.Backend.RuntimeClass,
		BackendID:                  in.Backend.BackendID,
		Template:                   templateRef(in.Backend.Template),
		Values:                     &apiextensionsv1.JSON{Raw: raw},
		Projection:                 projection,
		Kinds:                      slices.Clone(in.Backend.Kinds),
		Pods:                       planPods(in.Backend.Pods, in.ProbeHosts),
	}
	for _, key := range slices.Sorted(maps.Keys(w.Spec.Resources)) {
		c := in.Claims[key]
		spec.Claims = append(spec.Claims, scorev1b1.PlanClaim{Key: key, ClaimName: c.Name, SecretName: c.SecretName, SecretKeys: c.SecretKeys, Instance: c.Instance})
	}
	return PlanResult{Spec: spec}, nil
}

// Defaults are a backend's values for the copies placed on a cluster: the template's values,
// then the values of each placement override whose selector matches the cluster's labels, in
// the order the overrides are listed (a later one wins; maps merge key by key, anything else,
// lists included, is replaced). On the hub (cluster "") no override applies.
func Defaults(b orchconfig.Backend, cluster string, labels map[string]string) map[string]any {
	layers := append([]map[string]any{b.Template.Values}, b.Placement.OverridesFor(labels, cluster != "")...)
	return values.Compose(layers...)
}

// planPods is what a plan's pods may do: the backend's pods, and probe hosts where the
// platform admits them; nil when that is nothing.
func planPods(p *orchconfig.Pods, probeHosts bool) *scorev1b1.PlanPods {
	out := &scorev1b1.PlanPods{}
	if p != nil {
		out.ServiceAccountName, out.ServiceAccountToken, out.Allow = p.ServiceAccountName, p.ServiceAccountToken, slices.Clone(p.Allow)
	}
	if probeHosts && !slices.Contains(out.Allow, podrules.ProbeHosts) {
		out.Allow = append(out.Allow, podrules.ProbeHosts)
	}
	if out.ServiceAccountName == "" && !out.ServiceAccountToken && len(out.Allow) == 0 {
		return nil
	}
	return out
}

func templateRef(t orchconfig.Template) scorev1b1.TemplateRef {
	digest := t.Digest
	if ref, err := orchconfig.ParseRef(t.Ref); err == nil && digest == "" {
		digest = ref.Digest
	}
	return scorev1b1.TemplateRef{Kind: scorev1b1.TemplateKind(t.Kind), Ref: t.Ref, Digest: digest}
}

// builder turns strings with placeholders into projections, noting unresolved outputs.
type builder struct {
	meta       map[string]any
	claims     map[string]ClaimView
	unresolved map[string]bool
	err        error
	// budget bounds the text the plan holds, and the runtime inlines from it, once metadata
	// and non-secret outputs are substituted: the plan's values and every literal part.
	budget *placeholder.Budget
}

func (b *builder) container(w *scorev1b1.Workload, name string) scorev1b1.ContainerProjection {
	c := w.Spec.Containers[name]
	p := scorev1b1.ContainerProjection{Name: name}
	if c.Image == "." {
		ref := scorev1b1.OutputRef{ClaimKey: buildResource(w), OutputKey: "image"}
		b.checkOutput(ref)
		p.ImageFrom = &ref
	}
	for _, a := range c.Command {
		p.Command = append(p.Command, b.value(a))
	}
	for _, a := range c.Args {
		p.Args = append(p.Args, b.value(a))
	}
	for _, k := range slices.Sorted(maps.Keys(c.Variables)) {
		p.Env = append(p.Env, scorev1b1.EnvProjection{Name: k, ValueProjection: b.value(c.Variables[k])})
	}
	for _, target := range slices.Sorted(maps.Keys(c.Files)) {
		p.Files = append(p.Files, b.file(target, c.Files[target]))
	}
	for _, target := range slices.Sorted(maps.Keys(c.Volumes)) {
		v := c.Volumes[target]
		vp := scorev1b1.VolumeProjection{Target: target, Path: v.Path, ReadOnly: v.ReadOnly}
		parts, err := placeholder.Parse(v.Source)
		switch {
		case err != nil:
			b.fail(err)
		case len(parts) == 1 && parts[0].Ref != nil:
			ref := scorev1b1.OutputRef{ClaimKey: parts[0].Ref.Resource(), OutputKey: parts[0].Ref.Output()}
			b.checkOutput(ref)
			vp.From = &ref
		default:
			vp.Source = ptr.To(v.Source)
		}
		p.Volumes = append(p.Volumes, vp)
	}
	return p
}

func (b *builder) file(target string, f scorev1b1.ContainerFile) scorev1b1.FileProjection {
	fp := scorev1b1.FileProjection{Target: target, Mode: f.Mode}
	switch {
	case f.BinaryContent != nil:
		fp.BinaryContent = ptr.To(*f.BinaryContent)
	case f.Content != nil && f.NoExpand != nil && *f.NoExpand:
		fp.Parts = []scorev1b1.ValuePart{{Literal: ptr.To(*f.Content)}}
	case f.Content != nil:
		fp.Parts = b.parts(*f.Content)
		for _, part := range fp.Parts {
			if part.From != nil && b.claims[part.From.ClaimKey].isSecret(part.From.OutputKey) {
				fp.Secret = true
			}
		}
	}
	return fp
}

// value is a string as a literal, a single output, or parts.
func (b *builder) value(s string) scorev1b1.ValueProjection {
	parts := b.parts(s)
	switch {
	case len(parts) == 0:
		return scorev1b1.ValueProjection{Value: ptr.To("")}
	case len(parts) == 1 && parts[0].Literal != nil:
		return scorev1b1.ValueProjection{Value: parts[0].Literal}
	case len(parts) == 1:
		return scorev1b1.ValueProjection{From: parts[0].From}
	default:
		return scorev1b1.ValueProjection{Parts: parts}
	}
}

// parts substitutes metadata into literals and keeps outputs as references. Adjacent
// literals are written into one builder, so composing is linear in what it writes, and every
// write is spent from the budget first.
func (b *builder) parts(s string) []scorev1b1.ValuePart {
	if b.err != nil {
		return nil // refused already: no more work for this plan
	}
	parsed, err := placeholder.Parse(s)
	if err != nil {
		b.fail(err)
		return nil
	}
	var out []scorev1b1.ValuePart
	var lit strings.Builder
	literal := func(l string) bool {
		if err := b.budget.Spend(len(l)); err != nil {
			b.fail(err)
			return false
		}
		lit.WriteString(l)
		return true
	}
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, scorev1b1.ValuePart{Literal: ptr.To(lit.String())})
			lit.Reset()
		}
	}
	for _, p := range parsed {
		switch {
		case p.Ref == nil:
			if !literal(p.Literal) {
				return nil
			}
		case p.Ref.Root == placeholder.RootMetadata:
			v, ok := placeholder.LookupPath(b.meta, p.Ref.Path)
			if !ok {
				b.fail(fmt.Errorf("the placeholder ${%s} names metadata the workload does not have", p.Ref.Raw))
				continue
			}
			str, err := placeholder.Stringify(v)
			if err != nil {
				b.fail(err)
				continue
			}
			if !literal(str) {
				return nil
			}
		default:
			ref := scorev1b1.OutputRef{ClaimKey: p.Ref.Resource(), OutputKey: p.Ref.Output()}
			b.checkOutput(ref)
			if err := b.budget.Spend(b.inlined(ref) + referenceSize(ref)); err != nil {
				b.fail(err)
				return nil
			}
			flush()
			out = append(out, scorev1b1.ValuePart{From: &ref})
		}
	}
	flush()
	return out
}

// referenceSize is about what a reference part adds to the plan's JSON, so that a string of
// many short references is bounded by the plan's size, not only by what the runtime inlines.
func referenceSize(ref scorev1b1.OutputRef) int {
	return len(`{"from":{"claimKey":"","outputKey":""}},`) + len(ref.ClaimKey) + len(ref.OutputKey)
}

// inlined is the size of the text the runtime writes for a reference: a non-secret output's
// value, which it inlines (a secret one is a reference to a Secret, bounded where its value
// is read).
func (b *builder) inlined(ref scorev1b1.OutputRef) int {
	c, ok := b.claims[ref.ClaimKey]
	if !ok || c.isSecret(ref.OutputKey) {
		return 0
	}
	v, found := placeholder.LookupPath(c.Outputs, splitOutput(ref.OutputKey))
	if !found {
		return 0
	}
	str, err := placeholder.Stringify(v)
	if err != nil {
		return 0
	}
	return len(str)
}

// checkOutput notes a reference whose output is not published.
func (b *builder) checkOutput(ref scorev1b1.OutputRef) {
	c, ok := b.claims[ref.ClaimKey]
	if ok && (ref.OutputKey == "" || c.isSecret(ref.OutputKey)) {
		return
	}
	if ok {
		if _, found := placeholder.LookupPath(c.Outputs, splitOutput(ref.OutputKey)); found {
			return
		}
	}
	if b.unresolved == nil {
		b.unresolved = map[string]bool{}
	}
	b.unresolved["resources."+ref.ClaimKey+"."+ref.OutputKey] = true
}

func (b *builder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// splitOutput splits a dotted output key as placeholders are split.
func splitOutput(key string) []string {
	if !strings.ContainsAny(key, `\{}$`) {
		return strings.Split(key, ".") // what the placeholder would parse to, without parsing it
	}
	refs, err := placeholder.Refs("${resources.x." + key + "}")
	if err != nil || len(refs) != 1 {
		return []string{key}
	}
	return refs[0].Path[1:]
}

func copyMap(m map[string]any) map[string]any {
	return values.Compose(m)
}
