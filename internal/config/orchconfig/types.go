// Package orchconfig defines the Orchestrator Config document, its strict parser and its
// whole-document validator. It is pure: no API client, no clock, no file system.
package orchconfig

import (
	"path"
	"slices"
	"strings"
	"time"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/podrules"
)

// APIVersion and Kind identify an Orchestrator Config document.
const (
	APIVersion = "score.dev/v1b1"
	Kind       = "OrchestratorConfig"
)

// Config is the platform's one Orchestrator Config document: abstract profiles mapped to
// runtime backends, the provisioners that realise dependencies, and defaults.
type Config struct {
	APIVersion string `json:"apiVersion" yaml:"apiVersion"`
	Kind       string `json:"kind" yaml:"kind"`

	// AllowMutableRefs permits template refs without a digest. For development only: a
	// mutable ref makes rendering depend on when it was fetched.
	AllowMutableRefs bool `json:"allowMutableRefs,omitempty" yaml:"allowMutableRefs,omitempty"`

	// Profiles are the abstract profiles, each with its backend candidates.
	Profiles []Profile `json:"profiles" yaml:"profiles"`

	// ProfileRules derive a profile from the Workload when it carries no hint. They are
	// evaluated in order; the first whose expression is true wins.
	ProfileRules []ProfileRule `json:"profileRules,omitempty" yaml:"profileRules,omitempty"`

	// Defaults choose a profile when neither a hint nor a rule did.
	Defaults Defaults `json:"defaults,omitempty" yaml:"defaults,omitempty"`

	// Provisioners realise dependencies; entries use the score-k8s provisioner file format.
	Provisioners []Provisioner `json:"provisioners,omitempty" yaml:"provisioners,omitempty"`

	// Classes are the named variants of resource types the platform offers, with default
	// params; a claim of a type with a default class and no class of its own gets it.
	Classes []Class `json:"classes,omitempty" yaml:"classes,omitempty"`

	// Endpoint is the endpoint mirror policy.
	Endpoint EndpointPolicy `json:"endpoint,omitempty" yaml:"endpoint,omitempty"`

	// AllowedKinds are the kinds templates and provisioners may create, as Kind or
	// Kind.group (Deployment.apps, Service). Empty means DefaultAllowedKinds. Cluster-scoped
	// kinds (Namespace, ClusterRole...) are created only when listed here.
	AllowedKinds []string `json:"allowedKinds,omitempty" yaml:"allowedKinds,omitempty"`

	// Health judges kinds kstatus cannot (custom resources without standard conditions):
	// CEL expressions per kind, over the object the runtime or provisioner applied.
	Health []HealthRule `json:"health,omitempty" yaml:"health,omitempty"`

	// Dependencies say when a Workload is deployed relative to its dependencies.
	Dependencies DependencyPolicy `json:"dependencies,omitempty" yaml:"dependencies,omitempty"`

	// Rollout takes each change of this config to the fleet in health-gated waves; without
	// it a change reaches every Workload at once.
	Rollout *RolloutPolicy `json:"rollout,omitempty" yaml:"rollout,omitempty"`

	// Hostnames are the host names each namespace's Workloads may claim through a param a
	// provisioner definition marks as a host name (hostnameParams: the catalog route's host).
	// A host name is allowed when a rule that selects the claim's namespace lists a domain it
	// matches. With no rules, any host name is allowed: set them when teams share a Gateway.
	Hostnames []HostnameRule `json:"hostnames,omitempty" yaml:"hostnames,omitempty"`

	// Previews is the platform's policy for preview environments (scorectl preview): how
	// many may run at once, how long they live, what happens to their dependencies.
	Previews Previews `json:"previews,omitempty" yaml:"previews,omitempty"`

	// ProbeHosts selects the namespaces whose Workloads' probes may name a host
	// (httpGet.host): the kubelet sends such a probe to that host, from the node. Absent, no
	// namespace's may: the Workload is SpecInvalid, and a template that adds one is refused
	// by the pod rules.
	ProbeHosts *Selector `json:"probeHosts,omitempty" yaml:"probeHosts,omitempty"`

	// NamedVolumes are the volumes each namespace's Workloads may mount by name (a volume
	// source that is a plain name, not a ${resources.<name>} reference): a name is allowed
	// when a rule that selects the Workload's namespace lists a pattern it matches. With no
	// rules no name is allowed: a Workload mounts the volumes of its own dependencies only.
	NamedVolumes []NamedVolumeRule `json:"namedVolumes,omitempty" yaml:"namedVolumes,omitempty"`
}

// ProbeHostsAllowed reports whether the Workloads of a namespace (with its labels) may have
// probes that name a host.
func (c *Config) ProbeHostsAllowed(namespace string, labels map[string]string) bool {
	s := c.ProbeHosts
	if s == nil {
		return false
	}
	if len(s.Namespaces) > 0 && !slices.Contains(s.Namespaces, namespace) {
		return false
	}
	return s.MatchesLabels(labels)
}

