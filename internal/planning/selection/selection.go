// Package selection picks a Workload's abstract profile and runtime backend from the
// Orchestrator Config, deterministically, and explains the choice. It is pure.
//
// Profile: the score.dev/profile hint (an unknown name is SpecInvalid), else the config's
// profileRules in order, else defaults.selectors in order (first match), else
// defaults.profile. Backend: the profile's candidates filtered by selectors, required
// features, resource ranges and regions, then sorted by priority (desc), SemVer (desc, a
// release above its pre-releases) and backendId (asc); the first wins.
package selection

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/api/resource"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// ProfileSource says how the profile was chosen.
type ProfileSource string

// The ways a profile is chosen.
const (
	ByHint     ProfileSource = "hint"
	ByRule     ProfileSource = "rule"
	BySelector ProfileSource = "selector"
	ByDefault  ProfileSource = "default"
)

// Selector holds a config with its profile rules compiled; build one per config.
type Selector struct {
	cfg   *orchconfig.Config
	rules []cel.Program
}

// New compiles the config's profile rules. The config must have passed orchconfig.Validate.
func New(cfg *orchconfig.Config) (*Selector, error) {
	env, err := orchconfig.ProfileRuleEnv()
	if err != nil {
		return nil, err
	}
	s := &Selector{cfg: cfg}
	for i, r := range cfg.ProfileRules {
		prg, err := orchconfig.CompileProfileRule(env, r.When)
		if err != nil {
			return nil, fmt.Errorf("profileRules[%d]: %w", i, err)
		}
		s.rules = append(s.rules, prg)
	}
	return s, nil
}

// Input is what selection looks at.
type Input struct {
	Workload *scorev1b1.Workload
	// Region is where the orchestrator runs; backends with regions need it to be one of them.
	Region string
}

// Candidate is one backend of the selected profile and what became of it.
type Candidate struct {
	BackendID string
	// Rejected names the constraint that filtered the backend out; empty when admitted.
	Rejected string
	// Rank is the 1-based position among admitted backends; 0 when rejected.
	Rank int
}

// Result is the decision and its trace.
type Result struct {
	// OK is true when a profile and a backend were selected.
	OK bool
	// Reason and Message explain a failure in abstract terms for the Workload's status.
	Reason  scorev1b1.Reason
	Message string

	Profile       string
	ProfileSource ProfileSource
	// ProfileDetail says which rule or selector matched, or why the hint was taken.
	ProfileDetail string
	// RuleErrors lists profile rules that failed to evaluate (they count as not matching).
	RuleErrors []string

	Backend    *orchconfig.Backend
	Candidates []Candidate
}

// Select chooses the profile and backend for in.Workload.
func (s *Selector) Select(in Input) Result {
	r := Result{}
	if !s.selectProfile(in, &r) {
		return r
	}
	requirements, err := Requirements(in.Workload.Annotations[scorev1b1.AnnotationRequirements])
	if err != nil {
		r.Reason, r.Message = scorev1b1.ReasonSpecInvalid, "The requirements annotation is not a list of feature names."
		return r
	}
	cpu, memory := TotalRequests(&in.Workload.Spec)
	var profile orchconfig.Profile
	for _, p := range s.cfg.Profiles {
		if p.Name == r.Profile {
			profile = p
		}
	}
	var admitted []orchconfig.Backend
	for _, b := range profile.Backends {
		c := Candidate{BackendID: b.BackendID, Rejected: rejection(b, in, requirements, cpu, memory)}
		r.Candidates = append(r.Candidates, c)
		if c.Rejected == "" {
			admitted = append(admitted, b)
		}
	}
	sort.SliceStable(admitted, func(i, j int) bool { return better(admitted[i], admitted[j]) })
	for rank, b := range admitted {
		for i := range r.Candidates {
			if r.Candidates[i].BackendID == b.BackendID {
				r.Candidates[i].Rank = rank + 1
			}
		}
	}
	if len(admitted) == 0 {
		r.Reason, r.Message = scorev1b1.ReasonRuntimeSelecting, "No runtime offered for this workload's profile fits its requirements."
		return r
	}
	b := admitted[0]
	r.Backend, r.OK = &b, true
	return r
}

func (s *Selector) selectProfile(in Input, r *Result) bool {
	w := in.Workload
	if hint, ok := w.Annotations[scorev1b1.AnnotationProfile]; ok {
		for _, p := range s.cfg.Profiles {
			if p.Name == hint {
				r.Profile, r.ProfileSource, r.ProfileDetail = hint, ByHint, "the "+scorev1b1.AnnotationProfile+" annotation"
				return true
			}
		}
		r.Reason, r.Message = scorev1b1.ReasonSpecInvalid, fmt.Sprintf("The requested profile %q is not offered by the platform.", hint)
		return false
	}
	if len(s.rules) > 0 {
		vars := map[string]any{"workload": celWorkload(w)}
		for i, prg := range s.rules {
			out, _, err := prg.Eval(vars)
			if err != nil {
				r.RuleErrors = append(r.RuleErrors, fmt.Sprintf("profileRules[%d]: %v", i, err))
				continue
			}
			if matched, ok := out.Value().(bool); ok && matched {
				r.Profile, r.ProfileSource, r.ProfileDetail = s.cfg.ProfileRules[i].Profile, ByRule, fmt.Sprintf("profileRules[%d]", i)
				return true
			}
		}
	}
	for i, ps := range s.cfg.Defaults.Selectors {
		if matches(ps.Selector, w.Namespace, w.Labels) {
			r.Profile, r.ProfileSource, r.ProfileDetail = ps.Profile, BySelector, fmt.Sprintf("defaults.selectors[%d]", i)
			return true
		}
	}
	if s.cfg.Defaults.Profile != "" {
		r.Profile, r.ProfileSource, r.ProfileDetail = s.cfg.Defaults.Profile, ByDefault, "defaults.profile"
		return true
	}
	r.Reason, r.Message = scorev1b1.ReasonRuntimeSelecting, "The platform offers no profile for this workload."
	return false
}

