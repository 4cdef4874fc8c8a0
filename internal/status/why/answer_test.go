package why

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
)

// resolve reads, as scorectl why does for a tenant, what resolving tr's probes names until it
// names nothing, and returns tr resolved.
func (w world) resolve(t *testing.T, tr scorev1b1.Trace) scorev1b1.Trace {
	t.Helper()
	obs := Observed{}
	made := 0
	for reads := Reads(tr, obs); len(reads) > 0; reads = Reads(tr, obs) {
		for _, r := range reads {
			if _, done := obs[r]; done {
				t.Fatalf("Reads named %+v again", r)
			}
			obs[r] = w.read(r)
			made++
		}
		if made > MaxReads {
			t.Fatalf("more than %d reads", MaxReads)
		}
	}
	return Resolve(tr, obs)
}

// A tenant's trace of a Workload with nothing of another namespace in its way says what a
// platform engineer's says, word for word (where the config is kept aside): the control plane
// answers the decisions and the Workload's own objects, the tenant's rights read the rest.
func TestATenantSeesWhatThePlatformSees(t *testing.T) {
	for _, tc := range wayCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			in, wd := tc.setup(t)
			in.ConfigSource = ""
			platform, _ := wd.observe(t, in)
			var want bytes.Buffer
			if err := Explain(&want, platform); err != nil {
				t.Fatal(err)
			}
			// The orchestrator holds the namespace; the tenant reads the objects in the way.
			in.Observed = Observed{NamespaceRead(in): wd.read(NamespaceRead(in))}
			answer, err := Answer(in)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			Print(&got, in.Workload.Namespace, in.Workload.Name, wd.resolve(t, answer))
			if got.String() != want.String() {
				t.Fatalf("the tenant's trace:\n%s\nthe platform's:\n%s", got.String(), want.String())
			}
		})
	}
}

// shared is a Workload web in shop whose dependency db is an instance the platform shares from
// team-a, which another Workload there (owner) consumes too.
func shared(conds ...string) (*scorev1b1.Workload, scorev1b1.ResourceClaim) {
	w := workloadIn(map[string]scorev1b1.Resource{"db": {Type: "postgres", Class: ptr.To("shared"), ID: ptr.To("main")}}, conds...)
	w.Annotations = map[string]string{scorev1b1.AnnotationProfile: "web-service"}
	w.Status.Claims = []scorev1b1.ClaimSummary{{Key: "db", Phase: scorev1b1.ClaimPhaseBinding, Reason: scorev1b1.ReasonClaimPending, Message: `Dependency "db" is being provisioned.`}}
	c := claimOf(w, "db", "postgres", scorev1b1.ClaimPhaseBinding, "Waiting for StatefulSet team-a/pg-main-0a1b2c (owner's database): Ready: 0/1.",
		scorev1b1.AppliedObject{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "team-a", Name: "pg-main-0a1b2c", Health: "InProgress", Message: "Ready: 0/1 (owner)"},
		scorev1b1.AppliedObject{APIVersion: "v1", Kind: "Service", Namespace: "team-a", Name: "pg-main-0a1b2c", Health: "Current"},
		scorev1b1.AppliedObject{APIVersion: "gateway.networking.k8s.io/v1", Kind: "HTTPRoute", Namespace: "team-a", Name: "owner-route", Health: "Current"})
	c.Status.InstanceNamespace = "team-a"
	return w, c
}