// Pods is what the pods of a backend's templates or of a definition's objects may do beyond
// the pod rules (internal/config/podrules, docs/security.md).
type Pods struct {
	// ServiceAccountName is the ServiceAccount the pods may run as (the runtime's pods run
	// as it); absent, the namespace's default only.
	ServiceAccountName string `json:"serviceAccountName,omitempty" yaml:"serviceAccountName,omitempty"`
	// ServiceAccountToken mounts the ServiceAccount's token in the runtime's pods (backends
	// only); without it they carry automountServiceAccountToken: false.
	ServiceAccountToken bool `json:"serviceAccountToken,omitempty" yaml:"serviceAccountToken,omitempty"`
	// Allow names the pod rules the pods may break (podrules.Names: hostNamespaces,
	// privileged, capabilities, hostPath, hostPorts, appArmor, seLinux, procMount, seccomp,
	// sysctls, windowsHostProcess, probeHosts).
	Allow []string `json:"allow,omitempty" yaml:"allow,omitempty"`
}

// Policy is the pod rules' policy of p; a nil p allows nothing beyond the rules.
func (p *Pods) Policy() podrules.Policy {
	if p == nil {
		return podrules.Policy{}
	}
	return podrules.Policy{ServiceAccountName: p.ServiceAccountName, Allow: p.Allow}
}

// NamedVolumeRule admits volumes by name for the namespaces it selects.
type NamedVolumeRule struct {
	// NamespaceSelector selects namespaces by their labels, or by name with namespaces;
	// absent, the rule selects every namespace.
	NamespaceSelector *Selector `json:"namespaceSelector,omitempty" yaml:"namespaceSelector,omitempty"`
	// Names are volume names, where "*" stands for any run of characters and "{namespace}"
	// for the Workload's namespace ("{namespace}-cache", "reports-*").
	Names []string `json:"names" yaml:"names"`
}

// NamedVolumeAllowed says whether a Workload in namespace (with labels) may mount the volume
// name by name, and, when not, the names the namespace may mount (none when no rule selects
// it).
func (c *Config) NamedVolumeAllowed(namespace string, labels map[string]string, name string) (bool, []string) {
	var names []string
	for _, r := range c.NamedVolumes {
		if sel := r.NamespaceSelector; sel != nil {
			if len(sel.Namespaces) > 0 && !slices.Contains(sel.Namespaces, namespace) {
				continue
			}
			if !sel.MatchesLabels(labels) {
				continue
			}
		}
		for _, pattern := range r.Names {
			pattern = strings.ReplaceAll(pattern, HostnameNamespace, namespace)
			if ok, _ := path.Match(pattern, name); ok {
				return true, nil
			}
			names = append(names, pattern)
		}
	}
	return false, names
}

// Previews is the policy for preview environments: namespaces scorectl preview up creates,
// labelled score.dev/preview, which the control plane deletes when they expire.
type Previews struct {
	// Disabled refuses every preview: the Workloads of a preview namespace get
	// PolicyViolation and nothing is provisioned for them.
	Disabled bool `json:"disabled,omitempty" yaml:"disabled,omitempty"`
	// Max is how many previews of one maker (the user who created them, as the admission
	// policy score-preview-makers records them) may exist at once: the oldest are admitted,
	// the Workloads of a newer one get PolicyViolation until an older one is deleted.
	// Default 5.
	Max int `json:"max,omitempty" yaml:"max,omitempty"`
	// TeamLabel is refused: it would count previews by a namespace label their maker writes, so
	// that anyone could fill another team's limit. Previews count by maker.
	TeamLabel string `json:"teamLabel,omitempty" yaml:"teamLabel,omitempty"`
	// DefaultTTL is how long a preview lives when it names no expiry (default 24h); MaxTTL
	// is the longest any lives, counted from its creation (default 168h).
	DefaultTTL string `json:"defaultTTL,omitempty" yaml:"defaultTTL,omitempty"`
	MaxTTL     string `json:"maxTTL,omitempty" yaml:"maxTTL,omitempty"`
	// DeprovisionPolicy is the policy of every claim in a preview, whatever the resource,
	// class or provisioner says: Delete (the default), so that a preview leaves nothing
	// behind; Retain or Orphan when the platform keeps what previews provision.
	DeprovisionPolicy string `json:"deprovisionPolicy,omitempty" yaml:"deprovisionPolicy,omitempty"`
}

// The defaults of Previews.
const (
	DefaultPreviewMax         = 5
	DefaultPreviewTTL         = 24 * time.Hour
	DefaultPreviewMaxTTL      = 7 * 24 * time.Hour
	DefaultPreviewDeprovision = "Delete"
)

// Limits returns the policy's count, default and longest lifetime and claims' policy,
// defaults applied. The policy validated.
func (p Previews) Limits() (maxCount int, ttl, maxTTL time.Duration, policy string) {
	maxCount, ttl, maxTTL, policy = DefaultPreviewMax, DefaultPreviewTTL, DefaultPreviewMaxTTL, DefaultPreviewDeprovision
	if p.Max > 0 {
		maxCount = p.Max
	}
	if d, err := time.ParseDuration(p.DefaultTTL); err == nil && d > 0 {
		ttl = d
	}
	if d, err := time.ParseDuration(p.MaxTTL); err == nil && d > 0 {
		maxTTL = d
	}
	if p.DeprovisionPolicy != "" {
		policy = p.DeprovisionPolicy
	}
	return maxCount, min(ttl, maxTTL), maxTTL, policy
}

