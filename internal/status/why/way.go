package why

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/config/provisionermatch"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/placement"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/selection"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/values"
)

// Blocker is something in the way of a Workload, in its own words, with what holds it in turn.
type Blocker struct {
	// What names it: "StatefulSet shop/pg-0a1b2c3d4e5f".
	What string
	// Says is its own words: its state, reason and message.
	Says string
	// Because are what holds it in turn: a StatefulSet's pods, a route's Gateway.
	Because []Blocker
	// probe names the object a read of the cluster describes in the blocker's place
	// (Resolve); until it is read, an Object's blocker says what its inventory entry says and
	// the others say nothing.
	probe *scorev1b1.TraceProbe
}

// flatten writes blockers as a trace's lines, each at its depth below depth.
func flatten(bs []Blocker, depth int32) []scorev1b1.TraceBlocker {
	var out []scorev1b1.TraceBlocker
	for _, b := range bs {
		out = append(out, scorev1b1.TraceBlocker{Depth: depth, What: b.What, Says: b.Says, Probe: b.probe})
		out = append(out, flatten(b.Because, depth+1)...)
	}
	return out
}

// oneLine keeps a message with line breaks (a scheduler's, a container's) on its line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// walk goes from a Workload's conditions to what is in its way, as far as the Workload's own
// objects tell: an object whose live state says more is a blocker with a probe, which Resolve
// reads. It reads nothing itself.
type walk struct {
	in Input
	// described counts the inventory entries described, up to maxEntries.
	described int
	sel       *selection.Result
}

func newWalk(in Input) *walk {
	return &walk{in: in}
}

// selection is the orchestrator's selection for the Workload, recomputed once.
func (t *walk) selection() selection.Result {
	if t.sel == nil {
		r := selection.Result{}
		if t.in.Config != nil {
			if s, err := selection.New(t.in.Config); err == nil {
				r = s.Select(selection.Input{Workload: t.in.Workload, Region: t.in.Region})
			}
		}
		t.sel = &r
	}
	return *t.sel
}

// run walks from the conditions: the first one that is not True (inputs, claims, runtime)
// says where to look, as it decides Ready; a Ready Workload is looked at only when degraded.
func (t *walk) run() []Blocker {
	conds := t.in.Workload.Status.Conditions
	ready := meta.FindStatusCondition(conds, scorev1b1.ConditionReady)
	if ready == nil || ready.Status == metav1.ConditionTrue && ready.Reason != string(scorev1b1.ReasonRuntimeDegraded) {
		return nil
	}
	notTrue := func(typ string) bool {
		c := meta.FindStatusCondition(conds, typ)
		return c != nil && c.Status != metav1.ConditionTrue
	}
	switch {
	case notTrue(scorev1b1.ConditionInputsValid):
		return t.specification()
	case notTrue(scorev1b1.ConditionClaimsReady):
		return t.claims()
	}
	runtime := meta.FindStatusCondition(conds, scorev1b1.ConditionRuntimeReady)
	if runtime == nil {
		runtime = ready
	}
	switch reason := scorev1b1.Reason(runtime.Reason); reason {
	case scorev1b1.ReasonSpecInvalid:
		return t.specification()
	case scorev1b1.ReasonRuntimeSelecting:
		return t.configuration()
	case scorev1b1.ReasonProjectionError:
		return t.outputs()
	default:
		return t.runtime(reason)
	}
}

// specification: the Workload itself is in the way (its conditions name the field).
func (t *walk) specification() []Blocker {
	w := t.in.Workload
	return []Blocker{{What: "Workload " + w.Namespace + "/" + w.Name,
		Says: fmt.Sprintf("its own specification (generation %d), as the message above says; nothing is created for it until it is fixed", w.Generation)}}
}

// configuration: the Orchestrator Config offers the Workload no runtime.
func (t *walk) configuration() []Blocker {
	what := "Orchestrator Config"
	if t.in.ConfigSource != "" {
		what += " " + t.in.ConfigSource
	}
	if t.in.Config == nil {
		return []Blocker{{What: what, Says: "no valid config is loaded"}}
	}
	if t.in.ConfigRevision != "" {
		what += " (revision " + orchconfig.ShortRevision(t.in.ConfigRevision) + ")"
	}
	r := t.selection()
	switch {
	case r.Profile == "":
		return []Blocker{{What: what, Says: r.Message}}
	case r.Backend == nil:
		return []Blocker{{What: what, Says: fmt.Sprintf("no backend of profile %s fits this Workload: each one's reason is under Backends above", r.Profile)}}
	case r.Backend.Placement != nil:
		pin := placement.Input{Placement: r.Backend.Placement, Clusters: clusters.Placeable(t.in.Clusters), Namespace: t.in.Workload.Namespace, Name: t.in.Workload.Name}
		if res := placement.Place(pin); !res.OK {
			return []Blocker{{What: what, Says: fmt.Sprintf("backend %s places on clusters matching %s, and no registered cluster does (Placement above)", r.Backend.BackendID, res.Selector)}}
		}
	}
	return []Blocker{{What: what, Says: fmt.Sprintf("the current config selects backend %s; the orchestrator has not acted on it yet (it keeps its last valid config until this one loads)", r.Backend.BackendID)}}
}

