package rollout

import (
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/selection"
)

// fleetConfig is a config with one web backend, a postgres and a redis definition and a
// rollout policy; change edits a copy.
func fleetConfig(t *testing.T, change func(*orchconfig.Config)) Revision {
	t.Helper()
	cfg := &orchconfig.Config{
		APIVersion: orchconfig.APIVersion, Kind: orchconfig.Kind,
		Profiles: []orchconfig.Profile{{Name: "web-service", Backends: []orchconfig.Backend{{BackendID: "web", RuntimeClass: "kubernetes", Version: "1.0.0",
			Template: orchconfig.Template{Kind: "manifests", Ref: "oci://r.example/t@sha256:" + strings.Repeat("a", 64)}}}}},
		Defaults: orchconfig.Defaults{Profile: "web-service"},
		Provisioners: []orchconfig.Provisioner{
			{URI: "template://postgres", Type: "postgres", State: "v: 1"},
			{URI: "template://redis", Type: "redis", State: "v: 1"},
		},
		Rollout: &orchconfig.RolloutPolicy{Waves: []string{"1", "100%"}},
	}
	if change != nil {
		change(cfg)
	}
	sel, err := selection.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return Revision{Config: cfg, Selector: sel}
}

// fleetWorkload is a Workload in ns with labels ("k=v") and resources ("db:postgres",
// "db:postgres:main" with an id).
func fleetWorkload(ns, name string, labels []string, resources ...string) *scorev1b1.Workload {
	w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}},
		Spec: scorev1b1.WorkloadSpec{Containers: map[string]scorev1b1.Container{"main": {Image: "nginx"}}}}
	for _, l := range labels {
		k, v, _ := strings.Cut(l, "=")
		w.Labels[k] = v
	}
	for _, r := range resources {
		parts := strings.Split(r, ":")
		res := scorev1b1.Resource{Type: parts[1], Params: &apiextensionsv1.JSON{Raw: []byte(`{}`)}}
		if len(parts) > 2 {
			res.ID = &parts[2]
		}
		if w.Spec.Resources == nil {
			w.Spec.Resources = map[string]scorev1b1.Resource{}
		}
		w.Spec.Resources[parts[0]] = res
	}
	return w
}