// HostnameRule admits host names for the namespaces it selects.
type HostnameRule struct {
	// NamespaceSelector selects namespaces by their labels, or by name with namespaces;
	// absent, the rule selects every namespace (with "{namespace}" in its domains, each its
	// own).
	NamespaceSelector *Selector `json:"namespaceSelector,omitempty" yaml:"namespaceSelector,omitempty"`
	// Domains are host names ("shop.example.com") and wildcards ("*.shop.example.com": any
	// name under it, not the name itself); "{namespace}" in one stands for the claim's
	// namespace ("*.{namespace}.apps.example.com").
	Domains []string `json:"domains" yaml:"domains"`
}

// HostnameAllowed says whether a claim in namespace (with labels) may use host, and, when
// not, the domains the namespace may use (none when no rule selects it). Without rules every
// host name is allowed.
func (c *Config) HostnameAllowed(namespace string, labels map[string]string, host string) (bool, []string) {
	if len(c.Hostnames) == 0 {
		return true, nil
	}
	var domains []string
	for _, r := range c.Hostnames {
		if sel := r.NamespaceSelector; sel != nil {
			if len(sel.Namespaces) > 0 && !slices.Contains(sel.Namespaces, namespace) {
				continue
			}
			if !sel.MatchesLabels(labels) {
				continue
			}
		}
		for _, d := range r.Domains {
			d = strings.ReplaceAll(d, HostnameNamespace, namespace)
			if domainMatches(d, host) {
				return true, nil
			}
			domains = append(domains, d)
		}
	}
	return false, domains
}

// HostnameNamespace stands for the claim's namespace in a hostname rule's domain.
const HostnameNamespace = "{namespace}"

// domainMatches reports whether host is the domain d, or under it when d is a wildcard.
func domainMatches(d, host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if suffix, ok := strings.CutPrefix(d, "*."); ok {
		return strings.HasSuffix(host, "."+suffix) && len(host) > len(suffix)+1
	}
	return host == d
}

// RolloutPolicy is how a config change reaches the fleet: the Workloads it renders or
// provisions differently, in waves, each held for a bake time and gated on health.
type RolloutPolicy struct {
	// Waves are cumulative sizes: a count ("1") or a share of the affected Workloads
	// ("10%"); the last takes every one that is left. Default ["1", "10%", "50%", "100%"].
	Waves []string `json:"waves,omitempty" yaml:"waves,omitempty"`
	// OrderBy puts the affected Workloads in waves by a label's value (an environment:
	// dev before staging before prod) before the stable order within each value.
	OrderBy *RolloutOrder `json:"orderBy,omitempty" yaml:"orderBy,omitempty"`
	// BakeTime and ProgressDeadline; a backend or a provisioner definition may lengthen them
	// for the Workloads it serves.
	RolloutTiming `json:",inline" yaml:",inline"`
	// FailureBudget is how many Workloads may fail the gate before the rollout halts and
	// pins them back (default 0).
	FailureBudget int `json:"failureBudget,omitempty" yaml:"failureBudget,omitempty"`
	// Gate is a CEL expression a Workload must also satisfy to count as healthy: over
	// objects, the applied objects of its plan with their health (kind, name, namespace,
	// cluster, health, message), and workload (name, namespace, labels).
	Gate string `json:"gate,omitempty" yaml:"gate,omitempty"`
}

// RolloutTiming is how long a rollout watches a Workload: globally, or for the Workloads a
// backend or a provisioner definition serves.
type RolloutTiming struct {
	// BakeTime is how long every Workload of a wave must have been Ready before the next
	// wave starts (a Go duration, default 1m).
	BakeTime string `json:"bakeTime,omitempty" yaml:"bakeTime,omitempty"`
	// ProgressDeadline is how long after its wave started a Workload may take to be rendered
	// from the new revision and Ready before it counts as failed (a Go duration, default 5m).
	ProgressDeadline string `json:"progressDeadline,omitempty" yaml:"progressDeadline,omitempty"`
}

// RolloutOrder orders the waves by a label of the Workload or of its namespace.
type RolloutOrder struct {
	// Label is a label of the Workload; NamespaceLabel one of its namespace. One of the two.
	Label          string `json:"label,omitempty" yaml:"label,omitempty"`
	NamespaceLabel string `json:"namespaceLabel,omitempty" yaml:"namespaceLabel,omitempty"`
	// Values are the label's values, first to last; Workloads with another value or none
	// come after the last.
	Values []string `json:"values" yaml:"values"`
}

// DefaultWaves are the waves of a policy that names none.
var DefaultWaves = []string{"1", "10%", "50%", "100%"}

// Durations returns the policy's bake time and progress deadline, defaults applied. The
// policy validated.
func (p RolloutPolicy) Durations() (bake, deadline time.Duration) {
	return p.For()
}

// For returns the bake time and progress deadline of a Workload the overrides apply to
// (its backend's, its provisioner definitions'): the longest of the policy's and theirs.
func (p RolloutPolicy) For(overrides ...*RolloutTiming) (bake, deadline time.Duration) {
	bake, deadline = time.Minute, 5*time.Minute
	if d, err := time.ParseDuration(p.BakeTime); err == nil {
		bake = d
	}
	if d, err := time.ParseDuration(p.ProgressDeadline); err == nil {
		deadline = d
	}
	for _, o := range overrides {
		if o == nil {
			continue
		}
		if d, err := time.ParseDuration(o.BakeTime); err == nil {
			bake = max(bake, d)
		}
		if d, err := time.ParseDuration(o.ProgressDeadline); err == nil {
			deadline = max(deadline, d)
		}
	}
	return bake, deadline
}