// claims: every dependency that is not ready, with what holds it.
func (t *walk) claims() []Blocker {
	w := t.in.Workload
	summaries := map[string]scorev1b1.ClaimSummary{}
	for _, s := range w.Status.Claims {
		summaries[s.Key] = s
	}
	var out []Blocker
	quotas := map[string]bool{}
	for _, key := range slices.Sorted(maps.Keys(w.Spec.Resources)) {
		c := t.claim(key)
		if c == nil {
			s, ok := summaries[key]
			if ok && s.Phase == scorev1b1.ClaimPhaseBound && s.OutputsAvailable {
				continue
			}
			says := "no claim exists for it yet"
			if s.Message != "" {
				says += ": " + s.Message
			}
			if p, ok := resolve(t.in.Config, w.Spec.Resources[key]); !ok && t.in.Config != nil {
				says = p
			}
			if s.Reason == scorev1b1.ReasonQuotaExceeded {
				quotas[w.Namespace] = true
			}
			out = append(out, Blocker{What: "dependency " + key, Says: says})
			continue
		}
		if planner.ViewClaim(c).Ready {
			continue
		}
		b := Blocker{What: fmt.Sprintf("ResourceClaim %s/%s (dependency %s)", c.Namespace, c.Name, key), Says: claimSays(c)}
		if t.sharedFromElsewhere(c) {
			b.Says = sharedSays(c, summaries[key])
		}
		b.Because = t.entries(c.Status.Resources)
		if c.Status.Reason == scorev1b1.ReasonQuotaExceeded {
			ns := c.Namespace
			if c.Status.InstanceNamespace != "" {
				ns = c.Status.InstanceNamespace
			}
			if !t.in.Tenant || ns == w.Namespace {
				quotas[ns] = true
			}
		}
		out = append(out, b)
	}
	for _, ns := range slices.Sorted(maps.Keys(quotas)) {
		out = append(out, t.quotas(ns)...)
	}
	return out
}

// claim is the Workload's own claim for key, nil when there is none.
func (t *walk) claim(key string) *scorev1b1.ResourceClaim {
	for i := range t.in.Claims {
		c := &t.in.Claims[i]
		if c.Spec.Key == key && metav1.IsControlledBy(c, t.in.Workload) {
			return c
		}
	}
	return nil
}

func claimSays(c *scorev1b1.ResourceClaim) string {
	phase := claimPhase(c)
	if c.Status.Message == "" {
		return phase
	}
	return phase + " — " + c.Status.Message
}

// claimPhase is a claim's phase, and the generation it is for when the provisioner has not
// processed the latest.
func claimPhase(c *scorev1b1.ResourceClaim) string {
	phase := string(c.Status.Phase)
	if phase == "" {
		phase = "not processed by the provisioner yet"
	}
	if c.Status.ObservedGeneration != c.Generation && c.Status.Phase != scorev1b1.ClaimPhaseFailed && c.Status.Phase != "" {
		phase += fmt.Sprintf(" (for generation %d; the provisioner has not processed generation %d yet)", c.Status.ObservedGeneration, c.Generation)
	}
	return phase
}

// sharedFromElsewhere reports whether a tenant's trace is asked and the claim's instance lives
// in another namespace, which the platform shares it from.
func (t *walk) sharedFromElsewhere(c *scorev1b1.ResourceClaim) bool {
	ns := c.Status.InstanceNamespace
	return t.in.Tenant && ns != "" && ns != t.in.Workload.Namespace
}

// sharedSays is what a tenant is told of a claim whose instance lives in another namespace: its
// phase and the Workload's own summary of it (the sentence its status shows), not the
// provisioner's words, which name that namespace's objects.
func sharedSays(c *scorev1b1.ResourceClaim, s scorev1b1.ClaimSummary) string {
	says := claimPhase(c)
	if s.Message != "" {
		says += " — " + s.Message
	}
	return says + " (its instance is shared from another namespace)"
}

