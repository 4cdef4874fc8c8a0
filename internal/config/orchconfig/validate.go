package orchconfig

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/blang/semver/v4"
	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/runnable"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/placeholder"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/tplfuncs"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/urltemplate"
)

var (
	backendIDPattern    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
	resourceTypePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,61}[A-Za-z0-9]$`)
	resourceIDPattern   = regexp.MustCompile(`^[a-z0-9]+(?:-+[a-z0-9]+)*(?:\.[a-z0-9]+(?:-+[a-z0-9]+)*)*$`)
	uriPattern          = regexp.MustCompile(`^([a-z][a-z0-9+.-]*)://(.+)$`)
	allowedKindPattern  = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	featurePattern      = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
)

// RuntimeClasses are the runtime classes the control plane's runtimes serve: a backend of
// another class would be selected and planned, and no runtime would ever answer its plan.
var RuntimeClasses = []string{scorev1b1.RuntimeClassKubernetes, scorev1b1.RuntimeClassDocker}

// The template kinds a backend may use.
var templateKinds = map[string]bool{"manifests": true, "helm": true, "kustomize": true}

var deprovisionPolicies = map[string]bool{"Delete": true, "Retain": true, "Orphan": true}

// Validate checks a decoded document as a whole and returns every problem, each with the
// path of the field it concerns. It never stops at the first problem.
func Validate(cfg *Config) []FieldError {
	v := &validator{}
	v.header(cfg)
	profiles := v.profiles(cfg)
	v.profileRules(cfg, profiles)
	v.defaults(cfg, profiles)
	v.provisioners(cfg)
	v.classes(cfg)
	v.endpoint(cfg)
	v.dependencies(cfg)
	v.rollout(cfg.Rollout)
	v.health(cfg)
	v.hostnames(cfg)
	v.namedVolumes(cfg)
	v.previews(cfg.Previews)
	v.pods(cfg)
	for i, k := range cfg.AllowedKinds {
		if !allowedKindPattern.MatchString(k) {
			v.fail(fmt.Sprintf("allowedKinds[%d]", i), "%q must be Kind or Kind.group, e.g. Deployment.apps", k)
		}
	}
	return v.errs
}

type validator struct {
	errs []FieldError
}