// What a tenant's answer may contain: what concerns its Workload, in its namespace; never an
// object of another namespace (a shared instance's), the provisioner's words about them, the
// quotas of the namespace that shares it, the clusters the Workload may not run on, or where
// the platform keeps its config. Each case's platform trace (the control) names what the
// tenant's leaves out.
func TestAnswerKeepsToTheWorkloadsNamespace(t *testing.T) {
	placed, err := orchconfig.Parse([]byte(`apiVersion: score.dev/v1b1
kind: OrchestratorConfig
profiles:
  - name: web-service
    backends:
      - backendId: k8s-members
        runtimeClass: kubernetes
        version: 1.0.0
        template: {kind: manifests, ref: "oci://registry.example/web@sha256:0000000000000000000000000000000000000000000000000000000000000000"}
        placement: {clusterSelector: {matchLabels: {env: prod}}}
provisioners:
  - {uri: "template://dev/postgres", type: postgres, outputs: "host: x"}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		in   func() Input
		// platform must appear in the platform's trace, and nowhere in the tenant's answer;
		// tenant must appear in the answer.
		platform, tenant []string
	}{{
		name: "a claim whose instance is shared from another namespace",
		in: func() Input {
			w, c := shared("InputsValid=True/Succeeded", "ClaimsReady=False/ClaimPending", "RuntimeReady=False/ClaimPending", "Ready=False/ClaimPending")
			return Input{Workload: w, Config: config(t), Claims: []scorev1b1.ResourceClaim{c}}
		},
		platform: []string{"team-a", "pg-main-0a1b2c", "owner"},
		tenant: []string{
			`ResourceClaim shop/web-db-1a2b3c (dependency db)`,
			`Binding — Dependency \"db\" is being provisioned. (its instance is shared from another namespace)`,
			"1 object(s) outside namespace shop",
		},
	}, {
		name: "a shared instance refused by the quota of the namespace that shares it",
		in: func() Input {
			w, c := shared("InputsValid=True/Succeeded", "ClaimsReady=False/QuotaExceeded", "RuntimeReady=False/ClaimPending", "Ready=False/QuotaExceeded")
			c.Status.Phase, c.Status.Reason, c.Status.Resources = scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonQuotaExceeded, nil
			return Input{Workload: w, Config: config(t), Claims: []scorev1b1.ResourceClaim{c}}
		},
		platform: []string{"ResourceQuotas in team-a"},
		tenant:   []string{"(its instance is shared from another namespace)"},
	}, {
		name: "an endpoint that waits for the route of another namespace's instance",
		in: func() Input {
			w, c := shared("InputsValid=True/Succeeded", "ClaimsReady=True/Succeeded", "RuntimeReady=False/NetworkUnavailable", "Ready=False/NetworkUnavailable")
			c.Status.Phase, c.Status.Message = scorev1b1.ClaimPhaseBound, ""
			c.Status.OutputsAvailable, c.Status.Resources = true, c.Status.Resources[1:]
			return Input{Workload: w, Config: config(t), Claims: []scorev1b1.ResourceClaim{c}, Plan: planOf(w, scorev1b1.PlanPhaseProjected, "")}
		},
		platform: []string{"team-a/owner-route"},
	}, {
		name: "a placement on the clusters that match, the others left out",
		in: func() Input {
			w := workloadIn(nil, "InputsValid=True/Succeeded", "ClaimsReady=True/Succeeded", "RuntimeReady=False/RuntimeSelecting", "Ready=False/RuntimeSelecting")
			w.Annotations = map[string]string{scorev1b1.AnnotationProfile: "web-service"}
			return Input{Workload: w, Config: placed, Clusters: map[string]clusters.Status{
				"prod-1":          {Labels: map[string]string{"env": "prod"}, Reachable: true},
				"team-a-isolated": {Labels: map[string]string{"env": "team-a"}, Reachable: true},
			}}
		},
		platform: []string{"team-a-isolated"},
		tenant:   []string{"prod-1", `"onlyMatching":true`},
	}, {
		name: "a config that offers no backend, without where it is kept",
		in: func() Input {
			w := workloadIn(nil, "InputsValid=True/Succeeded", "ClaimsReady=True/Succeeded", "RuntimeReady=False/RuntimeSelecting", "Ready=False/RuntimeSelecting")
			w.Annotations = map[string]string{scorev1b1.AnnotationProfile: "web-service", scorev1b1.AnnotationRequirements: "gpu"}
			return Input{Workload: w, Config: config(t), ConfigSource: "score-system/orchestrator-config"}
		},
		platform: []string{"score-system/orchestrator-config"},
		tenant:   []string{"no backend of profile web-service fits this Workload"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			// The platform's trace, its probes not read: what a reader would read of it too.
			platform, err := Compute(tc.in())
			if err != nil {
				t.Fatal(err)
			}
			control, _ := json.Marshal(platform)
			answer, err := Answer(tc.in())
			if err != nil {
				t.Fatal(err)
			}
			raw, err := json.Marshal(answer)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.platform {
				if !strings.Contains(string(control), s) {
					t.Errorf("the control: the platform's trace does not say %q:\n%s", s, control)
				}
				if strings.Contains(string(raw), s) {
					t.Errorf("the tenant's answer says %q:\n%s", s, raw)
				}
			}
			for _, s := range tc.tenant {
				if !strings.Contains(string(raw), s) {
					t.Errorf("the tenant's answer does not say %q:\n%s", s, raw)
				}
			}
			for _, b := range answer.InTheWay {
				if b.Probe != nil && b.Probe.Namespace != "shop" {
					t.Errorf("a probe of another namespace: %+v", b.Probe)
				}
			}
		})
	}
}