// outputs: the outputs the Workload uses that its dependencies have not published, as the
// planner finds them.
func (t *walk) outputs() []Blocker {
	w := t.in.Workload
	views := map[string]planner.ClaimView{}
	claims := map[string]*scorev1b1.ResourceClaim{}
	for key := range w.Spec.Resources {
		if c := t.claim(key); c != nil {
			views[key], claims[key] = planner.ViewClaim(c), c
		}
	}
	backend := orchconfig.Backend{}
	if r := t.selection(); r.Backend != nil {
		backend = *r.Backend
	}
	in := planner.PlanInput{Workload: w, Backend: backend, Claims: views}
	if p := t.in.Plan; p != nil && p.Spec.Cluster != "" {
		in.Cluster, in.ClusterLabels = p.Spec.Cluster, t.in.Clusters[p.Spec.Cluster].Labels
	}
	built, err := planner.BuildPlan(in)
	if err != nil {
		return []Blocker{{What: "Workload " + w.Namespace + "/" + w.Name, Says: "its values do not compose: " + err.Error()}}
	}
	var out []Blocker
	for _, placeholder := range built.Unresolved {
		key, output := splitOutput(placeholder)
		c := claims[key]
		if c == nil {
			out = append(out, Blocker{What: "output " + placeholder, Says: "dependency " + key + " has no claim yet"})
			continue
		}
		v := views[key]
		published := append(slices.Sorted(maps.Keys(v.Outputs)), v.SecretKeys...)
		sort.Strings(published)
		says := fmt.Sprintf("ResourceClaim %s/%s (provisioner %s) has not published %s", c.Namespace, c.Name, orNone(c.Status.Provisioner), output)
		if len(published) > 0 {
			says += "; it publishes " + strings.Join(published, ", ")
		} else {
			says += "; it publishes no outputs"
		}
		out = append(out, Blocker{What: "output " + placeholder, Says: says})
	}
	return out
}

// splitOutput splits "resources.<key>.<output>".
func splitOutput(placeholder string) (key, output string) {
	rest := strings.TrimPrefix(placeholder, "resources.")
	key, output, _ = strings.Cut(rest, ".")
	return key, output
}

func orNone(s string) string {
	if s == "" {
		return "none yet"
	}
	return s
}

// runtime: the plan, what the runtime applied for it that is not healthy, what its endpoint
// waits for, and the quotas that refused it.
func (t *walk) runtime(reason scorev1b1.Reason) []Blocker {
	w, p := t.in.Workload, t.in.Plan
	name := "WorkloadPlan " + w.Namespace + "/" + w.Name
	if p == nil {
		return []Blocker{{What: name, Says: "none yet: the orchestrator has not written the plan (or your rights do not show it)"}}
	}
	var out []Blocker
	if p.Status.Phase == scorev1b1.PlanPhaseFailed || p.Status.Message != "" {
		out = append(out, Blocker{What: name, Says: string(p.Status.Phase) + " — " + p.Status.Message})
	}
	if c := p.Spec.Cluster; c != "" {
		if s, ok := t.in.Clusters[c]; ok && !s.Reachable {
			out = append(out, Blocker{What: "cluster " + c, Says: "does not answer: " + s.Message})
		}
	}
	if reason == scorev1b1.ReasonRuntimeProvisioning {
		out = append(out, t.outputsSecrets(p)...)
	}
	out = append(out, t.entries(p.Status.Objects)...)
	if reason == scorev1b1.ReasonNetworkUnavailable {
		out = append(out, t.exposing()...)
	}
	if reason == scorev1b1.ReasonQuotaExceeded {
		out = append(out, t.quotas(p.Namespace)...)
	}
	if !slices.ContainsFunc(out, stays) && p.Status.ObservedGeneration != p.Generation {
		out = append(out, Blocker{What: name, Says: fmt.Sprintf("the runtime has not processed generation %d yet (it last processed %d)", p.Generation, p.Status.ObservedGeneration)})
	}
	return out
}

// stays reports whether a blocker is said whatever a read finds: one of the Workload's own
// objects, or no object at all; not a Secret, an endpoint or the quotas, said only when a read
// finds them in the way.
func stays(b Blocker) bool {
	return b.probe == nil || b.probe.Look == scorev1b1.TraceLookObject
}

// outputsSecrets are the outputs Secrets the plan's render reads: the runtime waits for one
// that does not exist without a word. Only their existence is asked, never what they hold.
func (t *walk) outputsSecrets(p *scorev1b1.WorkloadPlan) []Blocker {
	var out []Blocker
	for _, c := range p.Spec.Claims {
		if c.SecretName == "" {
			continue
		}
		r := Ref{APIVersion: "v1", Kind: "Secret", Namespace: p.Namespace, Name: c.SecretName}
		out = append(out, Blocker{What: fmt.Sprintf("%s (the secret outputs of dependency %s)", r, c.Key), probe: r.probe(scorev1b1.TraceLookSecret)})
	}
	return out
}