func (v *validator) fail(path, format string, args ...any) {
	v.errs = append(v.errs, FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
}

func (v *validator) header(cfg *Config) {
	if cfg.APIVersion != APIVersion {
		v.fail("apiVersion", "must be %q, found %q", APIVersion, cfg.APIVersion)
	}
	if cfg.Kind != Kind {
		v.fail("kind", "must be %q, found %q", Kind, cfg.Kind)
	}
}

// profiles checks every profile and backend and returns the set of valid profile names.
func (v *validator) profiles(cfg *Config) map[string]bool {
	names := map[string]bool{}
	backendIDs := map[string]string{}
	if len(cfg.Profiles) == 0 {
		v.fail("profiles", "at least one profile is required")
	}
	for i, p := range cfg.Profiles {
		path := fmt.Sprintf("profiles[%d]", i)
		switch {
		case !isDNSLabel(p.Name):
			v.fail(path+".name", "%q must be a DNS label (lower-case letters, digits and '-', at most 63 characters)", p.Name)
		case names[p.Name]:
			v.fail(path+".name", "profile %q is defined more than once", p.Name)
		}
		names[p.Name] = true
		if len(p.Backends) == 0 {
			v.fail(path+".backends", "profile %q needs at least one backend", p.Name)
		}
		for j, b := range p.Backends {
			bpath := fmt.Sprintf("%s.backends[%d]", path, j)
			if prev, dup := backendIDs[b.BackendID]; dup && b.BackendID != "" {
				v.fail(bpath+".backendId", "backendId %q is already used at %s; backendIds are unique across the document", b.BackendID, prev)
			} else {
				backendIDs[b.BackendID] = bpath
			}
			v.backend(bpath, b, cfg.AllowMutableRefs)
		}
	}
	return names
}

func (v *validator) backend(path string, b Backend, allowMutable bool) {
	if !backendIDPattern.MatchString(b.BackendID) || len(b.BackendID) > 253 {
		v.fail(path+".backendId", "%q must be lower-case letters, digits, '-' and '.', starting and ending with a letter or digit", b.BackendID)
	}
	switch {
	case !isDNSLabel(b.RuntimeClass):
		v.fail(path+".runtimeClass", "%q must be a DNS label such as kubernetes", b.RuntimeClass)
	case !slices.Contains(RuntimeClasses, b.RuntimeClass):
		v.fail(path+".runtimeClass", "no runtime of this control plane serves %q: use %s", b.RuntimeClass, strings.Join(RuntimeClasses, " or "))
	}
	if b.Priority < 0 {
		v.fail(path+".priority", "must not be negative, found %d", b.Priority)
	}
	v.timing(path+".rollout", b.Rollout)
	if _, err := semver.Parse(b.Version); err != nil {
		v.fail(path+".version", "%q must be a SemVer 2.0.0 version such as 1.4.0 or 2.0.0-rc.1", b.Version)
	}
	if b.RuntimeClass == scorev1b1.RuntimeClassDocker {
		v.composeTemplate(path+".template", b.Template)
		v.dockerBackend(path, b)
	} else {
		v.template(path+".template", b.Template, allowMutable)
	}
	v.constraints(path+".constraints", b.Constraints)
	if p := b.Placement; p != nil {
		v.placement(path+".placement", *p)
	}
}

func (v *validator) placement(path string, p Placement) {
	switch p.Policy {
	case "", PlacementSpread, PlacementOrdered:
	default:
		v.fail(path+".policy", "%q is not a placement policy: use Spread or Ordered", p.Policy)
	}
	if len(p.ClusterSelector.Namespaces) > 0 {
		v.fail(path+".clusterSelector.namespaces", "a cluster selector matches cluster labels only")
	}
	if len(p.ClusterSelector.MatchLabels) == 0 && len(p.ClusterSelector.MatchExpressions) == 0 {
		v.fail(path+".clusterSelector", "a cluster selector needs matchLabels or matchExpressions (a backend without placement runs on the hub)")
	} else {
		v.selector(path+".clusterSelector", p.ClusterSelector)
	}
	for i, o := range p.Overrides {
		v.override(fmt.Sprintf("%s.overrides[%d]", path, i), o, p.ClusterSelector)
	}
	if p.Failover != nil {
		v.failover(path+".failover", *p.Failover)
	}
	v.clusters(path, p)
}

// override checks one placement override: a cluster selector as the placement's (labels
// only, not empty: an override for every cluster belongs in the template's values), one
// that does not contradict the placement's matchLabels (it could never apply), and values
// that are not empty and fit the plan's budget on their own (a plan holding them could
// never be emitted).
func (v *validator) override(path string, o Override, placement Selector) {
	sel := o.ClusterSelector
	switch {
	case len(sel.Namespaces) > 0:
		v.fail(path+".clusterSelector.namespaces", "a cluster selector matches cluster labels only")
	case len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0:
		v.fail(path+".clusterSelector", "an override's cluster selector needs matchLabels or matchExpressions (values for every cluster belong in template.values)")
	default:
		v.selector(path+".clusterSelector", sel)
	}
	for _, k := range sortedKeys(sel.MatchLabels) {
		if want, ok := placement.MatchLabels[k]; ok && want != sel.MatchLabels[k] {
			v.fail(path+".clusterSelector.matchLabels."+k, "%q can never match: the placement only chooses clusters with %s=%s", sel.MatchLabels[k], k, want)
		}
	}
	if len(o.Values) == 0 {
		v.fail(path+".values", "an override needs values")
		return
	}
	raw, err := json.Marshal(o.Values)
	switch {
	case err != nil:
		v.fail(path+".values", "cannot be encoded as JSON: %v", err)
	case len(raw) > placeholder.MaxExpanded:
		v.fail(path+".values", "%d bytes is more than a plan may hold (%d)", len(raw), placeholder.MaxExpanded)
	}
}

// composeTemplate checks a Docker backend's template: kind compose, nothing to fetch, only
// the backend's default values.
func (v *validator) composeTemplate(path string, t Template) {
	if t.Kind != string(scorev1b1.TemplateCompose) {
		v.fail(path+".kind", "%q: a docker backend's template is kind compose (the Docker runtime runs the plan's containers itself)", t.Kind)
	}
	if t.Ref != "" || t.Digest != "" {
		v.fail(path+".ref", "a compose template has nothing to fetch: leave ref and digest out")
	}
}

// dockerBackend refuses what a docker backend cannot mean: placement chooses member clusters
// (a Docker host's agent serves the plans placed on no host, or on its own), and kinds and
// pods are Kubernetes objects' rules.
func (v *validator) dockerBackend(path string, b Backend) {
	if b.Placement != nil {
		v.fail(path+".placement", "a docker backend runs on the Docker host whose agent serves unplaced plans; placement chooses member clusters")
	}
	if len(b.Kinds) > 0 {
		v.fail(path+".kinds", "a docker backend creates containers, not Kubernetes objects")
	}
	if b.Pods != nil {
		v.fail(path+".pods", "a docker backend runs no pods")
	}
}

func (v *validator) template(path string, t Template, allowMutable bool) {
	if !templateKinds[t.Kind] {
		v.fail(path+".kind", "%q is not a template kind: use manifests, helm or kustomize", t.Kind)
	}
	if t.Digest != "" && !digestPattern.MatchString(t.Digest) {
		v.fail(path+".digest", "%q must be sha256: followed by 64 lower-case hex digits", t.Digest)
		return
	}
	ref, err := ParseRef(t.Ref)
	if err != nil {
		v.fail(path+".ref", "%q: %v", t.Ref, err)
		return
	}
	if ref.Digest != "" && t.Digest != "" && ref.Digest != t.Digest {
		v.fail(path+".digest", "%s disagrees with the digest in ref (%s)", t.Digest, ref.Digest)
	}
	if t.Kind == "kustomize" && ref.Scheme == RefConfigMap && ref.Key != "" {
		v.fail(path+".ref", "%q: a kustomize template is a whole ConfigMap, one file per key: name no key", t.Ref)
	}
	if ref.Digest == "" && t.Digest == "" && !allowMutable {
		v.fail(path+".ref", "%q is mutable: pin it with a digest (ref @sha256:... or digest: sha256:...), or set allowMutableRefs: true for development", t.Ref)
	}
}

func (v *validator) constraints(path string, c Constraints) {
	for i, s := range c.Selectors {
		v.selector(fmt.Sprintf("%s.selectors[%d]", path, i), s)
	}
	seen := map[string]bool{}
	for i, f := range c.Features {
		switch {
		case !featurePattern.MatchString(f):
			v.fail(fmt.Sprintf("%s.features[%d]", path, i), "%q must be lower-case letters, digits, '-' and '.'", f)
		case seen[f]:
			v.fail(fmt.Sprintf("%s.features[%d]", path, i), "feature %q is listed twice", f)
		}
		seen[f] = true
	}
	for i, r := range c.Regions {
		if strings.TrimSpace(r) == "" {
			v.fail(fmt.Sprintf("%s.regions[%d]", path, i), "a region must not be empty")
		}
	}
	if c.Resources.CPU != "" {
		if _, err := ParseQuantityRange(c.Resources.CPU); err != nil {
			v.fail(path+".resources.cpu", "%v", err)
		}
	}
	if c.Resources.Memory != "" {
		if _, err := ParseQuantityRange(c.Resources.Memory); err != nil {
			v.fail(path+".resources.memory", "%v", err)
		}
	}
}

var selectorOperators = map[string]bool{"In": true, "NotIn": true, "Exists": true, "DoesNotExist": true}

func (v *validator) selector(path string, s Selector) {
	if len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0 && len(s.Namespaces) == 0 {
		v.fail(path, "a selector needs matchLabels, matchExpressions or namespaces")
	}
	for _, k := range sortedKeys(s.MatchLabels) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			v.fail(path+".matchLabels", "label key %q is invalid: %s", k, errs[0])
		}
		if errs := validation.IsValidLabelValue(s.MatchLabels[k]); len(errs) > 0 {
			v.fail(path+".matchLabels."+k, "label value %q is invalid: %s", s.MatchLabels[k], errs[0])
		}
	}
	for i, e := range s.MatchExpressions {
		epath := fmt.Sprintf("%s.matchExpressions[%d]", path, i)
		if errs := validation.IsQualifiedName(e.Key); len(errs) > 0 {
			v.fail(epath+".key", "label key %q is invalid: %s", e.Key, errs[0])
		}
		switch {
		case !selectorOperators[e.Operator]:
			v.fail(epath+".operator", "%q is not an operator: use In, NotIn, Exists or DoesNotExist", e.Operator)
		case (e.Operator == "In" || e.Operator == "NotIn") && len(e.Values) == 0:
			v.fail(epath+".values", "operator %s needs at least one value", e.Operator)
		case (e.Operator == "Exists" || e.Operator == "DoesNotExist") && len(e.Values) > 0:
			v.fail(epath+".values", "operator %s takes no values", e.Operator)
		}
	}
	for i, ns := range s.Namespaces {
		if !isDNSLabel(ns) {
			v.fail(fmt.Sprintf("%s.namespaces[%d]", path, i), "%q is not a valid namespace name", ns)
		}
	}
}