// WaveSizes returns the policy's waves, the default when it names none.
func (p RolloutPolicy) WaveSizes() []string {
	if len(p.Waves) == 0 {
		return DefaultWaves
	}
	return p.Waves
}

// DeployWhen is when a Workload's plan is emitted relative to its dependencies.
type DeployWhen string

const (
	// DeployWhenClaimsReady emits the plan once every dependency is Bound (healthy): the order
	// of workload-lifecycle.md's Phase 3. The default.
	DeployWhenClaimsReady DeployWhen = "ClaimsReady"
	// DeployWhenOutputsAvailable emits it once every dependency has published its outputs (host
	// names, generated credentials), so the application rolls out while its dependencies
	// become healthy; Ready still waits for both. It pays where an application's own start is
	// the long pole and the cluster has room; on a cluster bound by its API server it makes the
	// dependencies, and so Ready, later (docs/performance.md).
	DeployWhenOutputsAvailable DeployWhen = "OutputsAvailable"
)

// DependencyPolicy is the dependencies section.
type DependencyPolicy struct {
	// DeployWhen is ClaimsReady (default) or OutputsAvailable.
	DeployWhen DeployWhen `json:"deployWhen,omitempty" yaml:"deployWhen,omitempty"`
}

// WaitsForHealthyDependencies reports whether plans wait until every dependency is Bound.
func (p DependencyPolicy) WaitsForHealthyDependencies() bool {
	return p.DeployWhen != DeployWhenOutputsAvailable
}

// HealthRule judges the objects of one kind with CEL expressions over `self`, the object as
// the API server has it (a map). Kinds without a rule are judged by kstatus.
type HealthRule struct {
	APIVersion string `json:"apiVersion" yaml:"apiVersion"`
	Kind       string `json:"kind" yaml:"kind"`
	// Healthy is true when the object is ready for use.
	Healthy string `json:"healthy" yaml:"healthy"`
	// Failed, optional, is true when the object failed and will not recover by waiting.
	Failed string `json:"failed,omitempty" yaml:"failed,omitempty"`
	// Message, optional, is a string expression describing the object's state.
	Message string `json:"message,omitempty" yaml:"message,omitempty"`
}

// Profile is an abstract profile (web-service, batch-job, ...) and its backend candidates.
type Profile struct {
	Name        string    `json:"name" yaml:"name"`
	Description string    `json:"description,omitempty" yaml:"description,omitempty"`
	Backends    []Backend `json:"backends" yaml:"backends"`
}

// Backend is one way to run a profile: a runtime class and an immutable template.
type Backend struct {
	BackendID    string      `json:"backendId" yaml:"backendId"`
	RuntimeClass string      `json:"runtimeClass" yaml:"runtimeClass"`
	Template     Template    `json:"template" yaml:"template"`
	Priority     int         `json:"priority,omitempty" yaml:"priority,omitempty"`
	Version      string      `json:"version" yaml:"version"`
	Constraints  Constraints `json:"constraints,omitempty" yaml:"constraints,omitempty"`
	// Placement places the backend's Workloads on registered member clusters; none runs
	// them on the hub, the cluster the controllers run in.
	Placement *Placement `json:"placement,omitempty" yaml:"placement,omitempty"`
	// Rollout lengthens the rollout policy's bake time and progress deadline for the
	// Workloads this backend renders.
	Rollout *RolloutTiming `json:"rollout,omitempty" yaml:"rollout,omitempty"`
	// Kinds, when set, are the only kinds the backend's template may create, as allowedKinds
	// lists them (Kind or Kind.group), each also in allowedKinds.
	Kinds []string `json:"kinds,omitempty" yaml:"kinds,omitempty"`
	// Pods is what the backend's pods may do beyond the pod rules: the ServiceAccount they
	// run as, its token, the rules they may break.
	Pods *Pods `json:"pods,omitempty" yaml:"pods,omitempty"`
}

// Placement chooses the one member cluster each of a backend's Workloads runs on.
type Placement struct {
	// ClusterSelector matches the registered clusters' labels (matchLabels and
	// matchExpressions, ANDed); namespaces is not used here.
	ClusterSelector Selector `json:"clusterSelector" yaml:"clusterSelector"`
	// Policy chooses among the matching clusters: Spread (the default) or Ordered.
	Policy string `json:"policy,omitempty" yaml:"policy,omitempty"`
	// Overrides are values per cluster: each matching override's values are merged over the
	// template's values for the copies placed on the clusters its selector matches.
	Overrides []Override `json:"overrides,omitempty" yaml:"overrides,omitempty"`
	// Failover places a Workload again on another matching cluster when its cluster has not
	// answered for a while (failover.go); nil: never, the Workload waits for its cluster.
	Failover *Failover `json:"failover,omitempty" yaml:"failover,omitempty"`
	// Clusters is how many matching clusters each Workload runs on: a number (1, the
	// default, is one cluster) or All, every matching cluster (Copies).
	Clusters string `json:"clusters,omitempty" yaml:"clusters,omitempty"`
}

