package selection

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// Builders.

type wlOpt func(*scorev1b1.Workload)

func workload(opts ...wlOpt) *scorev1b1.Workload {
	w := &scorev1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a"},
		Spec:       scorev1b1.WorkloadSpec{Containers: map[string]scorev1b1.Container{"main": {Image: "nginx"}}},
	}
	for _, o := range opts {
		o(w)
	}
	return w
}

func withLabel(k, v string) wlOpt { return func(w *scorev1b1.Workload) { setMap(&w.Labels, k, v) } }
func withAnnotation(k, v string) wlOpt {
	return func(w *scorev1b1.Workload) { setMap(&w.Annotations, k, v) }
}
func withNamespace(ns string) wlOpt { return func(w *scorev1b1.Workload) { w.Namespace = ns } }
func withRequests(cpu, memory string) wlOpt {
	return func(w *scorev1b1.Workload) {
		c := w.Spec.Containers["main"]
		c.Resources = &scorev1b1.ContainerResources{Requests: &scorev1b1.ResourcesLimits{CPU: ptr.To(cpu), Memory: ptr.To(memory)}}
		w.Spec.Containers["main"] = c
	}
}
func withPort() wlOpt {
	return func(w *scorev1b1.Workload) {
		w.Spec.Service = &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"web": {Port: 80}}}
	}
}

func setMap(m *map[string]string, k, v string) {
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[k] = v
}

func backend(id string, priority int, version string, c ...func(*orchconfig.Constraints)) orchconfig.Backend {
	b := orchconfig.Backend{BackendID: id, RuntimeClass: "kubernetes", Priority: priority, Version: version,
		Template: orchconfig.Template{Kind: "manifests", Ref: "oci://r.example/t@sha256:" + strings.Repeat("a", 64)}}
	for _, f := range c {
		f(&b.Constraints)
	}
	return b
}

func features(f ...string) func(*orchconfig.Constraints) {
	return func(c *orchconfig.Constraints) { c.Features = f }
}
func labelSelector(k, v string) func(*orchconfig.Constraints) {
	return func(c *orchconfig.Constraints) {
		c.Selectors = append(c.Selectors, orchconfig.Selector{MatchLabels: map[string]string{k: v}})
	}
}
func cpuRange(r string) func(*orchconfig.Constraints) {
	return func(c *orchconfig.Constraints) { c.Resources.CPU = r }
}
func memoryRange(r string) func(*orchconfig.Constraints) {
	return func(c *orchconfig.Constraints) { c.Resources.Memory = r }
}
func regions(r ...string) func(*orchconfig.Constraints) {
	return func(c *orchconfig.Constraints) { c.Regions = r }
}

func config(web []orchconfig.Backend, mutate ...func(*orchconfig.Config)) *orchconfig.Config {
	cfg := &orchconfig.Config{
		APIVersion: orchconfig.APIVersion, Kind: orchconfig.Kind,
		Profiles: []orchconfig.Profile{
			{Name: "web-service", Backends: web},
			{Name: "batch-job", Backends: []orchconfig.Backend{backend("job-v1", 0, "1.0.0")}},
			{Name: "worker", Backends: []orchconfig.Backend{backend("worker-v1", 0, "1.0.0")}},
		},
		Defaults: orchconfig.Defaults{Profile: "web-service"},
	}
	for _, m := range mutate {
		m(cfg)
	}
	return cfg
}