func (v *validator) profileRules(cfg *Config, profiles map[string]bool) {
	if len(cfg.ProfileRules) == 0 {
		return
	}
	env, err := ProfileRuleEnv()
	if err != nil {
		v.fail("profileRules", "cannot build the rule environment: %v", err)
		return
	}
	for i, r := range cfg.ProfileRules {
		path := fmt.Sprintf("profileRules[%d]", i)
		if !profiles[r.Profile] {
			v.fail(path+".profile", "names profile %q, which is not defined in profiles", r.Profile)
		}
		if strings.TrimSpace(r.When) == "" {
			v.fail(path+".when", "an expression is required")
			continue
		}
		if _, err := CompileProfileRule(env, r.When); err != nil {
			v.fail(path+".when", "%v", err)
		}
	}
}

func (v *validator) defaults(cfg *Config, profiles map[string]bool) {
	if cfg.Defaults.Profile != "" && !profiles[cfg.Defaults.Profile] {
		v.fail("defaults.profile", "names profile %q, which is not defined in profiles", cfg.Defaults.Profile)
	}
	for i, s := range cfg.Defaults.Selectors {
		path := fmt.Sprintf("defaults.selectors[%d]", i)
		if !profiles[s.Profile] {
			v.fail(path+".profile", "names profile %q, which is not defined in profiles", s.Profile)
		}
		v.selector(path, s.Selector)
	}
}