// Override is values for the copies of a backend's Workloads placed on some clusters (a
// regional registry mirror, a storage class, a replica count): part of the backend's
// defaults there, so the Workload and its dependencies' outputs still win over it.
type Override struct {
	// ClusterSelector matches the labels of the cluster a copy is placed on, as the
	// placement's clusterSelector does.
	ClusterSelector Selector `json:"clusterSelector" yaml:"clusterSelector"`
	// Values are merged over the template's values (maps key by key, anything else replaced).
	Values map[string]any `json:"values" yaml:"values"`
}

// OverridesFor are the values of the overrides whose selector matches the labels of the
// member cluster a copy is placed on, in list order: a later one wins where they overlap.
// A copy on the hub (placed false) gets none: the hub is not a placement candidate and has
// no labels, so no selector speaks of it.
func (p *Placement) OverridesFor(labels map[string]string, placed bool) []map[string]any {
	if !placed {
		return nil
	}
	var out []map[string]any
	for _, i := range p.Matching(labels) {
		out = append(out, p.Overrides[i].Values)
	}
	return out
}

// Matching are the indexes of the overrides whose selector matches a member cluster's labels,
// in list order.
func (p *Placement) Matching(labels map[string]string) []int {
	if p == nil {
		return nil
	}
	var out []int
	for i, o := range p.Overrides {
		if o.ClusterSelector.MatchesLabels(labels) {
			out = append(out, i)
		}
	}
	return out
}

// The placement policies.
const (
	// PlacementSpread spreads Workloads over the matching clusters by rendezvous hashing of
	// the Workload's namespace and name: stable, and a new cluster takes only its share.
	PlacementSpread = "Spread"
	// PlacementOrdered places every Workload on the first matching cluster by name.
	PlacementOrdered = "Ordered"
)

// Template references a backend template by an immutable ref, with default values.
type Template struct {
	// Kind is manifests, helm or kustomize; compose for a docker backend (no ref).
	Kind string `json:"kind" yaml:"kind"`
	// Ref is oci://<registry>/<repository>@sha256:<hex> or configmap://<namespace>/<name>[/<key>].
	Ref string `json:"ref" yaml:"ref"`
	// Digest is "sha256:<hex>" of the content; required for configmap refs, and must agree
	// with an OCI ref's digest when both are given.
	Digest string `json:"digest,omitempty" yaml:"digest,omitempty"`
	// Values are the backend's defaults, the left-most operand of value composition.
	Values map[string]any `json:"values,omitempty" yaml:"values,omitempty"`
}

// Constraints filter backend candidates.
type Constraints struct {
	// Selectors match Workload labels (and optionally namespaces); any selector matching
	// admits the backend. No selectors admit every Workload.
	Selectors []Selector `json:"selectors,omitempty" yaml:"selectors,omitempty"`
	// Features this backend offers; a Workload's score.dev/requirements must be a subset.
	Features []string `json:"features,omitempty" yaml:"features,omitempty"`
	// Regions this backend runs in; when set, the orchestrator's region must be one of them.
	Regions []string `json:"regions,omitempty" yaml:"regions,omitempty"`
	// Resources bound the Workload's total container requests this backend accepts.
	Resources ResourceRanges `json:"resources,omitempty" yaml:"resources,omitempty"`
}

// ResourceRanges are ranges of Kubernetes quantities: "<q>" (exactly), "<min>-<max>",
// "<min>-" (at least) or "-<max>" (at most).
type ResourceRanges struct {
	CPU    string `json:"cpu,omitempty" yaml:"cpu,omitempty"`
	Memory string `json:"memory,omitempty" yaml:"memory,omitempty"`
}

// Selector matches Workload labels; matchLabels and matchExpressions are ANDed.
type Selector struct {
	MatchLabels      map[string]string     `json:"matchLabels,omitempty" yaml:"matchLabels,omitempty"`
	MatchExpressions []SelectorRequirement `json:"matchExpressions,omitempty" yaml:"matchExpressions,omitempty"`
	// Namespaces, when set, restrict the selector to Workloads in these namespaces.
	Namespaces []string `json:"namespaces,omitempty" yaml:"namespaces,omitempty"`
}

// SelectorRequirement is a label selector requirement (In, NotIn, Exists, DoesNotExist).
type SelectorRequirement struct {
	Key      string   `json:"key" yaml:"key"`
	Operator string   `json:"operator" yaml:"operator"`
	Values   []string `json:"values,omitempty" yaml:"values,omitempty"`
}

// ProfileRule derives a profile from the Workload with a CEL expression over `workload`
// (metadata.name, metadata.namespace, metadata.labels, metadata.annotations and spec).
type ProfileRule struct {
	Profile     string `json:"profile" yaml:"profile"`
	When        string `json:"when" yaml:"when"`
	Description string `json:"description,omitempty" yaml:"description,omitempty"`
}

// Defaults pick a profile by Workload labels, then fall back to one profile.
type Defaults struct {
	Profile   string            `json:"profile,omitempty" yaml:"profile,omitempty"`
	Selectors []ProfileSelector `json:"selectors,omitempty" yaml:"selectors,omitempty"`
}

// ProfileSelector picks Profile for Workloads whose labels match.
type ProfileSelector struct {
	Profile  string `json:"profile" yaml:"profile"`
	Selector `json:",inline" yaml:",inline"`
}

