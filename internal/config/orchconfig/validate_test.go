package orchconfig

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// validConfig is a small valid document each case breaks in one place.
func validConfig() *Config {
	return &Config{
		APIVersion: APIVersion,
		Kind:       Kind,
		Profiles: []Profile{{
			Name: "web-service",
			Backends: []Backend{{
				BackendID:    "k8s-web",
				RuntimeClass: "kubernetes",
				Version:      "1.0.0",
				Template: Template{
					Kind: "manifests",
					Ref:  "oci://registry.example.internal/rendering/templates/web@sha256:" + strings.Repeat("a", 64),
				},
			}},
		}, {
			Name: "batch-job",
			Backends: []Backend{{
				BackendID:    "k8s-job",
				RuntimeClass: "kubernetes",
				Version:      "1.0.0",
				Template: Template{
					Kind:   "manifests",
					Ref:    "configmap://score-system/templates/job.yaml",
					Digest: "sha256:" + strings.Repeat("b", 64),
				},
			}},
		}},
		Defaults: Defaults{Profile: "web-service"},
		Provisioners: []Provisioner{{
			URI:     "template://samples/env",
			Type:    "environment",
			Outputs: "KEY: value",
		}},
	}
}

func ptr[T any](v T) *T { return &v }

func TestValidate(t *testing.T) {
	cases := []validationCase{
		{"valid document", func(*Config) {}, "", ""},
		{"wrong apiVersion", func(c *Config) { c.APIVersion = "score.dev/v1" }, "apiVersion", `must be "score.dev/v1b1"`},
		{"wrong kind", func(c *Config) { c.Kind = "Config" }, "kind", `must be "OrchestratorConfig"`},
		{"an allowed kind that is not Kind.group", func(c *Config) { c.AllowedKinds = []string{"apps/v1/Deployment"} }, "allowedKinds[0]", "must be Kind or Kind.group"},
		{"helm without its block", func(c *Config) {
			c.Provisioners = []Provisioner{{URI: "helm://dev/redis", Type: "redis"}}
		}, "provisioners[0].helm", "needs a helm block"},
		{"helm chart from a mutable ref", func(c *Config) {
			c.Provisioners = []Provisioner{{URI: "helm://dev/redis", Type: "redis", Helm: &HelmChart{Chart: "oci://registry.example.internal/charts/redis:7", Release: "r"}}}
		}, "provisioners[0].helm.chart", "pinned by digest"},
		{"helm chart in a configmap without digest", func(c *Config) {
			c.Provisioners = []Provisioner{{URI: "helm://dev/redis", Type: "redis", Helm: &HelmChart{Chart: "configmap://score-system/charts/redis.tgz", Release: "r"}}}
		}, "provisioners[0].helm.chart", "pinned by digest"},
		{"helm values that do not parse", func(c *Config) {
			c.Provisioners = []Provisioner{{URI: "helm://dev/redis", Type: "redis", Helm: &HelmChart{Chart: "oci://registry.example.internal/charts/redis@sha256:" + strings.Repeat("c", 64), Release: "r", Values: "{{ .State"}}}
		}, "provisioners[0].helm.values", "does not parse"},
		{"a hostname rule without domains", func(c *Config) {
			c.Hostnames = []HostnameRule{{NamespaceSelector: &Selector{MatchLabels: map[string]string{"team": "a"}}}}
		}, "hostnames[0].domains", "at least one domain"},
		{"a hostname rule's domain that is not a name", func(c *Config) {
			c.Hostnames = []HostnameRule{{Domains: []string{"*.{namespace}.dev.local", "Shop.example.com/x"}}}
		}, "hostnames[0].domains[1]", "lower-case host name or a wildcard"},
		{"a hostname rule's wildcard in the middle", func(c *Config) {
			c.Hostnames = []HostnameRule{{Domains: []string{"shop.*.example.com"}}}
		}, "hostnames[0].domains[0]", "lower-case host name or a wildcard"},
		{"a hostname rule's empty selector", func(c *Config) {
			c.Hostnames = []HostnameRule{{NamespaceSelector: &Selector{}, Domains: []string{"shop.example.com"}}}
		}, "hostnames[0].namespaceSelector", "a selector needs"},
		{"a named volume rule without names", func(c *Config) {
			c.NamedVolumes = []NamedVolumeRule{{NamespaceSelector: &Selector{MatchLabels: map[string]string{"team": "a"}}}}
		}, "namedVolumes[0].names", "at least one name"},
		{"a named volume that is no name", func(c *Config) {
			c.NamedVolumes = []NamedVolumeRule{{Names: []string{"{namespace}-cache", "Shared_Data"}}}
		}, "namedVolumes[0].names[1]", "must be a volume name, or a pattern of one"},
		{"a negative preview limit", func(c *Config) { c.Previews.Max = -1 }, "previews.max", "must be 1 or more"},
		{"a preview lifetime that is not a duration", func(c *Config) { c.Previews.DefaultTTL = "a day" }, "previews.defaultTTL", "positive duration"},
		{"a preview lifetime of nothing", func(c *Config) { c.Previews.MaxTTL = "0s" }, "previews.maxTTL", "positive duration"},
		{"a preview policy that is none", func(c *Config) { c.Previews.DeprovisionPolicy = "Keep" }, "previews.deprovisionPolicy", "Delete, Retain or Orphan"},
		{"a preview team label, which a maker could forge", func(c *Config) { c.Previews.TeamLabel = "team" }, "previews.teamLabel", "counted by their maker"},
		{"an empty hostname param", func(c *Config) {
			c.Provisioners = []Provisioner{{URI: "template://dev/route", Type: "route", HostnameParams: []string{""}}}
		}, "provisioners[0].hostnameParams[0]", "must name a param"},
		{"sharing with an empty selector", func(c *Config) {
			c.Provisioners = []Provisioner{{URI: "template://dev/pg", Type: "postgres", Sharing: &Sharing{Namespace: "shared"}}}
		}, "provisioners[0].sharing.namespaceSelector", "must select namespaces by labels"},
		{"sharing into a bad namespace", func(c *Config) {
			c.Provisioners = []Provisioner{{URI: "template://dev/pg", Type: "postgres", Sharing: &Sharing{Namespace: "Shared_NS", NamespaceSelector: Selector{MatchLabels: map[string]string{"a": "b"}}}}}
		}, "provisioners[0].sharing.namespace", "must be a namespace name"},
		{"sharing otherwise unknown", func(c *Config) {
			c.Provisioners = []Provisioner{{URI: "template://dev/pg", Type: "postgres", Sharing: &Sharing{Namespace: "shared", NamespaceSelector: Selector{MatchLabels: map[string]string{"a": "b"}}, Otherwise: "Share"}}}
		}, "provisioners[0].sharing.otherwise", "must be Isolate or Deny"},
		{"a platform Secret that is no Secret name", func(c *Config) {
			c.Provisioners = []Provisioner{{URI: "template://dev/env", Type: "environment", PlatformSecrets: []string{"score-environment", "Team_Secrets"}}}
		}, "provisioners[0].platformSecrets[1]", "must be a Secret name, or a pattern of one"},
		{"a shared id that is no id", func(c *Config) {
			c.Provisioners = []Provisioner{{URI: "template://dev/pg", Type: "postgres", Sharing: &Sharing{Namespace: "shared", NamespaceSelector: Selector{MatchLabels: map[string]string{"a": "b"}}, IDs: []string{"main", "Main_DB"}}}}
		}, "provisioners[0].sharing.ids[1]", "must be dot-separated lower-case labels"},
		{"a negative bound of shared instances", func(c *Config) {
			c.Provisioners = []Provisioner{{URI: "template://dev/pg", Type: "postgres", Sharing: &Sharing{Namespace: "shared", NamespaceSelector: Selector{MatchLabels: map[string]string{"a": "b"}}, MaxInstancesPerNamespace: -1}}}
		}, "provisioners[0].sharing.maxInstancesPerNamespace", "must be 1 or more"},
		{"runnable without its block", func(c *Config) {
			c.Provisioners = []Provisioner{{URI: "runnable://dev/build", Type: "image", Manifests: "- {}"}}
		}, "provisioners[0].runnable", "needs a runnable block"},
		{"runnable without a run", func(c *Config) {
			c.Provisioners = []Provisioner{{URI: "runnable://dev/build", Type: "image", Runnable: &Runnable{}}}
		}, "provisioners[0].manifests", "renders its run in manifests"},
		{"runnable output not a JSONPath", func(c *Config) {
			c.Provisioners = []Provisioner{{URI: "runnable://dev/build", Type: "image", Manifests: "- {}", Runnable: &Runnable{Outputs: map[string]string{"image": "{.status["}}}}
		}, "provisioners[0].runnable.outputs.image", "does not parse"},
		{"a runnable block on a template provisioner", func(c *Config) {
			c.Provisioners = []Provisioner{{URI: "template://dev/x", Type: "image", Runnable: &Runnable{}}}
		}, "provisioners[0].runnable", "only runnable:// provisioners"},
		{"health rule without kind", func(c *Config) { c.Health = []HealthRule{{APIVersion: "x/v1", Healthy: "true"}} }, "health[0]", "apiVersion and kind are required"},
		{"health rule that is not a bool", func(c *Config) { c.Health = []HealthRule{{APIVersion: "x/v1", Kind: "X", Healthy: `"yes"`}} }, "health[0].healthy", "must evaluate to a bool"},
		{"health message that is not a string", func(c *Config) {
			c.Health = []HealthRule{{APIVersion: "x/v1", Kind: "X", Healthy: "true", Message: "self.("}}
		}, "health[0].message", "does not compile"},
		{"two health rules for a kind", func(c *Config) {
			c.Health = []HealthRule{{APIVersion: "x/v1", Kind: "X", Healthy: "true"}, {APIVersion: "x/v1", Kind: "X", Healthy: "false"}}
		}, "health[1]", "as health[0] already does"},
		{"unknown deployWhen", func(c *Config) { c.Dependencies.DeployWhen = "Bound" }, "dependencies.deployWhen", "must be ClaimsReady or OutputsAvailable"},
		{"no profiles", func(c *Config) { c.Profiles = nil; c.Defaults.Profile = "" }, "profiles", "at least one profile"},
		{"profile name not a DNS label", func(c *Config) { c.Profiles[0].Name = "Web_Service" }, "profiles[0].name", "must be a DNS label"},
		{"duplicate profile name", func(c *Config) { c.Profiles[1].Name = "web-service" }, "profiles[1].name", "defined more than once"},
		{"profile without backends", func(c *Config) { c.Profiles[1].Backends = nil }, "profiles[1].backends", "at least one backend"},
		{"duplicate backendId across profiles", func(c *Config) { c.Profiles[1].Backends[0].BackendID = "k8s-web" }, "profiles[1].backends[0].backendId", "unique across the document"},
		{"bad backendId", func(c *Config) { c.Profiles[0].Backends[0].BackendID = "K8S web" }, "profiles[0].backends[0].backendId", "lower-case letters"},
		{"missing runtimeClass", func(c *Config) { c.Profiles[0].Backends[0].RuntimeClass = "" }, "profiles[0].backends[0].runtimeClass", "DNS label"},
		{"a runtimeClass no runtime serves", func(c *Config) { c.Profiles[0].Backends[0].RuntimeClass = "ecs" }, "profiles[0].backends[0].runtimeClass", `no runtime of this control plane serves "ecs": use kubernetes`},
		{"a docker backend with a template to fetch", func(c *Config) { c.Profiles[0].Backends[0].RuntimeClass = "docker" }, "profiles[0].backends[0].template.kind", "a docker backend's template is kind compose"},
		{"a compose template with a ref", func(c *Config) {
			b := &c.Profiles[0].Backends[0]
			b.RuntimeClass, b.Template.Kind = "docker", "compose"
		}, "profiles[0].backends[0].template.ref", "a compose template has nothing to fetch"},
		{"a compose template on kubernetes", func(c *Config) { c.Profiles[0].Backends[0].Template.Kind = "compose" }, "profiles[0].backends[0].template.kind", "manifests, helm or kustomize"},
		{"a docker backend placed on clusters", func(c *Config) {
			b := &c.Profiles[0].Backends[0]
			b.RuntimeClass, b.Template = "docker", Template{Kind: "compose"}
			b.Placement = &Placement{}
		}, "profiles[0].backends[0].placement", "placement chooses member clusters"},
		{"negative priority", func(c *Config) { c.Profiles[0].Backends[0].Priority = -1 }, "profiles[0].backends[0].priority", "must not be negative"},
		{"version not SemVer", func(c *Config) { c.Profiles[0].Backends[0].Version = "v1.2" }, "profiles[0].backends[0].version", "SemVer 2.0.0"},
		{"missing version", func(c *Config) { c.Profiles[0].Backends[0].Version = "" }, "profiles[0].backends[0].version", "SemVer"},
		{"unknown template kind", func(c *Config) { c.Profiles[0].Backends[0].Template.Kind = "jsonnet" }, "profiles[0].backends[0].template.kind", "manifests, helm or kustomize"},
		{"unknown ref scheme", func(c *Config) { c.Profiles[0].Backends[0].Template.Ref = "git://example/x" }, "profiles[0].backends[0].template.ref", "unknown scheme"},
		{"ref without scheme", func(c *Config) { c.Profiles[0].Backends[0].Template.Ref = "templates/web" }, "profiles[0].backends[0].template.ref", "must start with oci://"},
		{"malformed oci digest", func(c *Config) {
			c.Profiles[0].Backends[0].Template.Ref = "oci://registry.example.internal/t/web@sha256:abc"
		}, "profiles[0].backends[0].template.ref", "64 lower-case hex"},
		{"mutable oci tag", func(c *Config) {
			c.Profiles[0].Backends[0].Template.Ref = "oci://registry.example.internal/t/web:latest"
		}, "profiles[0].backends[0].template.ref", "is mutable"},
		{"configmap ref without digest", func(c *Config) { c.Profiles[1].Backends[0].Template.Digest = "" }, "profiles[1].backends[0].template.ref", "is mutable"},
		{"malformed digest field", func(c *Config) { c.Profiles[1].Backends[0].Template.Digest = "md5:1234" }, "profiles[1].backends[0].template.digest", "sha256:"},
		{"digest disagrees with ref", func(c *Config) {
			c.Profiles[0].Backends[0].Template.Digest = "sha256:" + strings.Repeat("c", 64)
		}, "profiles[0].backends[0].template.digest", "disagrees"},
		{"malformed configmap ref", func(c *Config) { c.Profiles[1].Backends[0].Template.Ref = "configmap://only-namespace" }, "profiles[1].backends[0].template.ref", "configmap://<namespace>/<name>"},
		{"kustomize configmap ref naming a key", func(c *Config) { c.Profiles[1].Backends[0].Template.Kind = "kustomize" }, "profiles[1].backends[0].template.ref", "a kustomize template is a whole ConfigMap"},
		{"malformed cpu range", func(c *Config) { c.Profiles[0].Backends[0].Constraints.Resources.CPU = "lots" }, "profiles[0].backends[0].constraints.resources.cpu", "not a quantity range"},
		{"inverted memory range", func(c *Config) { c.Profiles[0].Backends[0].Constraints.Resources.Memory = "4Gi-1Gi" }, "profiles[0].backends[0].constraints.resources.memory", "minimum above its maximum"},
		{"empty selector", func(c *Config) { c.Profiles[0].Backends[0].Constraints.Selectors = []Selector{{}} }, "profiles[0].backends[0].constraints.selectors[0]", "needs matchLabels"},
		{"bad selector operator", func(c *Config) {
			c.Profiles[0].Backends[0].Constraints.Selectors = []Selector{{MatchExpressions: []SelectorRequirement{{Key: "tier", Operator: "Equals", Values: []string{"a"}}}}}
		}, "profiles[0].backends[0].constraints.selectors[0].matchExpressions[0].operator", "not an operator"},
		{"In without values", func(c *Config) {
			c.Profiles[0].Backends[0].Constraints.Selectors = []Selector{{MatchExpressions: []SelectorRequirement{{Key: "tier", Operator: "In"}}}}
		}, "profiles[0].backends[0].constraints.selectors[0].matchExpressions[0].values", "at least one value"},
		{"Exists with values", func(c *Config) {
			c.Profiles[0].Backends[0].Constraints.Selectors = []Selector{{MatchExpressions: []SelectorRequirement{{Key: "tier", Operator: "Exists", Values: []string{"x"}}}}}
		}, "profiles[0].backends[0].constraints.selectors[0].matchExpressions[0].values", "takes no values"},
		{"bad label key", func(c *Config) {
			c.Profiles[0].Backends[0].Constraints.Selectors = []Selector{{MatchLabels: map[string]string{"bad key": "x"}}}
		}, "profiles[0].backends[0].constraints.selectors[0].matchLabels", "label key"},
		{"bad label value", func(c *Config) {
			c.Profiles[0].Backends[0].Constraints.Selectors = []Selector{{MatchLabels: map[string]string{"tier": "not valid!"}}}
		}, "profiles[0].backends[0].constraints.selectors[0].matchLabels.tier", "label value"},
		{"bad selector namespace", func(c *Config) {
			c.Profiles[0].Backends[0].Constraints.Selectors = []Selector{{Namespaces: []string{"Team_A"}}}
		}, "profiles[0].backends[0].constraints.selectors[0].namespaces[0]", "not a valid namespace"},
		{"bad feature", func(c *Config) { c.Profiles[0].Backends[0].Constraints.Features = []string{"Scale To Zero"} }, "profiles[0].backends[0].constraints.features[0]", "lower-case"},
		{"duplicate feature", func(c *Config) { c.Profiles[0].Backends[0].Constraints.Features = []string{"gpu", "gpu"} }, "profiles[0].backends[0].constraints.features[1]", "listed twice"},
		{"empty region", func(c *Config) { c.Profiles[0].Backends[0].Constraints.Regions = []string{" "} }, "profiles[0].backends[0].constraints.regions[0]", "must not be empty"},
		{"default profile unknown", func(c *Config) { c.Defaults.Profile = "function" }, "defaults.profile", `"function", which is not defined`},
		{"default selector profile unknown", func(c *Config) {
			c.Defaults.Selectors = []ProfileSelector{{Profile: "worker", Selector: Selector{MatchLabels: map[string]string{"a": "b"}}}}
		}, "defaults.selectors[0].profile", "not defined"},
		{"default selector empty", func(c *Config) { c.Defaults.Selectors = []ProfileSelector{{Profile: "batch-job"}} }, "defaults.selectors[0]", "needs matchLabels"},
		{"rule names unknown profile", func(c *Config) { c.ProfileRules = []ProfileRule{{Profile: "worker", When: "true"}} }, "profileRules[0].profile", "not defined"},
		{"rule without expression", func(c *Config) { c.ProfileRules = []ProfileRule{{Profile: "batch-job"}} }, "profileRules[0].when", "expression is required"},
		{"rule does not compile", func(c *Config) { c.ProfileRules = []ProfileRule{{Profile: "batch-job", When: "workload.spec.("}} }, "profileRules[0].when", "does not compile"},
		{"rule is not boolean", func(c *Config) { c.ProfileRules = []ProfileRule{{Profile: "batch-job", When: `"yes"`}} }, "profileRules[0].when", "must evaluate to a bool"},
		{"provisioner without uri", func(c *Config) { c.Provisioners[0].URI = "" }, "provisioners[0].uri", "uri is required"},
		{"provisioner uri without scheme", func(c *Config) { c.Provisioners[0].URI = "postgres" }, "provisioners[0].uri", "<scheme>://<name>"},
		{"provisioner unknown scheme", func(c *Config) { c.Provisioners[0].URI = "lambda://x" }, "provisioners[0].uri", "not a provisioner strategy"},
		{"provisioner bad type", func(c *Config) { c.Provisioners[0].Type = "p" }, "provisioners[0].type", "2-63 letters"},
		{"provisioner bad class", func(c *Config) { c.Provisioners[0].Class = ptr("-x-") }, "provisioners[0].class", "2-63 letters"},
		{"provisioner bad id", func(c *Config) { c.Provisioners[0].ID = ptr("Shared_DB") }, "provisioners[0].id", "dot-separated"},
		{"provisioner bad deprovision policy", func(c *Config) { c.Provisioners[0].DeprovisionPolicy = "Keep" }, "provisioners[0].deprovisionPolicy", "Delete, Retain or Orphan"},
		{"rollout wave not a size", func(c *Config) { c.Rollout = &RolloutPolicy{Waves: []string{"1", "half"}} }, "rollout.waves[1]", "a count of Workloads"},
		{"rollout wave over 100%", func(c *Config) { c.Rollout = &RolloutPolicy{Waves: []string{"150%"}} }, "rollout.waves[0]", "from 1% to 100%"},
		{"rollout bake not a duration", func(c *Config) { c.Rollout = &RolloutPolicy{RolloutTiming: RolloutTiming{BakeTime: "soon"}} }, "rollout.bakeTime", "not a duration"},
		{"rollout order by two labels", func(c *Config) {
			c.Rollout = &RolloutPolicy{OrderBy: &RolloutOrder{Label: "env", NamespaceLabel: "env", Values: []string{"dev"}}}
		}, "rollout.orderBy", "one of label"},
		{"rollout order without values", func(c *Config) { c.Rollout = &RolloutPolicy{OrderBy: &RolloutOrder{Label: "env"}} }, "rollout.orderBy.values", "lists the label's values"},
		{"rollout order by no label key", func(c *Config) {
			c.Rollout = &RolloutPolicy{OrderBy: &RolloutOrder{NamespaceLabel: "not a key", Values: []string{"dev"}}}
		}, "rollout.orderBy", "not a label key"},
		{"rollout gate does not compile", func(c *Config) { c.Rollout = &RolloutPolicy{Gate: "objects.all(o, o.health =="} }, "rollout.gate", "does not compile"},
		{"rollout gate not a bool", func(c *Config) { c.Rollout = &RolloutPolicy{Gate: "size(objects)"} }, "rollout.gate", "must evaluate to a bool"},
		{"rollout gate", func(c *Config) {
			c.Rollout = &RolloutPolicy{Gate: "objects.all(o, o.health == 'Current') && workload.labels.tier != 'x'"}
		}, "", ""},
		{"backend rollout bake not a duration", func(c *Config) { c.Profiles[0].Backends[0].Rollout = &RolloutTiming{BakeTime: "1 hour"} }, "profiles[0].backends[0].rollout.bakeTime", "not a duration"},
		{"provisioner rollout deadline not a duration", func(c *Config) { c.Provisioners[0].Rollout = &RolloutTiming{ProgressDeadline: "-1s"} }, "provisioners[0].rollout.progressDeadline", "not a duration"},
		{"rollout negative budget", func(c *Config) { c.Rollout = &RolloutPolicy{FailureBudget: -1} }, "rollout.failureBudget", "negative"},
		{"provisioner bad location", func(c *Config) { c.Provisioners[0].Location = "Member" }, "provisioners[0].location", "Workload or Hub"},
		{"provisioner template does not parse", func(c *Config) { c.Provisioners[0].Outputs = "host: {{ .State.host " }, "provisioners[0].outputs", "does not parse"},
		{"provisioner template uses an unknown function", func(c *Config) { c.Provisioners[0].Init = "{{ shell \"id\" }}" }, "provisioners[0].init", "does not parse"},
		{"cmd provisioner with templates", func(c *Config) { c.Provisioners[0].URI = "cmd://bash" }, "provisioners[0].outputs", "takes args, not templates"},
		{"template provisioner with args", func(c *Config) { c.Provisioners[0].Args = []string{"-c"} }, "provisioners[0].args", "only cmd://"},
		{"classes", func(c *Config) {
			c.Classes = []Class{{Type: "postgres", Name: "standard", Default: true, Params: map[string]any{"size": "small"}}, {Type: "postgres", Name: "ha", DeprovisionPolicy: "Retain"}, {Type: "redis", Name: "standard", Default: true}}
			c.Provisioners = append(c.Provisioners, Provisioner{URI: "template://pg-ha", Type: "postgres", Class: ptr("ha")})
		}, "", ""},
		{"class bad type", func(c *Config) { c.Classes = []Class{{Type: "-pg", Name: "standard"}} }, "classes[0].type", "2-63 letters"},
		{"class bad name", func(c *Config) { c.Classes = []Class{{Type: "postgres", Name: "Gold Plus"}} }, "classes[0].name", "2-63 letters"},
		{"class defined twice", func(c *Config) { c.Classes = []Class{{Type: "postgres", Name: "ha"}, {Type: "postgres", Name: "ha"}} }, "classes[1].name", "defined more than once"},
		{"two defaults for one type", func(c *Config) {
			c.Classes = []Class{{Type: "postgres", Name: "standard", Default: true}, {Type: "redis", Name: "standard", Default: true}, {Type: "postgres", Name: "ha", Default: true}}
		}, "classes[2].default", "type postgres already has a default class (standard at classes[0])"},
		{"class bad deprovision policy", func(c *Config) { c.Classes = []Class{{Type: "postgres", Name: "ha", DeprovisionPolicy: "Keep"}} }, "classes[0].deprovisionPolicy", "Delete, Retain or Orphan"},
		{"provisioner class not declared", func(c *Config) {
			c.Classes = []Class{{Type: "postgres", Name: "standard"}, {Type: "postgres", Name: "ha"}}
			c.Provisioners = append(c.Provisioners, Provisioner{URI: "template://pg-gold", Type: "postgres", Class: ptr("gold")})
		}, "provisioners[1].class", `class "gold" is not among the classes of type postgres (ha, standard)`},
		{"api provisioner", func(c *Config) { c.Provisioners = append(c.Provisioners, apiProvisioner()) }, "", ""},
		{"api provisioner without api", func(c *Config) {
			p := apiProvisioner()
			p.API = nil
			c.Provisioners = append(c.Provisioners, p)
		}, "provisioners[1].api", "needs an api block"},
		{"api provisioner without a create url", func(c *Config) {
			p := apiProvisioner()
			p.API.Create.URL = ""
			c.Provisioners = append(c.Provisioners, p)
		}, "provisioners[1].api.create.url", "a url is required"},
		{"api request template does not parse", func(c *Config) {
			p := apiProvisioner()
			p.API.Status.URL = "https://x/{{ .State.created.id"
			c.Provisioners = append(c.Provisioners, p)
		}, "provisioners[1].api.status.url", "does not parse"},
		{"api url template whose values could land in two parts", func(c *Config) {
			p := apiProvisioner()
			p.API.Status.URL = "https://x/{{ if .Params.q }}?q={{ end }}{{ .Params.q }}"
			c.Provisioners = append(c.Provisioners, p)
		}, "provisioners[1].api.status.url", "the branches of an if end in different parts of the url (query and path)"},
		{"api bad method", func(c *Config) {
			p := apiProvisioner()
			p.API.Create.Method = "FETCH"
			c.Provisioners = append(c.Provisioners, p)
		}, "provisioners[1].api.create.method", "GET, POST"},
		{"api status without readyWhen", func(c *Config) {
			p := apiProvisioner()
			p.API.ReadyWhen = nil
			c.Provisioners = append(c.Provisioners, p)
		}, "provisioners[1].api.readyWhen", "needs readyWhen"},
		{"api bad timeout", func(c *Config) {
			p := apiProvisioner()
			p.API.Timeout = "soon"
			c.Provisioners = append(c.Provisioners, p)
		}, "provisioners[1].api.timeout", "positive duration"},
		{"api credentials without a key", func(c *Config) {
			p := apiProvisioner()
			p.API.Credentials.SecretRef.Key = ""
			c.Provisioners = append(c.Provisioners, p)
		}, "provisioners[1].api.credentials.secretRef.key", "a key is required"},
		{"api provisioner with manifests", func(c *Config) {
			p := apiProvisioner()
			p.Manifests = "- {}"
			c.Provisioners = append(c.Provisioners, p)
		}, "provisioners[1].manifests", "outputs template only"},
		{"api block on a template provisioner", func(c *Config) { c.Provisioners[0].API = apiProvisioner().API }, "provisioners[0].api", "only http+api://"},
		{"endpoint template does not parse", func(c *Config) { c.Endpoint.Template = "https://{{ .workload.name" }, "endpoint.template", "does not parse"},
	}
	checkValidation(t, cases)
}