func (v *validator) provisioners(cfg *Config) {
	for i, p := range cfg.Provisioners {
		path := fmt.Sprintf("provisioners[%d]", i)
		m := uriPattern.FindStringSubmatch(p.URI)
		switch {
		case p.URI == "":
			v.fail(path+".uri", "a uri is required, for example template://my-org/postgres")
		case m == nil:
			v.fail(path+".uri", "%q must be <scheme>://<name>", p.URI)
		case m[1] == LocalEnvScheme:
			v.localEnv(path, p)
			continue
		case !Strategy(m[1]).Known():
			v.fail(path+".uri", "scheme %q is not a provisioner strategy: use template, cmd, http+api, runnable or helm", m[1])
		}
		if !resourceTypePattern.MatchString(p.Type) {
			v.fail(path+".type", "%q must be 2-63 letters, digits and '-', starting and ending with a letter or digit", p.Type)
		}
		if p.Class != nil && !resourceTypePattern.MatchString(*p.Class) {
			v.fail(path+".class", "%q must be 2-63 letters, digits and '-', starting and ending with a letter or digit", *p.Class)
		}
		if p.ID != nil && (!resourceIDPattern.MatchString(*p.ID) || len(*p.ID) > 63) {
			v.fail(path+".id", "%q must be dot-separated lower-case labels of letters, digits and '-'", *p.ID)
		}
		if p.Location != "" && p.Location != LocationWorkload && p.Location != LocationHub {
			v.fail(path+".location", "%q must be %s or %s", p.Location, LocationWorkload, LocationHub)
		}
		v.timing(path+".rollout", p.Rollout)
		if p.DeprovisionPolicy != "" && !deprovisionPolicies[p.DeprovisionPolicy] {
			v.fail(path+".deprovisionPolicy", "%q must be Delete, Retain or Orphan", p.DeprovisionPolicy)
		}
		v.platformSecrets(path, p)
		if m != nil && m[1] == "http+api" {
			v.api(path, p)
			continue
		}
		if p.API != nil {
			v.fail(path+".api", "only http+api:// provisioners take api")
		}
		if p.EmitsCompose() {
			v.compose(path, p, m)
		}
		if m != nil && m[1] == "cmd" {
			for _, f := range []struct{ name, text string }{ // in document order, so the errors are too
				{"init", p.Init}, {"state", p.State}, {"shared", p.Shared}, {"outputs", p.Outputs}, {"manifests", p.Manifests},
			} {
				if f.text != "" {
					v.fail(path+"."+f.name, "a cmd:// provisioner takes args, not templates")
				}
			}
			continue
		}
		if len(p.Args) > 0 {
			v.fail(path+".args", "only cmd:// provisioners take args")
		}
		v.runnable(path, p, m != nil && m[1] == "runnable")
		v.sharing(path, p)
		v.helm(path, p, m != nil && m[1] == "helm")
		for _, f := range []struct{ name, text string }{
			{"init", p.Init}, {"state", p.State}, {"shared", p.Shared}, {"outputs", p.Outputs}, {"manifests", p.Manifests},
		} {
			v.parsesYAML(path+"."+f.name, f.name, f.text)
		}
	}
}

// compose checks a definition in score-compose's format: a template:// one, each Compose
// template YAML once rendered, its instances next to their Workload on its Docker host (not
// on the hub, not shared across namespaces: a host's services are on its namespace's
// network), and nothing for a cluster beside them.
func (v *validator) compose(path string, p Provisioner, scheme []string) {
	if scheme != nil && scheme[1] != string(StrategyTemplate) {
		v.fail(path+".uri", "services, volumes, networks and files are score-compose's template:// fields: use template://")
	}
	if p.Manifests != "" || p.Helm != nil || p.Runnable != nil {
		v.fail(path+".manifests", "a definition emits Compose services for a Docker host or objects for a cluster, not both")
	}
	if p.OnHub() {
		v.fail(path+".location", "Compose services run on the Workload's Docker host, not on the hub")
	}
	if p.Sharing != nil {
		v.fail(path+".sharing", "Compose services are shared within their namespace's network only")
	}
	for _, f := range []struct{ name, text string }{{"services", p.Services}, {"volumes", p.Volumes}, {"networks", p.Networks}, {"files", p.Files}} {
		v.parsesYAML(path+"."+f.name, f.name, f.text)
	}
}

// localEnv checks a local-env:// definition: a type, and nothing that would run.
func (v *validator) localEnv(path string, p Provisioner) {
	if !resourceTypePattern.MatchString(p.Type) {
		v.fail(path+".type", "%q must be 2-63 letters, digits and '-', starting and ending with a letter or digit", p.Type)
	}
	if p.Init != "" || p.State != "" || p.Outputs != "" || p.Manifests != "" || p.EmitsCompose() || len(p.Args) > 0 || p.API != nil {
		v.fail(path+".uri", "a local-env:// definition takes no templates: it serves no claim (a control plane lends no environment)")
	}
}

var apiMethods = map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true}