func TestSelect(t *testing.T) {
	oneWeb := []orchconfig.Backend{backend("web-v1", 0, "1.0.0")}
	cases := []struct {
		name        string
		cfg         *orchconfig.Config
		w           *scorev1b1.Workload
		region      string
		wantProfile string
		wantSource  ProfileSource
		wantBackend string
		wantReason  scorev1b1.Reason
	}{
		{name: "default profile", cfg: config(oneWeb), w: workload(), wantProfile: "web-service", wantSource: ByDefault, wantBackend: "web-v1"},
		{name: "hint wins over everything", cfg: config(oneWeb, withRule("worker", "true")), w: workload(withAnnotation("score.dev/profile", "batch-job")), wantProfile: "batch-job", wantSource: ByHint, wantBackend: "job-v1"},
		{name: "unknown hint is SpecInvalid", cfg: config(oneWeb), w: workload(withAnnotation("score.dev/profile", "function")), wantReason: scorev1b1.ReasonSpecInvalid},
		{name: "rule derives the profile", cfg: config(oneWeb, withRule("worker", "!has(workload.spec.service)")), w: workload(), wantProfile: "worker", wantSource: ByRule, wantBackend: "worker-v1"},
		{name: "rule not matching falls through", cfg: config(oneWeb, withRule("worker", "!has(workload.spec.service)")), w: workload(withPort()), wantProfile: "web-service", wantSource: ByDefault, wantBackend: "web-v1"},
		{name: "first matching rule wins", cfg: config(oneWeb, withRule("batch-job", "true"), withRule("worker", "true")), w: workload(), wantProfile: "batch-job", wantSource: ByRule},
		{name: "rule on labels", cfg: config(oneWeb, withRule("batch-job", `workload.metadata.labels[?"kind"].orValue("") == "job"`)), w: workload(withLabel("kind", "job")), wantProfile: "batch-job", wantSource: ByRule},
		{name: "rule that errors counts as not matching", cfg: config(oneWeb, withRule("worker", `workload.spec.nothing.deeper == 1`)), w: workload(), wantProfile: "web-service", wantSource: ByDefault},
		{name: "rule beats selector", cfg: config(oneWeb, withRule("worker", "true"), withDefaultSelector("batch-job", "kind", "job")), w: workload(withLabel("kind", "job")), wantProfile: "worker", wantSource: ByRule},
		{name: "default selector", cfg: config(oneWeb, withDefaultSelector("batch-job", "kind", "job")), w: workload(withLabel("kind", "job")), wantProfile: "batch-job", wantSource: BySelector},
		{name: "first default selector wins", cfg: config(oneWeb, withDefaultSelector("worker", "kind", "job"), withDefaultSelector("batch-job", "kind", "job")), w: workload(withLabel("kind", "job")), wantProfile: "worker", wantSource: BySelector},
		{name: "default selector not matching", cfg: config(oneWeb, withDefaultSelector("batch-job", "kind", "job")), w: workload(withLabel("kind", "web")), wantProfile: "web-service", wantSource: ByDefault},
		{name: "no default profile", cfg: config(oneWeb, func(c *orchconfig.Config) { c.Defaults.Profile = "" }), w: workload(), wantReason: scorev1b1.ReasonRuntimeSelecting},
		{name: "priority wins over version", cfg: config([]orchconfig.Backend{backend("a", 10, "1.0.0"), backend("b", 5, "9.0.0")}), w: workload(), wantBackend: "a"},
		{name: "higher version wins at equal priority", cfg: config([]orchconfig.Backend{backend("a", 10, "1.0.0"), backend("b", 10, "1.10.0")}), w: workload(), wantBackend: "b"},
		{name: "release above its pre-release", cfg: config([]orchconfig.Backend{backend("a", 0, "2.0.0-rc.1"), backend("b", 0, "2.0.0")}), w: workload(), wantBackend: "b"},
		{name: "pre-releases ordered by SemVer", cfg: config([]orchconfig.Backend{backend("a", 0, "2.0.0-alpha.10"), backend("b", 0, "2.0.0-alpha.9"), backend("c", 0, "2.0.0-alpha")}), w: workload(), wantBackend: "a"},
		{name: "pre-release of a higher version beats a lower release", cfg: config([]orchconfig.Backend{backend("a", 0, "1.9.9"), backend("b", 0, "2.0.0-beta.1")}), w: workload(), wantBackend: "b"},
		{name: "build metadata does not order", cfg: config([]orchconfig.Backend{backend("z", 0, "1.0.0+build.2"), backend("m", 0, "1.0.0+build.1")}), w: workload(), wantBackend: "m"},
		{name: "full tie broken by backendId", cfg: config([]orchconfig.Backend{backend("web-b", 1, "1.0.0"), backend("web-a", 1, "1.0.0")}), w: workload(), wantBackend: "web-a"},
		{name: "required feature filters", cfg: config([]orchconfig.Backend{backend("plain", 100, "1.0.0"), backend("s2z", 1, "1.0.0", features("scale-to-zero"))}), w: workload(withAnnotation("score.dev/requirements", `["scale-to-zero"]`)), wantBackend: "s2z"},
		{name: "requirements as a comma list", cfg: config([]orchconfig.Backend{backend("s2z", 1, "1.0.0", features("scale-to-zero", "gpu"))}), w: workload(withAnnotation("score.dev/requirements", "gpu, scale-to-zero")), wantBackend: "s2z"},
		{name: "unmet requirement leaves no backend", cfg: config(oneWeb), w: workload(withAnnotation("score.dev/requirements", `["gpu"]`)), wantReason: scorev1b1.ReasonRuntimeSelecting},
		{name: "malformed requirements", cfg: config(oneWeb), w: workload(withAnnotation("score.dev/requirements", `["gpu"`)), wantReason: scorev1b1.ReasonSpecInvalid},
		{name: "backend selector matches labels", cfg: config([]orchconfig.Backend{backend("canary", 100, "1.0.0", labelSelector("channel", "canary")), backend("stable", 1, "1.0.0")}), w: workload(withLabel("channel", "canary")), wantBackend: "canary"},
		{name: "backend selector does not match", cfg: config([]orchconfig.Backend{backend("canary", 100, "1.0.0", labelSelector("channel", "canary")), backend("stable", 1, "1.0.0")}), w: workload(), wantBackend: "stable"},
		{name: "namespace-restricted selector", cfg: config([]orchconfig.Backend{backend("team-b-only", 100, "1.0.0", func(c *orchconfig.Constraints) {
			c.Selectors = []orchconfig.Selector{{Namespaces: []string{"team-b"}}}
		}), backend("stable", 1, "1.0.0")}), w: workload(withNamespace("team-b")), wantBackend: "team-b-only"},
		{name: "cpu above the range", cfg: config([]orchconfig.Backend{backend("small", 100, "1.0.0", cpuRange("-1")), backend("big", 1, "1.0.0", cpuRange("1-"))}), w: workload(withRequests("2", "1Gi")), wantBackend: "big"},
		{name: "cpu within the range", cfg: config([]orchconfig.Backend{backend("small", 100, "1.0.0", cpuRange("-1")), backend("big", 1, "1.0.0", cpuRange("1-"))}), w: workload(withRequests("500m", "1Gi")), wantBackend: "small"},
		{name: "memory range bounds are inclusive", cfg: config([]orchconfig.Backend{backend("m", 0, "1.0.0", memoryRange("1Gi-2Gi"))}), w: workload(withRequests("1", "2Gi")), wantBackend: "m"},
		{name: "no requests is zero", cfg: config([]orchconfig.Backend{backend("needs-min", 0, "1.0.0", cpuRange("100m-"))}), w: workload(), wantReason: scorev1b1.ReasonRuntimeSelecting},
		{name: "region admits", cfg: config([]orchconfig.Backend{backend("eu", 100, "1.0.0", regions("eu-west")), backend("any", 1, "1.0.0")}), w: workload(), region: "eu-west", wantBackend: "eu"},
		{name: "region filters", cfg: config([]orchconfig.Backend{backend("eu", 100, "1.0.0", regions("eu-west")), backend("any", 1, "1.0.0")}), w: workload(), region: "us-east", wantBackend: "any"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := s.Select(Input{Workload: tc.w, Region: tc.region})
			if tc.wantReason != "" {
				if r.OK || r.Reason != tc.wantReason {
					t.Fatalf("want failure %s, got ok=%v reason=%s (%s)", tc.wantReason, r.OK, r.Reason, r.Message)
				}
				if r.Message == "" {
					t.Fatal("a failure needs a message")
				}
				return
			}
			if !r.OK {
				t.Fatalf("want a selection, got %s: %s (candidates %+v)", r.Reason, r.Message, r.Candidates)
			}
			if tc.wantProfile != "" && r.Profile != tc.wantProfile {
				t.Errorf("profile: want %s, got %s", tc.wantProfile, r.Profile)
			}
			if tc.wantSource != "" && r.ProfileSource != tc.wantSource {
				t.Errorf("profile source: want %s, got %s (%s)", tc.wantSource, r.ProfileSource, r.ProfileDetail)
			}
			if tc.wantBackend != "" && r.Backend.BackendID != tc.wantBackend {
				t.Errorf("backend: want %s, got %s (candidates %+v)", tc.wantBackend, r.Backend.BackendID, r.Candidates)
			}
		})
	}
}