func TestWaves(t *testing.T) {
	base := fleetConfig(t, nil)
	newTemplate := fleetConfig(t, func(c *orchconfig.Config) {
		c.Profiles[0].Backends[0].Template.Ref = "oci://r.example/t@sha256:" + strings.Repeat("b", 64)
	})
	newPostgres := func(change func(*orchconfig.Config)) Revision {
		return fleetConfig(t, func(c *orchconfig.Config) {
			c.Provisioners[0].State = "v: 2"
			if change != nil {
				change(c)
			}
		})
	}
	onlyTiming := fleetConfig(t, func(c *orchconfig.Config) {
		c.Profiles[0].Backends[0].Rollout = &orchconfig.RolloutTiming{BakeTime: "10m"}
		c.Provisioners[0].Rollout = &orchconfig.RolloutTiming{BakeTime: "10m"}
	})
	fleet := []*scorev1b1.Workload{
		fleetWorkload("shop", "web", []string{"env=prod"}, "db:postgres"),
		fleetWorkload("shop", "cache", []string{"env=dev"}, "kv:redis"),
		fleetWorkload("shop", "plain", []string{"env=staging"}),
		fleetWorkload("blog", "api", []string{"env=dev"}, "db:postgres:main"),
		fleetWorkload("blog", "admin", []string{"env=prod"}, "db:postgres:main"),
		fleetWorkload("blog", "worker", nil, "db:postgres:main", "kv:redis"),
	}
	ordered := func(o *orchconfig.RolloutOrder, waves ...string) func(*orchconfig.Config) {
		return func(c *orchconfig.Config) { c.Rollout.OrderBy, c.Rollout.Waves = o, waves }
	}
	for _, tc := range []struct {
		name   string
		to     Revision
		fleet  Fleet
		waves  [][]string // each wave's Workloads, sorted; nil entries are not checked
		checks func(t *testing.T, waves []scorev1b1.RolloutWave)
	}{
		{name: "a template change affects every Workload its backend renders", to: newTemplate, fleet: Fleet{Workloads: fleet},
			checks: func(t *testing.T, waves []scorev1b1.RolloutWave) {
				if len(waves) != 2 || len(waves[0].Workloads) != 1 || len(waves[1].Workloads) != 5 {
					t.Fatalf("waves %+v", waves)
				}
			}},
		// A first wave of two: shop/web ranks first, and any second is a sharer of blog's
		// database, which takes the others with it.
		{name: "a provisioner change affects the Workloads it serves, sharers of an instance together", to: newPostgres(ordered(nil, "2", "100%")), fleet: Fleet{Workloads: fleet},
			checks: func(t *testing.T, waves []scorev1b1.RolloutWave) {
				var all []string
				for _, w := range waves {
					all = append(all, w.Workloads...)
				}
				slices.Sort(all)
				if want := []string{"blog/admin", "blog/api", "blog/worker", "shop/web"}; !slices.Equal(all, want) {
					t.Fatalf("affected %v, want %v", all, want)
				}
				for _, w := range waves {
					if n := countPrefix(w.Workloads, "blog/"); n != 0 && n != 3 {
						t.Fatalf("the sharers of blog's main database are split: %+v", waves)
					}
				}
			}},
		{name: "a rollout timing alone affects nothing", to: onlyTiming, fleet: Fleet{Workloads: fleet}, waves: nil,
			checks: func(t *testing.T, waves []scorev1b1.RolloutWave) {
				if len(waves) != 0 {
					t.Fatalf("waves %+v", waves)
				}
			}},
		{name: "pinned Workloads are in no wave", to: newTemplate, fleet: Fleet{Workloads: fleet, Pins: map[string]string{"shop/web": "sha256:x"}},
			checks: func(t *testing.T, waves []scorev1b1.RolloutWave) {
				if WaveOf(waves, "shop/web") >= 0 || len(waves[0].Workloads)+len(waves[1].Workloads) != 5 {
					t.Fatalf("waves %+v", waves)
				}
			}},
		{name: "ordered by a Workload label: dev, then staging, then the rest",
			to: fleetConfig(t, func(c *orchconfig.Config) {
				c.Profiles[0].Backends[0].Template.Ref = "oci://r.example/t@sha256:" + strings.Repeat("b", 64)
				ordered(&orchconfig.RolloutOrder{Label: "env", Values: []string{"dev", "staging"}}, "2", "3", "100%")(c)
			}), fleet: Fleet{Workloads: fleet},
			waves: [][]string{{"blog/api", "shop/cache"}, {"shop/plain"}, {"blog/admin", "blog/worker", "shop/web"}}},
		{name: "ordered by a namespace label",
			to: fleetConfig(t, func(c *orchconfig.Config) {
				c.Profiles[0].Backends[0].Template.Ref = "oci://r.example/t@sha256:" + strings.Repeat("b", 64)
				ordered(&orchconfig.RolloutOrder{NamespaceLabel: "tier", Values: []string{"internal"}}, "3", "100%")(c)
			}), fleet: Fleet{Workloads: fleet, NamespaceLabels: map[string]map[string]string{"blog": {"tier": "internal"}, "shop": {"tier": "public"}}},
			waves: [][]string{{"blog/admin", "blog/api", "blog/worker"}, {"shop/cache", "shop/plain", "shop/web"}}},
		{name: "a group takes its wave whole", to: newPostgres(ordered(nil, "1", "100%")), fleet: Fleet{Workloads: fleet[3:]},
			waves: [][]string{{"blog/admin", "blog/api", "blog/worker"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, waves := Waves(tc.fleet, base, tc.to)
			total := 0
			for _, w := range waves {
				total += len(w.Workloads)
			}
			if total != n {
				t.Fatalf("%d affected, %d in waves", n, total)
			}
			if tc.waves != nil {
				var got [][]string
				for _, w := range waves {
					ks := slices.Clone(w.Workloads)
					slices.Sort(ks)
					got = append(got, ks)
				}
				if !slices.EqualFunc(got, tc.waves, slices.Equal) {
					t.Fatalf("waves %v, want %v", got, tc.waves)
				}
			}
			if tc.checks != nil {
				tc.checks(t, waves)
			}
			// scorectl and the controller list the fleet in different orders: the same waves.
			reversed := tc.fleet
			reversed.Workloads = slices.Clone(tc.fleet.Workloads)
			slices.Reverse(reversed.Workloads)
			if _, again := Waves(reversed, base, tc.to); !slices.EqualFunc(again, waves, func(a, b scorev1b1.RolloutWave) bool { return slices.Equal(a.Workloads, b.Workloads) }) {
				t.Fatalf("the waves depend on the listing order: %v / %v", waves, again)
			}
		})
	}
}

func countPrefix(keys []string, prefix string) int {
	n := 0
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}

func TestTiming(t *testing.T) {
	to := fleetConfig(t, func(c *orchconfig.Config) {
		c.Rollout.RolloutTiming = orchconfig.RolloutTiming{BakeTime: "1m", ProgressDeadline: "5m"}
		c.Profiles[0].Backends[0].Rollout = &orchconfig.RolloutTiming{BakeTime: "2m"}
		c.Provisioners[0].Rollout = &orchconfig.RolloutTiming{BakeTime: "30s", ProgressDeadline: "20m"}
	})
	for _, tc := range []struct {
		w              *scorev1b1.Workload
		bake, deadline time.Duration
	}{
		{fleetWorkload("a", "plain", nil), 2 * time.Minute, 5 * time.Minute},              // the backend's longer bake
		{fleetWorkload("a", "db", nil, "db:postgres"), 2 * time.Minute, 20 * time.Minute}, // and postgres's longer deadline; its shorter bake does not shorten
		{fleetWorkload("a", "kv", nil, "kv:redis"), 2 * time.Minute, 5 * time.Minute},
	} {
		if bake, deadline := Timing(tc.w, to, ""); bake != tc.bake || deadline != tc.deadline {
			t.Errorf("%s: %s/%s, want %s/%s", tc.w.Name, bake, deadline, tc.bake, tc.deadline)
		}
	}
}

func TestGateExpr(t *testing.T) {
	w := fleetWorkload("shop", "web", []string{"tier=gold"})
	objs := []scorev1b1.AppliedObject{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Health: scorev1b1.HealthCurrent}, {APIVersion: "v1", Kind: "Service", Name: "web", Health: scorev1b1.HealthInProgress, Message: "no endpoints"}}
	for _, tc := range []struct {
		expr string
		want bool
	}{
		{"", true},
		{"objects.all(o, o.health == 'Current')", false},
		{"objects.filter(o, o.kind == 'Deployment').all(o, o.health == 'Current')", true},
		{"workload.labels.tier == 'gold' && workload.namespace == 'shop'", true},
		{"workload.labels.missing == 'x'", false}, // cannot be evaluated: does not hold
	} {
		g, err := CompileGate(tc.expr)
		if err != nil {
			t.Fatalf("%q: %v", tc.expr, err)
		}
		if got := g.Holds(objs, w); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.expr, got, tc.want)
		}
	}
	if _, err := CompileGate("objects.size()"); err == nil {
		t.Fatal("a gate that is not a bool compiled")
	}
}