// api checks an http+api:// definition: its api block, and no templates but outputs.
func (v *validator) api(path string, p Provisioner) {
	for field, text := range map[string]string{"init": p.Init, "state": p.State, "shared": p.Shared, "manifests": p.Manifests} {
		if text != "" {
			v.fail(path+"."+field, "an http+api:// provisioner takes an api block and an outputs template only")
		}
	}
	if len(p.Args) > 0 {
		v.fail(path+".args", "only cmd:// provisioners take args")
	}
	v.parses(path+".outputs", p.Outputs)
	a := p.API
	if a == nil {
		v.fail(path+".api", "an http+api:// provisioner needs an api block with at least create.url")
		return
	}
	path += ".api"
	v.apiRequest(path+".create", &a.Create)
	if a.Status != nil {
		v.apiRequest(path+".status", a.Status)
		if a.ReadyWhen == nil {
			v.fail(path+".readyWhen", "a status request needs readyWhen (path and ready values)")
		}
	}
	if a.Delete != nil {
		v.apiRequest(path+".delete", a.Delete)
	}
	if r := a.ReadyWhen; r != nil {
		if strings.TrimSpace(r.Path) == "" {
			v.fail(path+".readyWhen.path", "a dotted path into the response is required, for example status.phase")
		}
		if len(r.Ready) == 0 {
			v.fail(path+".readyWhen.ready", "at least one ready value is required")
		}
	}
	for field, d := range map[string]string{"pollInterval": a.PollInterval, "timeout": a.Timeout} {
		if d == "" {
			continue
		}
		if dur, err := time.ParseDuration(d); err != nil || dur <= 0 {
			v.fail(path+"."+field, "%q must be a positive duration such as 2s or 10m", d)
		}
	}
	if c := a.Credentials; c != nil {
		if !isDNSSubdomain(c.SecretRef.Name) {
			v.fail(path+".credentials.secretRef.name", "%q must be a Secret name", c.SecretRef.Name)
		}
		if c.SecretRef.Key == "" {
			v.fail(path+".credentials.secretRef.key", "a key is required")
		}
	}
}

func (v *validator) apiRequest(path string, r *APIRequest) {
	if r.Method != "" && !apiMethods[r.Method] {
		v.fail(path+".method", "%q must be GET, POST, PUT, PATCH or DELETE", r.Method)
	}
	if strings.TrimSpace(r.URL) == "" {
		v.fail(path+".url", "a url is required")
	} else if err := urltemplate.Check(r.URL); err != nil {
		v.fail(path+".url", "template does not parse: %v", err)
	}
	v.parses(path+".body", r.Body)
	for _, k := range sortedKeys(r.Headers) {
		v.parses(path+".headers."+k, r.Headers[k])
	}
}

// parsesYAML reports a template that renders YAML and does not parse with the provisioner
// function set, or cannot be guarded (its text holds the token marker): as a run parses it.
func (v *validator) parsesYAML(path, name, text string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	if _, err := tplfuncs.ParseYAML(name, strings.TrimSpace(text), nil); err != nil {
		v.fail(path, "template does not parse: %v", err)
	}
}

// parses reports a template that does not parse with the provisioner function set.
func (v *validator) parses(path, text string) {
	if text == "" {
		return
	}
	if _, err := template.New(path).Funcs(tplfuncs.Provisioner()).Parse(text); err != nil {
		v.fail(path, "template does not parse: %v", err)
	}
}

// classes checks each class, one default per type, and that a provisioner bound to a class
// names one the type declares (when it declares any).
func (v *validator) classes(cfg *Config) {
	declared := map[string]map[string]bool{}
	defaults := map[string]string{}
	for i, c := range cfg.Classes {
		path := fmt.Sprintf("classes[%d]", i)
		if !resourceTypePattern.MatchString(c.Type) {
			v.fail(path+".type", "%q must be 2-63 letters, digits and '-', starting and ending with a letter or digit", c.Type)
		}
		switch {
		case !resourceTypePattern.MatchString(c.Name):
			v.fail(path+".name", "%q must be 2-63 letters, digits and '-', starting and ending with a letter or digit", c.Name)
		case declared[c.Type][c.Name]:
			v.fail(path+".name", "class %q of type %s is defined more than once", c.Name, c.Type)
		}
		if declared[c.Type] == nil {
			declared[c.Type] = map[string]bool{}
		}
		declared[c.Type][c.Name] = true
		if c.Default {
			if prev, dup := defaults[c.Type]; dup {
				v.fail(path+".default", "type %s already has a default class (%s); a type has at most one", c.Type, prev)
			} else {
				defaults[c.Type] = fmt.Sprintf("%s at classes[%d]", c.Name, i)
			}
		}
		if c.DeprovisionPolicy != "" && !deprovisionPolicies[c.DeprovisionPolicy] {
			v.fail(path+".deprovisionPolicy", "%q must be Delete, Retain or Orphan", c.DeprovisionPolicy)
		}
	}
	for i, p := range cfg.Provisioners {
		if p.Class == nil || declared[p.Type] == nil || declared[p.Type][*p.Class] {
			continue
		}
		v.fail(fmt.Sprintf("provisioners[%d].class", i), "class %q is not among the classes of type %s (%s)", *p.Class, p.Type, strings.Join(sortedKeys(declared[p.Type]), ", "))
	}
}

func (v *validator) dependencies(cfg *Config) {
	switch cfg.Dependencies.DeployWhen {
	case "", DeployWhenClaimsReady, DeployWhenOutputsAvailable:
	default:
		v.fail("dependencies.deployWhen", "is %q; it must be %s or %s", cfg.Dependencies.DeployWhen, DeployWhenClaimsReady, DeployWhenOutputsAvailable)
	}
}

// hostnameDomain is a hostname rule's domain: a lower-case DNS name, optionally a wildcard
// ("*." first), whose labels may be "{namespace}".
var hostnameDomain = regexp.MustCompile(`^(\*\.)?(([a-z0-9]([-a-z0-9]*[a-z0-9])?|\{namespace\})\.)*([a-z0-9]([-a-z0-9]*[a-z0-9])?|\{namespace\})$`)