// However large the Workload, the config and what is in the way, an answer stays within its
// API type's bounds, cut at a character's boundary.
func TestAnswerIsBounded(t *testing.T) {
	doc := "apiVersion: score.dev/v1b1\nkind: OrchestratorConfig\nprofiles:\n  - name: web-service\n    backends:\n"
	for i := range 40 {
		doc += fmt.Sprintf("      - {backendId: b-%02d-%s, runtimeClass: kubernetes, version: 1.0.%d, template: {kind: manifests, ref: \"oci://r.example/w@sha256:0000000000000000000000000000000000000000000000000000000000000000\"}, constraints: {regions: [%s]}}\n",
			i, strings.Repeat("x", 40), i, strings.Repeat("é", 300))
	}
	doc += "provisioners:\n  - {uri: \"template://dev/postgres\", type: postgres, outputs: \"host: x\"}\n"
	cfg, err := orchconfig.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	resources := map[string]scorev1b1.Resource{}
	for i := range 64 {
		resources[fmt.Sprintf("db-%02d", i)] = scorev1b1.Resource{Type: "postgres"}
	}
	w := workloadIn(resources, "InputsValid=True/Succeeded", "ClaimsReady=False/ClaimPending", "RuntimeReady=False/ClaimPending", "Ready=False/ClaimPending")
	w.Annotations = map[string]string{scorev1b1.AnnotationProfile: "web-service"}
	w.Status.Conditions[3].Message = strings.Repeat("ü", 50_000)
	var claims []scorev1b1.ResourceClaim
	for key := range resources {
		var objs []scorev1b1.AppliedObject
		for j := range 20 {
			objs = append(objs, scorev1b1.AppliedObject{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: ns, Name: fmt.Sprintf("%s-%02d-%s", key, j, strings.Repeat("n", 200)), Health: "InProgress", Message: strings.Repeat("m", 5000)})
		}
		claims = append(claims, claimOf(w, key, "postgres", scorev1b1.ClaimPhaseBinding, strings.Repeat("the provisioner's words ", 1000), objs...))
	}
	answer, err := Answer(Input{Workload: w, Config: cfg, Claims: claims, Region: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(answer)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > 80<<10 {
		t.Errorf("the answer is %d bytes", len(raw))
	}
	t.Logf("the largest answer: %d bytes", len(raw))
	if n := len(answer.Backends); n != scorev1b1.TraceMaxCandidates+1 || !strings.HasPrefix(answer.Backends[n-1].Why, "24 more backends") {
		t.Errorf("%d backends, the last %+v", n, answer.Backends[n-1])
	}
	if n := len(answer.InTheWay); n != scorev1b1.TraceMaxBlockers || !strings.HasSuffix(answer.InTheWay[n-1].What, "more lines") {
		t.Errorf("%d lines, the last %+v", n, answer.InTheWay[n-1])
	}
	texts := []string{answer.Ready.Message, answer.Backends[0].Why}
	for _, b := range answer.InTheWay {
		texts = append(texts, b.What, b.Says)
	}
	for _, s := range texts {
		if !utf8.ValidString(s) || len(s) > scorev1b1.TraceMaxMessage {
			t.Fatalf("a text of %d bytes, valid UTF-8 %v: %.80q", len(s), utf8.ValidString(s), s)
		}
	}
	if len(answer.Ready.Message) != scorev1b1.TraceMaxMessage-1 || len(answer.Backends[0].Why) > scorev1b1.TraceMaxText {
		t.Errorf("the Ready message is %d bytes, a backend's reason %d", len(answer.Ready.Message), len(answer.Backends[0].Why))
	}
}

// What becomes of a WorkloadTrace: answered once, removed a minute after; beyond the
// namespace's bound, removed unanswered.
func TestStepFor(t *testing.T) {
	now := metav1.Unix(1000, 0)
	request := func(name string, created int64, answeredAt ...int64) scorev1b1.WorkloadTrace {
		r := scorev1b1.WorkloadTrace{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.Unix(created, 0)}}
		for _, at := range answeredAt {
			r.Status.Conditions = []metav1.Condition{{Type: scorev1b1.TraceConditionAnswered, Status: metav1.ConditionTrue, LastTransitionTime: metav1.Unix(at, 0)}}
		}
		return r
	}
	many := func(n int, created int64, answered bool) []scorev1b1.WorkloadTrace {
		var out []scorev1b1.WorkloadTrace
		for i := range n {
			r := request(fmt.Sprintf("r-%02d", i), created)
			if answered {
				r = request(fmt.Sprintf("r-%02d", i), created, created)
			}
			out = append(out, r)
		}
		return out
	}
	deleting := many(scorev1b1.MaxWorkloadTraces, 900, false)
	for i := range deleting {
		deleting[i].DeletionTimestamp = &now
	}
	for _, tc := range []struct {
		name      string
		t         scorev1b1.WorkloadTrace
		namespace []scorev1b1.WorkloadTrace
		want      Step
	}{
		{name: "alone: answered", t: request("web-a", 990), want: Step{Answer: true}},
		{name: "seven ahead: answered", t: request("web-a", 990), namespace: many(scorev1b1.MaxWorkloadTraces-1, 900, false), want: Step{Answer: true}},
		{name: "eight created before: removed", t: request("web-a", 990), namespace: many(scorev1b1.MaxWorkloadTraces, 900, false), want: Step{Remove: true}},
		{name: "eight answered, created after it: removed", t: request("web-a", 800), namespace: many(scorev1b1.MaxWorkloadTraces, 900, true), want: Step{Remove: true}},
		{name: "eight created after it, not answered: answered", t: request("web-a", 800), namespace: many(scorev1b1.MaxWorkloadTraces, 900, false), want: Step{Answer: true}},
		{name: "the same second: by name", t: request("a-first", 900), namespace: many(scorev1b1.MaxWorkloadTraces, 900, false), want: Step{Answer: true}},
		{name: "eight being deleted do not count", t: request("web-a", 990), namespace: deleting, want: Step{Answer: true}},
		{name: "answered 20 s ago: removed in 40 s", t: request("web-a", 970, 980), want: Step{After: KeepAnswered - 20e9}},
		{name: "answered a minute ago: removed", t: request("web-a", 930, 940), want: Step{Remove: true}},
		{name: "answered, among many: kept its minute", t: request("web-a", 990, 995), namespace: many(20, 900, false), want: Step{After: KeepAnswered - 5e9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StepFor(&tc.t, append(tc.namespace, tc.t), now.Time, KeepAnswered); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