// celWorkload is the workload variable of profile rules.
func celWorkload(w *scorev1b1.Workload) map[string]any {
	var spec map[string]any
	if b, err := json.Marshal(w.Spec); err == nil {
		_ = json.Unmarshal(b, &spec)
	}
	strMap := func(m map[string]string) map[string]any {
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	return map[string]any{
		"metadata": map[string]any{
			"name": w.Name, "namespace": w.Namespace,
			"labels": strMap(w.Labels), "annotations": strMap(w.Annotations),
		},
		"spec": spec,
	}
}

// rejection returns the constraint that filters b out, or "" when b is admitted.
func rejection(b orchconfig.Backend, in Input, requirements []string, cpu, memory resource.Quantity) string {
	c := b.Constraints
	if len(c.Selectors) > 0 {
		any := false
		for _, s := range c.Selectors {
			if matches(s, in.Workload.Namespace, in.Workload.Labels) {
				any = true
				break
			}
		}
		if !any {
			return "selectors: no selector matches the workload's labels and namespace"
		}
	}
	offered := map[string]bool{}
	for _, f := range c.Features {
		offered[f] = true
	}
	for _, f := range requirements {
		if !offered[f] {
			return fmt.Sprintf("features: does not offer required feature %q", f)
		}
	}
	if c.Resources.CPU != "" {
		if rng, err := orchconfig.ParseQuantityRange(c.Resources.CPU); err == nil && !rng.Contains(cpu) {
			return fmt.Sprintf("resources.cpu: the workload requests %s, outside %s", cpu.String(), c.Resources.CPU)
		}
	}
	if c.Resources.Memory != "" {
		if rng, err := orchconfig.ParseQuantityRange(c.Resources.Memory); err == nil && !rng.Contains(memory) {
			return fmt.Sprintf("resources.memory: the workload requests %s, outside %s", memory.String(), c.Resources.Memory)
		}
	}
	if len(c.Regions) > 0 {
		found := false
		for _, r := range c.Regions {
			if r == in.Region {
				found = true
			}
		}
		if !found {
			return fmt.Sprintf("regions: the orchestrator's region %q is not one of %v", in.Region, c.Regions)
		}
	}
	return ""
}

// better orders admitted backends: priority desc, SemVer desc, backendId asc.
func better(a, b orchconfig.Backend) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	va, errA := semver.Parse(a.Version)
	vb, errB := semver.Parse(b.Version)
	if errA == nil && errB == nil {
		if c := va.Compare(vb); c != 0 {
			return c > 0
		}
	}
	return a.BackendID < b.BackendID
}

// matches reports whether a selector matches a Workload's labels and namespace.
func matches(s orchconfig.Selector, namespace string, wl map[string]string) bool {
	if len(s.Namespaces) > 0 {
		found := false
		for _, ns := range s.Namespaces {
			if ns == namespace {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return s.MatchesLabels(wl)
}

// Requirements parses the score.dev/requirements annotation: a JSON array of strings, or a
// comma-separated list.
func Requirements(v string) ([]string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	var out []string
	if strings.HasPrefix(v, "[") {
		if err := json.Unmarshal([]byte(v), &out); err != nil {
			return nil, err
		}
	} else {
		for _, f := range strings.Split(v, ",") {
			out = append(out, strings.TrimSpace(f))
		}
	}
	for _, f := range out {
		if f == "" {
			return nil, fmt.Errorf("an empty feature name")
		}
	}
	return out, nil
}

// TotalRequests sums the containers' CPU and memory requests, using limits where a request
// is absent.
func TotalRequests(spec *scorev1b1.WorkloadSpec) (cpu, memory resource.Quantity) {
	cpu, memory = resource.MustParse("0"), resource.MustParse("0")
	for _, c := range spec.Containers {
		if c.Resources == nil {
			continue
		}
		pick := func(get func(*scorev1b1.ResourcesLimits) *string) string {
			if c.Resources.Requests != nil && get(c.Resources.Requests) != nil {
				return *get(c.Resources.Requests)
			}
			if c.Resources.Limits != nil && get(c.Resources.Limits) != nil {
				return *get(c.Resources.Limits)
			}
			return ""
		}
		if q, err := resource.ParseQuantity(pick(func(l *scorev1b1.ResourcesLimits) *string { return l.CPU })); err == nil {
			cpu.Add(q)
		}
		if q, err := resource.ParseQuantity(pick(func(l *scorev1b1.ResourcesLimits) *string { return l.Memory })); err == nil {
			memory.Add(q)
		}
	}
	return cpu, memory
}