// hostnames checks the hostname rules (domains that are names or wildcards, selectors that
// select) and that every definition's hostnameParams names a param.
func (v *validator) hostnames(cfg *Config) {
	for i, r := range cfg.Hostnames {
		path := fmt.Sprintf("hostnames[%d]", i)
		if r.NamespaceSelector != nil {
			v.selector(path+".namespaceSelector", *r.NamespaceSelector)
		}
		if len(r.Domains) == 0 {
			v.fail(path+".domains", "a rule admits at least one domain")
		}
		for j, d := range r.Domains {
			if !hostnameDomain.MatchString(d) {
				v.fail(fmt.Sprintf("%s.domains[%d]", path, j), "%q must be a lower-case host name or a wildcard (*.example.com); {namespace} stands for the claim's namespace", d)
			}
		}
	}
	for i, p := range cfg.Provisioners {
		for j, param := range p.HostnameParams {
			if strings.TrimSpace(param) == "" {
				v.fail(fmt.Sprintf("provisioners[%d].hostnameParams[%d]", i, j), "must name a param")
			}
		}
		v.params(fmt.Sprintf("provisioners[%d].supported_params", i), p.SupportedParams)
	}
}

// params checks what a definition's supported params say of their values.
func (v *validator) params(path string, params []Param) {
	seen := map[string]bool{}
	for j, p := range params {
		at := fmt.Sprintf("%s[%d]", path, j)
		switch {
		case strings.TrimSpace(p.Name) == "":
			v.fail(at, "must name a param")
		case seen[p.Name]:
			v.fail(at, "param %q is listed twice", p.Name)
		}
		seen[p.Name] = true
		if _, ok := ParamTypes[p.Type]; p.Type != "" && !ok {
			v.fail(at+".type", "%q is not a param type (%s)", p.Type, strings.Join(slices.Sorted(maps.Keys(ParamTypes)), ", "))
		}
		if _, err := regexp.Compile(p.Pattern); err != nil {
			v.fail(at+".pattern", "does not compile: %v", err)
		}
		if p.MaxLength < 0 {
			v.fail(at+".maxLength", "must not be negative")
		}
	}
}

// namedVolumePattern is a volume name, or a pattern of one with "*" and "{namespace}".
var namedVolumePattern = regexp.MustCompile(`^([a-z0-9.*-]|\{namespace\})+$`)

// namedVolumes checks the rules of the volumes Workloads may mount by name.
func (v *validator) namedVolumes(cfg *Config) {
	for i, r := range cfg.NamedVolumes {
		path := fmt.Sprintf("namedVolumes[%d]", i)
		if r.NamespaceSelector != nil {
			v.selector(path+".namespaceSelector", *r.NamespaceSelector)
		}
		if len(r.Names) == 0 {
			v.fail(path+".names", "a rule admits at least one name")
		}
		for j, name := range r.Names {
			if !namedVolumePattern.MatchString(name) || len(name) > 253 {
				v.fail(fmt.Sprintf("%s.names[%d]", path, j), "%q must be a volume name, or a pattern of one where * stands for any run of characters and {namespace} for the Workload's namespace", name)
			}
		}
	}
}

func (v *validator) endpoint(cfg *Config) {
	if cfg.Endpoint.Template == "" {
		return
	}
	if _, err := template.New("endpoint").Option("missingkey=error").Parse(cfg.Endpoint.Template); err != nil {
		v.fail("endpoint.template", "template does not parse: %v", err)
	}
}

func isDNSLabel(s string) bool {
	return len(s) <= 63 && dnsLabel.MatchString(s)
}

func isDNSSubdomain(s string) bool {
	return len(s) <= 253 && dnsSubdomain.MatchString(s)
}

// QuantityRange is an inclusive range of Kubernetes quantities; a nil bound is open.
type QuantityRange struct {
	Min, Max *resource.Quantity
}

// Contains reports whether q lies in the range.
func (r QuantityRange) Contains(q resource.Quantity) bool {
	if r.Min != nil && q.Cmp(*r.Min) < 0 {
		return false
	}
	if r.Max != nil && q.Cmp(*r.Max) > 0 {
		return false
	}
	return true
}

// ParseQuantityRange parses "<q>", "<min>-<max>", "<min>-" and "-<max>".
func ParseQuantityRange(s string) (QuantityRange, error) {
	if q, err := resource.ParseQuantity(s); err == nil && !strings.HasPrefix(s, "-") {
		return QuantityRange{Min: &q, Max: &q}, nil
	}
	// The separator is a '-' with a quantity (or nothing) on each side; a quantity such as
	// 1e-3 contains a '-' itself, so try every position.
	for i := 0; i < len(s); i++ {
		if s[i] != '-' {
			continue
		}
		lo, hi := s[:i], s[i+1:]
		if lo == "" && hi == "" {
			break
		}
		var r QuantityRange
		if lo != "" {
			q, err := resource.ParseQuantity(lo)
			if err != nil {
				continue
			}
			r.Min = &q
		}
		if hi != "" {
			q, err := resource.ParseQuantity(hi)
			if err != nil {
				continue
			}
			r.Max = &q
		}
		if r.Min != nil && r.Max != nil && r.Min.Cmp(*r.Max) > 0 {
			return QuantityRange{}, fmt.Errorf("range %q has its minimum above its maximum", s)
		}
		return r, nil
	}
	return QuantityRange{}, fmt.Errorf("%q is not a quantity range: use \"<q>\", \"<min>-<max>\", \"<min>-\" or \"-<max>\" with Kubernetes quantities such as 500m or 2Gi", s)
}