// Provisioner is a score-k8s provisioner definition, accepted unchanged, plus the
// orchestrator's additions (params routing and a default deprovision policy).
type Provisioner struct {
	// URI identifies the provisioner; its scheme is how it runs: template://, cmd://.
	URI         string  `json:"uri" yaml:"uri"`
	Type        string  `json:"type" yaml:"type"`
	Class       *string `json:"class,omitempty" yaml:"class,omitempty"`
	ID          *string `json:"id,omitempty" yaml:"id,omitempty"`
	Description string  `json:"description,omitempty" yaml:"description,omitempty"`

	// Go templates (with sprig) of the template:// strategy.
	Init      string `json:"init,omitempty" yaml:"init,omitempty"`
	State     string `json:"state,omitempty" yaml:"state,omitempty"`
	Shared    string `json:"shared,omitempty" yaml:"shared,omitempty"`
	Outputs   string `json:"outputs,omitempty" yaml:"outputs,omitempty"`
	Manifests string `json:"manifests,omitempty" yaml:"manifests,omitempty"`

	// Compose templates of the template:// strategy, in score-compose's provisioner file
	// format: the services, volumes and networks a Compose file holds, and the files its
	// services bind from .MountsDirectory. A definition with any of them serves claims of
	// runtimeClass docker only; the Docker agent serving the claim's namespace runs them
	// (internal/rendering/compose.Fragment says what of Compose it runs).
	Services string `json:"services,omitempty" yaml:"services,omitempty"`
	Volumes  string `json:"volumes,omitempty" yaml:"volumes,omitempty"`
	Networks string `json:"networks,omitempty" yaml:"networks,omitempty"`
	Files    string `json:"files,omitempty" yaml:"files,omitempty"`
	// InfoLogs are score-compose's hints for a developer's terminal. They are accepted and
	// never rendered: they print credentials, and a control plane has no terminal.
	InfoLogs string `json:"info_logs,omitempty" yaml:"info_logs,omitempty"`

	// Args of the cmd:// strategy.
	Args []string `json:"args,omitempty" yaml:"args,omitempty"`

	// SupportedParams are the params the definition takes; each may say what its value must
	// be (Param), checked before the definition renders.
	SupportedParams []Param  `json:"supported_params,omitempty" yaml:"supported_params,omitempty"`
	ExpectedOutputs []string `json:"expected_outputs,omitempty" yaml:"expected_outputs,omitempty"`

	// API configures the http+api:// strategy (an external HTTP API); only that strategy
	// takes it. Its outputs come from the outputs template.
	API *API `json:"api,omitempty" yaml:"api,omitempty"`

	// MatchParams routes on the claim's params: an exact match beats a subset match beats a
	// provisioner without MatchParams.
	MatchParams map[string]any `json:"matchParams,omitempty" yaml:"matchParams,omitempty"`
	// DeprovisionPolicy is the default policy of claims this provisioner serves.
	DeprovisionPolicy string `json:"deprovisionPolicy,omitempty" yaml:"deprovisionPolicy,omitempty"`

	// Runnable configures the runnable:// strategy: manifests render one immutable run (a
	// Job by default), stamped anew for every change of its inputs.
	Runnable *Runnable `json:"runnable,omitempty" yaml:"runnable,omitempty"`

	// Helm configures the helm:// strategy: a chart, pinned by digest, rendered with values
	// from a template and applied with the manifests.
	Helm *HelmChart `json:"helm,omitempty" yaml:"helm,omitempty"`

	// Sharing lets claims with the same id from several namespaces share one instance.
	// Without it, an id is shared within a namespace only.
	Sharing *Sharing `json:"sharing,omitempty" yaml:"sharing,omitempty"`

	// Location is where the instance's objects are provisioned when its Workload is placed on
	// a member cluster: Workload (the default), next to its consumer on that cluster, or Hub,
	// on the control plane's cluster (a dependency created through a hub-side API, say), its
	// outputs Secret still copied to the member.
	Location string `json:"location,omitempty" yaml:"location,omitempty"`

	// Rollout lengthens the rollout policy's bake time and progress deadline for the
	// Workloads whose claims this definition serves.
	Rollout *RolloutTiming `json:"rollout,omitempty" yaml:"rollout,omitempty"`

	// HostnameParams are the params that hold a host name the instance claims on a shared
	// entry point (a route's host): each is checked against the config's hostnames rules for
	// the claim's namespace before anything is provisioned.
	HostnameParams []string `json:"hostnameParams,omitempty" yaml:"hostnameParams,omitempty"`

	// Kinds, when set, are the only kinds the definition's manifests (and chart) may create,
	// as allowedKinds lists them (Kind or Kind.group), each also in allowedKinds.
	Kinds []string `json:"kinds,omitempty" yaml:"kinds,omitempty"`
	// Pods is what the pods of the definition's objects may do beyond the pod rules: the
	// ServiceAccount they may run as, the rules they may break.
	Pods *Pods `json:"pods,omitempty" yaml:"pods,omitempty"`

	// PlatformSecrets are the Secrets of the instance's namespace, by name ("*" stands for any
	// run of characters), that the definition's secret references (encodeSecretRef) may name
	// beyond the instance's own: the platform's, which the definition hands out (the catalog's
	// environment type). A Secret the run's manifests create, or that carries the instance's
	// label, or whose owner is one of the instance's objects, needs no entry.
	PlatformSecrets []string `json:"platformSecrets,omitempty" yaml:"platformSecrets,omitempty"`
}