func TestMutableRefsAllowedForDevelopment(t *testing.T) {
	cfg := validConfig()
	cfg.AllowMutableRefs = true
	cfg.Profiles[0].Backends[0].Template.Ref = "oci://registry.example.internal/t/web:dev"
	cfg.Profiles[1].Backends[0].Template.Digest = ""
	if errs := Validate(cfg); len(errs) > 0 {
		t.Fatalf("want no errors with allowMutableRefs, got %v", errs)
	}
}

func TestParseQuantityRange(t *testing.T) {
	cases := []struct {
		in       string
		min, max string // "" for open
		wantErr  bool
	}{
		{in: "2", min: "2", max: "2"},
		{in: "500m-2", min: "500m", max: "2"},
		{in: "1Gi-", min: "1Gi"},
		{in: "-8Gi", max: "8Gi"},
		{in: "1e-3-1", min: "1e-3", max: "1"},
		{in: "-", wantErr: true},
		{in: "2-1", wantErr: true},
		{in: "a-b", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			r, err := ParseQuantityRange(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("want an error, got %+v", r)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			check := func(name string, got interface{ String() string }, isNil bool, want string) {
				if want == "" {
					if !isNil {
						t.Errorf("%s: want open, got %s", name, got)
					}
					return
				}
				if isNil || got.String() != want {
					t.Errorf("%s: want %s, got %v", name, want, got)
				}
			}
			check("min", r.Min, r.Min == nil, tc.min)
			check("max", r.Max, r.Max == nil, tc.max)
		})
	}
}