func TestMemberOf(t *testing.T) {
	to := fleetConfig(t, nil)
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	at := func(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }
	workload := func(reason scorev1b1.Reason, since int) *scorev1b1.Workload {
		w := fleetWorkload("shop", "web", nil)
		w.Generation = 2
		w.Status.Conditions = []metav1.Condition{{Type: scorev1b1.ConditionReady, Status: metav1.ConditionTrue, Reason: string(reason), ObservedGeneration: 2, LastTransitionTime: at(since)}}
		return w
	}
	// plan is a copy's plan (web, web.1, ...) rendered from revision, reported on unless
	// behind, its objects healthy since the given second (or in progress: healthy false).
	plan := func(name, revision string, behind, healthy bool, since int) *scorev1b1.WorkloadPlan {
		p := &scorev1b1.WorkloadPlan{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 3}, Spec: scorev1b1.WorkloadPlanSpec{ConfigRevision: revision}}
		p.Status.ObservedGeneration = 3
		if behind {
			p.Status.ObservedGeneration = 2
		}
		health, status := scorev1b1.HealthCurrent, metav1.ConditionTrue
		if !healthy {
			health, status = scorev1b1.HealthInProgress, metav1.ConditionFalse
		}
		p.Status.Objects = []scorev1b1.AppliedObject{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Cluster: name, Health: health}}
		p.Status.Conditions = []metav1.Condition{{Type: scorev1b1.PlanConditionHealthy, Status: status, ObservedGeneration: 3, LastTransitionTime: at(since)}}
		return p
	}
	everyDeployment := "objects.filter(o, o.kind == 'Deployment').all(o, o.health == 'Current')"
	for _, tc := range []struct {
		name     string
		w        *scorev1b1.Workload
		plans    []*scorev1b1.WorkloadPlan
		gate     string
		revision string
		settled  bool
		ready    bool
		since    int
	}{
		{"one copy, healthy", workload(scorev1b1.ReasonSucceeded, 10), []*scorev1b1.WorkloadPlan{plan("web", "r2", false, true, 20)}, "", "r2", true, true, 20},
		{"no plan yet", workload(scorev1b1.ReasonSucceeded, 10), nil, "", "", false, true, 10},
		{"degraded is not healthy", workload(scorev1b1.ReasonRuntimeDegraded, 10), []*scorev1b1.WorkloadPlan{plan("web", "r2", false, true, 20)}, "", "r2", true, false, 20},
		{"Ready while the new version rolls out behind the old is not healthy", workload(scorev1b1.ReasonSucceeded, 10), []*scorev1b1.WorkloadPlan{plan("web", "r2", false, false, 30)}, "", "r2", true, false, 30},
		{"two copies from one revision, healthy", workload(scorev1b1.ReasonSucceeded, 40), []*scorev1b1.WorkloadPlan{plan("web", "r2", false, true, 20), plan("web.1", "r2", false, true, 30)}, "", "r2", true, true, 40},
		{"a copy still on the previous revision", workload(scorev1b1.ReasonSucceeded, 10), []*scorev1b1.WorkloadPlan{plan("web", "r2", false, true, 20), plan("web.1", "r1", false, true, 30)}, "", "", true, true, 30},
		{"a copy not reported on", workload(scorev1b1.ReasonSucceeded, 10), []*scorev1b1.WorkloadPlan{plan("web", "r2", false, true, 20), plan("web.1", "r2", true, true, 30)}, "", "r2", false, true, 30},
		{"a copy not healthy", workload(scorev1b1.ReasonSucceeded, 10), []*scorev1b1.WorkloadPlan{plan("web", "r2", false, true, 20), plan("web.1", "r2", false, false, 30)}, "", "r2", true, false, 30},
		{"the gate reads every copy's objects", workload(scorev1b1.ReasonSucceeded, 10), []*scorev1b1.WorkloadPlan{plan("web", "r2", false, true, 20), plan("web.1", "r2", false, true, 30)}, "objects.size() == 2 && " + everyDeployment, "r2", true, true, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := CompileGate(tc.gate)
			if err != nil {
				t.Fatal(err)
			}
			m := MemberOf("shop/web", tc.w, tc.plans, to, "", g)
			if m.Revision != tc.revision || m.Settled != tc.settled || m.Ready != tc.ready || !m.Since.Equal(at(tc.since).Time) {
				t.Errorf("revision %q settled %v ready %v since %s, want %q %v %v %s", m.Revision, m.Settled, m.Ready, m.Since, tc.revision, tc.settled, tc.ready, at(tc.since).Time)
			}
		})
	}
}