// entries describes the inventory entries that are not Current, up to maxEntries across the
// trace. A tenant's trace names only the objects of the Workload's namespace, and counts the
// others (a shared instance's, in the namespace that shares it).
func (t *walk) entries(objs []scorev1b1.AppliedObject) []Blocker {
	var rest []string
	var bs []Blocker
	elsewhere := 0
	for _, o := range objs {
		if o.Health == scorev1b1.HealthCurrent {
			continue
		}
		if t.in.Tenant && o.Namespace != t.in.Workload.Namespace {
			elsewhere++
			continue
		}
		r := Ref{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
		if t.described >= maxEntries {
			rest = append(rest, r.String())
			continue
		}
		t.described++
		said := o.Health
		if o.Message != "" {
			said += " — " + o.Message
		}
		if o.Cluster != "" {
			bs = append(bs, Blocker{What: r.String() + " on cluster " + o.Cluster, Says: said + " (not read: the trace reads the hub)"})
			continue
		}
		bs = append(bs, Blocker{What: r.String(), Says: said, probe: r.probe(scorev1b1.TraceLookObject)})
	}
	if len(rest) > 0 {
		bs = append(bs, Blocker{What: fmt.Sprintf("%d more not healthy", len(rest)), Says: strings.Join(rest, ", ")})
	}
	if elsewhere > 0 {
		bs = append(bs, Blocker{What: fmt.Sprintf("%d object(s) outside namespace %s", elsewhere, t.in.Workload.Namespace),
			Says: "not healthy; they are another namespace's, which this trace does not describe"})
	}
	return bs
}

// exposing are the objects the Workload's endpoint waits for: its routes and Ingresses, and
// those its dependencies provisioned, while the exposure says an ingress or a gateway is
// pending; its Services while it says a load balancer is (both, without an exposure to say).
// kstatus calls them Current, as the API server accepted them; whether a gateway, an ingress
// controller or a load balancer serves them is in their status, which Resolve reads. Only the
// ones still waiting are named.
func (t *walk) exposing() []Blocker {
	var objs []scorev1b1.AppliedObject
	if t.in.Plan != nil {
		objs = append(objs, t.in.Plan.Status.Objects...)
	}
	for _, key := range slices.Sorted(maps.Keys(t.in.Workload.Spec.Resources)) {
		if c := t.claim(key); c != nil {
			objs = append(objs, c.Status.Resources...)
		}
	}
	ingress, balancer := true, true
	if e := t.in.Exposure; e != nil {
		ingress = meta.IsStatusConditionTrue(e.Status.Conditions, scorev1b1.ExposureConditionIngressPending)
		balancer = meta.IsStatusConditionTrue(e.Status.Conditions, scorev1b1.ExposureConditionLBPending)
	}
	var out []Blocker
	for _, o := range objs {
		r := Ref{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
		switch {
		case o.Cluster != "" || o.Health != scorev1b1.HealthCurrent:
			continue // one not Current is named with the entries
		case t.in.Tenant && o.Namespace != t.in.Workload.Namespace:
			continue // another namespace's: a tenant's trace does not name it
		}
		switch kind := publishes(r); {
		case kind == "":
			continue
		case kind == "Service" && !balancer, kind != "Service" && !ingress:
			continue
		}
		out = append(out, Blocker{What: r.String(), probe: r.probe(scorev1b1.TraceLookEndpoint)})
	}
	return out
}

// quotas are the namespace's ResourceQuotas, which Resolve lists.
func (t *walk) quotas(ns string) []Blocker {
	r := Ref{APIVersion: "v1", Kind: "ResourceQuota", Namespace: ns}
	return []Blocker{{What: "ResourceQuotas in " + ns, probe: r.probe(scorev1b1.TraceLookQuotas)}}
}

// publishes is the kind of r when objects of that kind carry an endpoint that a controller
// must serve (HTTPRoute, Ingress, Service), "" otherwise.
func publishes(r Ref) string {
	switch {
	case r.group() == "gateway.networking.k8s.io" && r.Kind == "HTTPRoute",
		r.group() == "networking.k8s.io" && r.Kind == "Ingress",
		r.group() == "" && r.Kind == "Service":
		return r.Kind
	}
	return ""
}

// resolve is the provisioner serving a resource as the trace names it, or the resolver's
// message when none does.
func resolve(cfg *orchconfig.Config, res scorev1b1.Resource) (provider string, ok bool) {
	if cfg == nil {
		return "", false
	}
	params, _ := values.Object(res.Params) // the API server admits only objects
	pc := provisionermatch.Claim{Type: res.Type, Params: params}
	if res.Class != nil {
		pc.Class = *res.Class
	}
	if res.ID != nil {
		pc.ID = *res.ID
	}
	served, message, ok := provisionermatch.Resolve(provisionermatch.Input{Classes: cfg.Classes, Provisioners: cfg.Provisioners, Claim: pc})
	if !ok {
		return message, false
	}
	provider = fmt.Sprintf("provisioners[%d] %s", served.Index, cfg.Provisioners[served.Index].URI)
	if served.Class != "" {
		provider += " (class " + served.Class + ")"
	}
	return provider, true
}