func TestSampleConfigIsValid(t *testing.T) {
	data, err := os.ReadFile("../../../config/samples/orchestrator-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Profiles) < 2 || len(cfg.Provisioners) < 2 {
		t.Fatalf("the sample should show two profiles and several provisioners, got %d and %d", len(cfg.Profiles), len(cfg.Provisioners))
	}
	backends := 0
	for _, p := range cfg.Profiles {
		backends += len(p.Backends)
	}
	if backends < 3 {
		t.Fatalf("the sample should show several backends, got %d", backends)
	}
}

// The JSON tags must agree with the YAML tags: scorectl prints configs as JSON.
func TestJSONAndYAMLTagsAgree(t *testing.T) {
	data, err := os.ReadFile("../../../config/samples/orchestrator-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	var viaJSON Config
	if err := yaml.UnmarshalStrict(data, &viaJSON); err != nil {
		t.Fatalf("the sample does not decode through the JSON tags: %v", err)
	}
	if viaJSON.Profiles[0].Backends[0].BackendID != cfg.Profiles[0].Backends[0].BackendID || viaJSON.Defaults.Selectors[0].MatchLabels["score.dev/kind"] != "job" {
		t.Fatalf("JSON and YAML decoding disagree")
	}
}

// The sample's configmap template refs pin the sha256 of the templates shipped in
// config/templates, which make dev loads into that ConfigMap.
func TestSampleDigestsMatchTheShippedTemplates(t *testing.T) {
	data, err := os.ReadFile("../../../config/samples/orchestrator-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, p := range cfg.Profiles {
		for _, b := range p.Backends {
			ref, err := ParseRef(b.Template.Ref)
			if err != nil || ref.Scheme != RefConfigMap {
				continue
			}
			var want, shipped string
			if b.Template.Kind == "kustomize" {
				// A directory: the sha256 of its sha256sum listing, as LC_ALL=C sha256sum * | sha256sum.
				shipped = ref.Name
				entries, err := os.ReadDir("../../../config/templates/" + shipped)
				if err != nil {
					t.Fatalf("%s: %v", b.BackendID, err)
				}
				var listing strings.Builder
				for _, e := range entries {
					data, err := os.ReadFile("../../../config/templates/" + shipped + "/" + e.Name())
					if err != nil {
						t.Fatal(err)
					}
					fmt.Fprintf(&listing, "%x  %s\n", sha256.Sum256(data), e.Name())
				}
				sum := sha256.Sum256([]byte(listing.String()))
				want = "sha256:" + hex.EncodeToString(sum[:])
			} else {
				shipped = ref.Key
				text, err := os.ReadFile("../../../config/templates/" + shipped)
				if err != nil {
					t.Fatalf("%s: %v", b.BackendID, err)
				}
				sum := sha256.Sum256(text)
				want = "sha256:" + hex.EncodeToString(sum[:])
			}
			if b.Template.Digest != want {
				t.Errorf("%s pins %s, config/templates/%s is %s", b.BackendID, b.Template.Digest, shipped, want)
			}
			checked++
		}
	}
	if checked < 4 {
		t.Fatalf("%d configmap refs checked: the sample pins a manifests, a helm and a kustomize template", checked)
	}
}

func apiProvisioner() Provisioner {
	return Provisioner{
		URI: "http+api://acme/postgres", Type: "postgres", Outputs: "host: {{ .State.observed.host }}",
		API: &API{
			Credentials: &APICredentials{SecretRef: SecretKeyRef{Name: "acme-api", Key: "token"}, Prefix: "Bearer "},
			Create:      APIRequest{Method: "POST", URL: "https://api.acme.test/dbs", Body: `{"name": {{ .Guid | quote }}}`},
			Status:      &APIRequest{URL: "https://api.acme.test/dbs/{{ .State.created.id }}"},
			ReadyWhen:   &APIReadyWhen{Path: "status", Ready: []string{"ready"}},
			Timeout:     "5m",
			Delete:      &APIRequest{URL: "https://api.acme.test/dbs/{{ .State.created.id }}"},
		},
	}
}

// A namespace may claim a host name only under a domain a rule that selects it admits: by
// labels, by name, or every namespace its own with {namespace}. Without rules, any.
func TestHostnameAllowed(t *testing.T) {
	cfg := &Config{Hostnames: []HostnameRule{
		{Domains: []string{"*.{namespace}.apps.example.com"}},
		{NamespaceSelector: &Selector{MatchLabels: map[string]string{"team": "shop"}}, Domains: []string{"shop.example.com", "*.shop.example.com"}},
		{NamespaceSelector: &Selector{Namespaces: []string{"edge"}}, Domains: []string{"example.com"}},
	}}
	shop := map[string]string{"team": "shop"}
	for _, tc := range []struct {
		name, namespace, host string
		labels                map[string]string
		want                  bool
	}{
		{"its own subdomain", "team-a", "web.team-a.apps.example.com", nil, true},
		{"deeper in its own subdomain", "team-a", "a.b.team-a.apps.example.com", nil, true},
		{"another namespace's subdomain", "team-b", "web.team-a.apps.example.com", nil, false},
		{"the wildcard's own name is not under it", "team-a", "team-a.apps.example.com", nil, false},
		{"a suffix that is not a label boundary", "team-a", "evilteam-a.apps.example.com", nil, false},
		{"a team's domain, selected by label", "checkout", "shop.example.com", shop, true},
		{"under a team's domain", "checkout", "api.shop.example.com", shop, true},
		{"a team's domain from a namespace without the label", "team-a", "shop.example.com", nil, false},
		{"a name selected by namespace", "edge", "example.com", nil, true},
		{"case and a trailing dot", "team-a", "WEB.team-a.apps.example.com.", nil, true},
		{"another's apex", "team-a", "example.com", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, domains := cfg.HostnameAllowed(tc.namespace, tc.labels, tc.host)
			if got != tc.want {
				t.Fatalf("allowed %v, want %v (domains %v)", got, tc.want, domains)
			}
			if !got && (len(domains) == 0 || !strings.Contains(strings.Join(domains, " "), tc.namespace+".apps.example.com")) {
				t.Fatalf("the refusal names %v", domains)
			}
		})
	}
	if ok, _ := (&Config{}).HostnameAllowed("any", nil, "anything.example.com"); !ok {
		t.Fatal("without rules, any host name is allowed")
	}
}

// validationCase is a change to validConfig and the error it must bring: none when wantPath is
// empty, else one at wantPath whose message contains wantMsg.
type validationCase struct {
	name     string
	mutate   func(*Config)
	wantPath string
	wantMsg  string
}

func checkValidation(t *testing.T, cases []validationCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validConfig()
			tc.mutate(cfg)
			errs := Validate(cfg)
			if tc.wantPath == "" {
				if len(errs) > 0 {
					t.Fatalf("want no errors, got %v", errs)
				}
				return
			}
			for _, e := range errs {
				if e.Path == tc.wantPath && strings.Contains(e.Message, tc.wantMsg) {
					return
				}
			}
			t.Fatalf("want an error at %s containing %q, got %v", tc.wantPath, tc.wantMsg, errs)
		})
	}
}