func (v *validator) health(cfg *Config) {
	if len(cfg.Health) == 0 {
		return
	}
	env, err := HealthEnv()
	if err != nil {
		v.fail("health", "cannot build the health environment: %v", err)
		return
	}
	seen := map[string]int{}
	for i, r := range cfg.Health {
		path := fmt.Sprintf("health[%d]", i)
		if r.APIVersion == "" || r.Kind == "" {
			v.fail(path, "apiVersion and kind are required")
		}
		key := r.APIVersion + "/" + r.Kind
		if j, dup := seen[key]; dup {
			v.fail(path, "judges %s, as health[%d] already does", key, j)
		}
		seen[key] = i
		if strings.TrimSpace(r.Healthy) == "" {
			v.fail(path+".healthy", "an expression is required")
		} else if _, err := CompileHealthExpr(env, r.Healthy, cel.BoolType); err != nil {
			v.fail(path+".healthy", "%v", err)
		}
		if r.Failed != "" {
			if _, err := CompileHealthExpr(env, r.Failed, cel.BoolType); err != nil {
				v.fail(path+".failed", "%v", err)
			}
		}
		if r.Message != "" {
			if _, err := CompileHealthExpr(env, r.Message, cel.StringType); err != nil {
				v.fail(path+".message", "%v", err)
			}
		}
	}
}

// runnable checks the runnable block: required by runnable:// provisioners (with the run in
// manifests), refused by the others, every output a JSONPath that parses.
func (v *validator) runnable(path string, p Provisioner, isRunnable bool) {
	switch {
	case !isRunnable && p.Runnable != nil:
		v.fail(path+".runnable", "only runnable:// provisioners take a runnable block")
		return
	case !isRunnable:
		return
	case p.Runnable == nil:
		v.fail(path+".runnable", "a runnable:// provisioner needs a runnable block (successCondition, outputs, historyLimit)")
		return
	}
	if strings.TrimSpace(p.Manifests) == "" {
		v.fail(path+".manifests", "a runnable:// provisioner renders its run in manifests")
	}
	if p.Runnable.HistoryLimit < 0 {
		v.fail(path+".runnable.historyLimit", "must not be negative")
	}
	for key, jp := range p.Runnable.Outputs {
		if err := runnable.ParsePath(jp); err != nil {
			v.fail(path+".runnable.outputs."+key, "the JSONPath does not parse: %v", err)
		}
	}
}

// sharing checks a provisioner's cross-namespace sharing: a home namespace, a selector that
// admits some namespaces (an empty one would admit every namespace: say so with Exists),
// and a known answer for the others.
func (v *validator) sharing(path string, p Provisioner) {
	sh := p.Sharing
	if sh == nil {
		return
	}
	path += ".sharing"
	if errs := validation.IsDNS1123Label(sh.Namespace); len(errs) > 0 {
		v.fail(path+".namespace", "%q must be a namespace name: %s", sh.Namespace, strings.Join(errs, "; "))
	}
	if len(sh.NamespaceSelector.MatchLabels) == 0 && len(sh.NamespaceSelector.MatchExpressions) == 0 {
		v.fail(path+".namespaceSelector", "must select namespaces by labels (matchLabels or matchExpressions)")
	}
	if len(sh.NamespaceSelector.Namespaces) > 0 {
		v.fail(path+".namespaceSelector.namespaces", "select consumer namespaces by labels only")
	}
	v.selector(path+".namespaceSelector", sh.NamespaceSelector)
	if sh.Otherwise != "" && sh.Otherwise != SharingIsolate && sh.Otherwise != SharingDeny {
		v.fail(path+".otherwise", "%q must be Isolate or Deny", sh.Otherwise)
	}
	for i, id := range sh.IDs {
		if !resourceIDPattern.MatchString(id) || len(id) > 63 {
			v.fail(fmt.Sprintf("%s.ids[%d]", path, i), "%q must be dot-separated lower-case labels of letters, digits and '-'", id)
		}
	}
	if sh.MaxInstancesPerNamespace < 0 {
		v.fail(path+".maxInstancesPerNamespace", "must be 1 or more (or left out: no bound), found %d", sh.MaxInstancesPerNamespace)
	}
}

// platformSecretPattern is a Secret name, or a pattern of one with "*".
var platformSecretPattern = regexp.MustCompile(`^[a-z0-9.*-]{1,253}$`)

// platformSecrets checks the names and patterns of the Secrets a definition's references may
// name beyond the instance's own.
func (v *validator) platformSecrets(path string, p Provisioner) {
	for i, name := range p.PlatformSecrets {
		if !platformSecretPattern.MatchString(name) {
			v.fail(fmt.Sprintf("%s.platformSecrets[%d]", path, i), "%q must be a Secret name, or a pattern of one where * stands for any run of characters", name)
		}
	}
}