// EmitsCompose reports whether the definition runs Compose services, volumes or files on a
// Docker host.
func (p Provisioner) EmitsCompose() bool {
	return p.Services != "" || p.Volumes != "" || p.Networks != "" || p.Files != ""
}

// ReadsLocalEnv reports whether the definition is score-compose's local-env://, which
// serves no claim (LocalEnvScheme).
func (p Provisioner) ReadsLocalEnv() bool { return strings.HasPrefix(p.URI, LocalEnvScheme+"://") }

// ServesRuntime reports whether the definition can realise a claim whose Workload runs on
// the runtime class ("" is kubernetes): Compose services only on a Docker host (where they are
// preferred: provisionermatch.Match), any other definition anywhere, its objects on the hub's
// cluster for a Docker Workload.
func (p Provisioner) ServesRuntime(class string) bool {
	switch {
	case p.ReadsLocalEnv():
		return false
	case p.EmitsCompose():
		return class == scorev1b1.RuntimeClassDocker
	}
	return true
}

// MayReferToPlatformSecret reports whether the definition lists the Secret name in
// PlatformSecrets.
func (p Provisioner) MayReferToPlatformSecret(name string) bool {
	for _, pattern := range p.PlatformSecrets {
		if ok, _ := path.Match(pattern, name); ok {
			return true
		}
	}
	return false
}

// The locations of a provisioner's instances.
const (
	LocationWorkload = "Workload"
	LocationHub      = "Hub"
)

// OnHub reports whether the definition's instances stay on the hub wherever their Workload
// runs.
func (p Provisioner) OnHub() bool { return p.Location == LocationHub }

// Sharing is the platform's permission for claims from other namespaces to share an
// instance: the instance lives in Namespace, and claims with an id from namespaces whose
// labels match NamespaceSelector share it; each consumer gets the secret outputs in its own
// namespace only, in its claim's outputs Secret.
type Sharing struct {
	// Namespace holds the shared instances (their objects and state).
	Namespace string `json:"namespace" yaml:"namespace"`
	// NamespaceSelector admits consumer namespaces by their labels.
	NamespaceSelector Selector `json:"namespaceSelector" yaml:"namespaceSelector"`
	// Otherwise is what a claim with an id from any other namespace gets: Isolate (its own
	// instance in its namespace, the default) or Deny (PermissionDenied).
	Otherwise string `json:"otherwise,omitempty" yaml:"otherwise,omitempty"`
	// IDs, when set, are the only ids consumers share: a claim from another namespace with
	// any other id is not admitted, and gets what Otherwise says.
	IDs []string `json:"ids,omitempty" yaml:"ids,omitempty"`
	// MaxInstancesPerNamespace bounds the instances a consumer namespace's claims hold in the
	// sharing namespace (each distinct id one, created or joined): a claim that would make it
	// hold one more is refused (PolicyViolation) before anything is provisioned. 0: no bound.
	MaxInstancesPerNamespace int `json:"maxInstancesPerNamespace,omitempty" yaml:"maxInstancesPerNamespace,omitempty"`
	// AllowPolicyOverride lets a consumer's claim name a deprovision policy other than the
	// platform's for the instance (its class's, else the definition's): without it such a
	// claim is refused (PermissionDenied), so that no consumer deletes an instance the
	// platform retains, or keeps one it deletes.
	AllowPolicyOverride bool `json:"allowPolicyOverride,omitempty" yaml:"allowPolicyOverride,omitempty"`
}

// SharesID reports whether consumers may share the id.
func (s *Sharing) SharesID(id string) bool {
	return len(s.IDs) == 0 || slices.Contains(s.IDs, id)
}

// HelmChart is a helm:// provisioner's chart. Release and Values are Go templates over the
// provisioner data (with .Init and .State), like the other templates.
type HelmChart struct {
	// Chart is oci://<registry>/<repository>@sha256:<hex> or configmap://<ns>/<name>/<key>
	// (the .tgz in binaryData).
	Chart string `json:"chart" yaml:"chart"`
	// Digest is the chart's sha256; required for configmap charts.
	Digest string `json:"digest,omitempty" yaml:"digest,omitempty"`
	// Release is the release name the chart sees (.Release.Name), e.g. {{ .Init.name }}.
	Release string `json:"release" yaml:"release"`
	// Values render to the chart's values (over its values.yaml).
	Values string `json:"values,omitempty" yaml:"values,omitempty"`
}

// The answers to a claim whose namespace may not share.
const (
	SharingIsolate = "Isolate"
	SharingDeny    = "Deny"
)

// Runnable is how a runnable:// provisioner judges its runs and reads their outputs.
type Runnable struct {
	// SuccessCondition is the condition type that means the run succeeded (default:
	// Complete for Jobs, Succeeded otherwise).
	SuccessCondition string `json:"successCondition,omitempty" yaml:"successCondition,omitempty"`
	// Outputs are JSONPaths (kubectl syntax) read from the run that succeeded.
	Outputs map[string]string `json:"outputs,omitempty" yaml:"outputs,omitempty"`
	// HistoryLimit is how many runs are kept, the current one included (default 3).
	HistoryLimit int `json:"historyLimit,omitempty" yaml:"historyLimit,omitempty"`
}