func withRule(profile, when string) func(*orchconfig.Config) {
	return func(c *orchconfig.Config) {
		c.ProfileRules = append(c.ProfileRules, orchconfig.ProfileRule{Profile: profile, When: when})
	}
}

func withDefaultSelector(profile, k, v string) func(*orchconfig.Config) {
	return func(c *orchconfig.Config) {
		c.Defaults.Selectors = append(c.Defaults.Selectors, orchconfig.ProfileSelector{Profile: profile, Selector: orchconfig.Selector{MatchLabels: map[string]string{k: v}}})
	}
}

// The trace tells every candidate's fate: its rejection or its rank.
func TestTrace(t *testing.T) {
	cfg := config([]orchconfig.Backend{
		backend("gpu", 100, "1.0.0", labelSelector("accelerator", "gpu")),
		backend("old", 10, "1.0.0"),
		backend("new", 10, "1.2.0"),
	})
	s, _ := New(cfg)
	r := s.Select(Input{Workload: workload()})
	want := []Candidate{
		{BackendID: "gpu", Rejected: "selectors: no selector matches the workload's labels and namespace"},
		{BackendID: "old", Rank: 2},
		{BackendID: "new", Rank: 1},
	}
	if len(r.Candidates) != len(want) {
		t.Fatalf("got %+v", r.Candidates)
	}
	for i, c := range r.Candidates {
		if c != want[i] {
			t.Errorf("candidate %d: want %+v, got %+v", i, want[i], c)
		}
	}
	if r.Backend.BackendID != "new" || r.ProfileDetail != "defaults.profile" {
		t.Errorf("got backend %s by %s", r.Backend.BackendID, r.ProfileDetail)
	}
}

func TestSelectionIsDeterministic(t *testing.T) {
	cfg := config([]orchconfig.Backend{backend("c", 1, "1.0.0"), backend("a", 1, "1.0.0"), backend("b", 1, "1.0.0")})
	s, _ := New(cfg)
	for i := 0; i < 50; i++ {
		if r := s.Select(Input{Workload: workload()}); r.Backend.BackendID != "a" {
			t.Fatalf("run %d picked %s", i, r.Backend.BackendID)
		}
	}
}