// helm checks a helm:// provisioner's chart block: required there and nowhere else, an
// immutable chart ref, templates that parse.
func (v *validator) helm(path string, p Provisioner, isHelm bool) {
	switch {
	case !isHelm && p.Helm != nil:
		v.fail(path+".helm", "only helm:// provisioners take a helm block")
		return
	case !isHelm:
		return
	case p.Helm == nil:
		v.fail(path+".helm", "a helm:// provisioner needs a helm block (chart, release, values)")
		return
	}
	path += ".helm"
	ref, err := ParseRef(p.Helm.Chart)
	switch {
	case err != nil:
		v.fail(path+".chart", "%v", err)
	case ref.Scheme == RefConfigMap && (ref.Key == "" || !digestPattern.MatchString(p.Helm.Digest)):
		v.fail(path+".chart", "a configmap chart names its key and is pinned by digest: sha256:<64 hex>")
	case ref.Scheme == RefOCI && ref.Digest == "":
		v.fail(path+".chart", "an oci chart is pinned by digest (@sha256:<hex>)")
	case ref.Scheme == RefOCI && p.Helm.Digest != "" && p.Helm.Digest != ref.Digest:
		v.fail(path+".digest", "does not match the chart ref's digest %s", ref.Digest)
	}
	if strings.TrimSpace(p.Helm.Release) == "" {
		v.fail(path+".release", "a release name template is required, e.g. {{ .Init.name }}")
	}
	v.parsesYAML(path+".release", "helm.release", p.Helm.Release)
	v.parsesYAML(path+".values", "helm.values", p.Helm.Values)
}

func (v *validator) rollout(p *RolloutPolicy) {
	if p == nil {
		return
	}
	for i, w := range p.Waves {
		if _, _, err := ParseWave(w); err != nil {
			v.fail(fmt.Sprintf("rollout.waves[%d]", i), "%v", err)
		}
	}
	v.timing("rollout", &p.RolloutTiming)
	if p.FailureBudget < 0 {
		v.fail("rollout.failureBudget", "%d is negative", p.FailureBudget)
	}
	if o := p.OrderBy; o != nil {
		if (o.Label == "") == (o.NamespaceLabel == "") {
			v.fail("rollout.orderBy", "names one of label (the Workload's) or namespaceLabel (its namespace's)")
		}
		for _, l := range []string{o.Label, o.NamespaceLabel} {
			if l != "" && len(validation.IsQualifiedName(l)) > 0 {
				v.fail("rollout.orderBy", "%q is not a label key", l)
			}
		}
		if len(o.Values) == 0 {
			v.fail("rollout.orderBy.values", "lists the label's values in the order their Workloads are reached")
		}
	}
	if p.Gate != "" {
		if _, err := CompileRolloutGate(p.Gate); err != nil {
			v.fail("rollout.gate", "%v", err)
		}
	}
}

// previews checks the preview policy: a count that is not negative, positive durations, a
// policy, and no team label.
func (v *validator) previews(p Previews) {
	if p.Max < 0 {
		v.fail("previews.max", "%d must be 1 or more (0: the default, %d)", p.Max, DefaultPreviewMax)
	}
	for field, d := range map[string]string{"defaultTTL": p.DefaultTTL, "maxTTL": p.MaxTTL} {
		if d == "" {
			continue
		}
		if dur, err := time.ParseDuration(d); err != nil || dur <= 0 {
			v.fail("previews."+field, "%q must be a positive duration such as 24h", d)
		}
	}
	if p.DeprovisionPolicy != "" && !deprovisionPolicies[p.DeprovisionPolicy] {
		v.fail("previews.deprovisionPolicy", "%q must be Delete, Retain or Orphan", p.DeprovisionPolicy)
	}
	if p.TeamLabel != "" {
		v.fail("previews.teamLabel", "%q: previews are counted by their maker; a team label on a preview namespace is its maker's word, so counting by it let anyone fill another team's limit. Remove the field", p.TeamLabel)
	}
}

// timing checks a rollout's durations.
func (v *validator) timing(path string, t *RolloutTiming) {
	if t == nil {
		return
	}
	for field, d := range map[string]string{"bakeTime": t.BakeTime, "progressDeadline": t.ProgressDeadline} {
		if d == "" {
			continue
		}
		if dur, err := time.ParseDuration(d); err != nil || dur < 0 {
			v.fail(path+"."+field, "%q is not a duration such as 30s or 5m", d)
		}
	}
}

// ParseWave reads a wave size: a count of Workloads ("1") or a share of them ("10%").
func ParseWave(s string) (count int, percent int, err error) {
	if rest, ok := strings.CutSuffix(s, "%"); ok {
		p, err := strconv.Atoi(rest)
		if err != nil || p < 1 || p > 100 {
			return 0, 0, fmt.Errorf("%q must be a share from 1%% to 100%%", s)
		}
		return 0, p, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, 0, fmt.Errorf("%q must be a count of Workloads (1, 5) or a share (10%%)", s)
	}
	return n, 0, nil
}