// EndpointPolicy is how the orchestrator mirrors runtime endpoints.
type EndpointPolicy struct {
	// PublicOnly hides endpoints whose scope is not Public: the Workload's endpoint stays null.
	PublicOnly bool `json:"publicOnly,omitempty" yaml:"publicOnly,omitempty"`
	// Template, when set, replaces the runtime-published URL; a Go template over
	// .workload.name and .workload.namespace.
	Template string `json:"template,omitempty" yaml:"template,omitempty"`
}

// Class is a named variant of a resource type (postgres "standard", "ha"): params merged under
// the claim's own before a provisioner is matched and run, and a default deprovision policy.
type Class struct {
	Type        string `json:"type" yaml:"type"`
	Name        string `json:"name" yaml:"name"`
	Description string `json:"description,omitempty" yaml:"description,omitempty"`
	// Params are merged under the claim's params: where both set a key, the claim wins.
	Params map[string]any `json:"params,omitempty" yaml:"params,omitempty"`
	// Default makes this the class of claims of Type that name none; one per type.
	Default bool `json:"default,omitempty" yaml:"default,omitempty"`
	// DeprovisionPolicy is the default policy of the class's claims; it overrides the
	// provisioner's and yields to the resource's score.dev/deprovision-policy annotation.
	DeprovisionPolicy string `json:"deprovisionPolicy,omitempty" yaml:"deprovisionPolicy,omitempty"`
}

// API is the http+api:// strategy: create the dependency with one HTTP request, poll a status
// request until a field says it is ready (or failed), publish outputs templated from the
// responses, and delete it with a request when its claim is deleted under Delete. Every
// string of a request is a Go template over the provisioner template data; .State.created is
// the create response and .State.observed the latest status response (JSON bodies).
type API struct {
	// Credentials inject a secret into a header of every request.
	Credentials *APICredentials `json:"credentials,omitempty" yaml:"credentials,omitempty"`
	// Create makes the dependency; it is sent once per instance.
	Create APIRequest `json:"create" yaml:"create"`
	// Status is polled until ReadyWhen decides; without it the create response is judged.
	Status *APIRequest `json:"status,omitempty" yaml:"status,omitempty"`
	// ReadyWhen says which field of the response tells readiness, and its values.
	ReadyWhen *APIReadyWhen `json:"readyWhen,omitempty" yaml:"readyWhen,omitempty"`
	// PollInterval is the first wait between polls (a Go duration, default 2s); it doubles
	// up to 30s.
	PollInterval string `json:"pollInterval,omitempty" yaml:"pollInterval,omitempty"`
	// Timeout is how long the dependency may take to become ready (default 10m).
	Timeout string `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	// SecretOutputs are outputs stored only in the claim's outputs Secret.
	SecretOutputs []string `json:"secretOutputs,omitempty" yaml:"secretOutputs,omitempty"`
	// Delete removes the dependency when a claim under the Delete policy goes.
	Delete *APIRequest `json:"delete,omitempty" yaml:"delete,omitempty"`
}

// APIRequest is one templated HTTP request.
type APIRequest struct {
	// Method is GET, POST, PUT, PATCH or DELETE (default GET, DELETE for delete).
	Method string `json:"method,omitempty" yaml:"method,omitempty"`
	// URL must render to an https:// URL.
	URL     string            `json:"url" yaml:"url"`
	Headers map[string]string `json:"headers,omitempty" yaml:"headers,omitempty"`
	Body    string            `json:"body,omitempty" yaml:"body,omitempty"`
}

// APIReadyWhen reads a dotted path (status.phase, items.0.state) of a JSON response: one of
// Ready means ready, one of Failed means failed, anything else means not yet.
type APIReadyWhen struct {
	Path   string   `json:"path" yaml:"path"`
	Ready  []string `json:"ready" yaml:"ready"`
	Failed []string `json:"failed,omitempty" yaml:"failed,omitempty"`
}

// APICredentials take a key of a Secret in the controller's own namespace (where the
// config lives) and send Prefix plus its value in Header (default Authorization).
type APICredentials struct {
	SecretRef SecretKeyRef `json:"secretRef" yaml:"secretRef"`
	Header    string       `json:"header,omitempty" yaml:"header,omitempty"`
	Prefix    string       `json:"prefix,omitempty" yaml:"prefix,omitempty"`
}

// SecretKeyRef names a key of a Secret.
type SecretKeyRef struct {
	Name string `json:"name" yaml:"name"`
	Key  string `json:"key" yaml:"key"`
}

// DefaultAllowedKinds are exactly what the shipped templates and the development catalog
// create, and each is granted to the controller that creates it by its generated role
// (devenv's TestDefaultAllowedKindsAreGranted). No cluster-scoped kind, and nothing that grants
// permissions or admits requests. A platform that lists more extends the roles to match.
var DefaultAllowedKinds = []string{
	"ConfigMap", "Secret", "Service", "PersistentVolumeClaim",
	"Deployment.apps", "StatefulSet.apps", "Job.batch",
	"Ingress.networking.k8s.io", "NetworkPolicy.networking.k8s.io",
	"HTTPRoute.gateway.networking.k8s.io",
}

// KindAllowed reports whether templates and provisioners may create objects of a kind.
func (c *Config) KindAllowed(group, kind string) bool {
	name := kind
	if group != "" {
		name += "." + group
	}
	allowed := c.AllowedKinds
	if len(allowed) == 0 {
		allowed = DefaultAllowedKinds
	}
	for _, k := range allowed {
		if k == name {
			return true
		}
	}
	return false
}
