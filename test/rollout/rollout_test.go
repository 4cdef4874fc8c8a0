// Package rollout takes config changes to a fleet of Workloads on a simulated cluster (real
// kube-apiserver, etcd, kube-controller-manager, kube-scheduler and kwok nodes) under a rollout
// policy: a good change goes through every wave, paused, resumed and across a restart of the
// controllers without a wave repeated or skipped; a change that breaks health reaches the
// first wave only, halts and is pinned back while a Workload edited meanwhile goes Ready at
// once, and is aborted with scorectl; and with two shards, one rollout takes waves across both
// and a halt pins back the Workloads of both (TestShardedRollout).
package rollout

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/rollout"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv/inprocess"
)

var (
	ctx        = context.Background()
	c          client.Client
	cfg        *rest.Config
	kubeconfig string
	scorectl   string
	root       string

	stopControllers func()
)

const ns = "fleet"

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	// Volumes for the redis instances of the provisioner subtest (two).
	return testenv.SimulatedMain(m, testenv.Simulated{Name: "score-rollout", Clusters: map[string]testenv.ClusterSpec{"": {Volumes: 4}}, Install: true},
		func(env *testenv.SimulatedEnv) (func(), error) {
			k := env.Clusters[""]
			root, kubeconfig, cfg, c = env.Root, k.Kubeconfig(), k.Config, k.Client
			var err error
			if scorectl, err = testenv.BuildCommand(env.State, "scorectl"); err != nil {
				return nil, err
			}
			// Three waves: one Workload, half of them, all; a short bake, a deadline a broken
			// change reaches in well under a minute.
			if err := devenv.EditConfig(ctx, c, func(doc map[string]any) error {
				// Workloads labelled ring=canary first; the gate expression holds when every
				// applied object is healthy (what Ready says too: a rollout that completes shows
				// it is evaluated over real plans).
				doc["rollout"] = map[string]any{"waves": []any{"1", "50%", "100%"}, "bakeTime": "3s", "progressDeadline": "40s",
					"orderBy": map[string]any{"label": "ring", "values": []any{"canary"}},
					"gate":    "objects.all(o, o.health == 'Current')"}
				return nil
			}); err != nil {
				return nil, fmt.Errorf("installing: %w", err)
			}
			if err := startControllers(); err != nil {
				return nil, err
			}
			return func() { stopControllers() }, nil
		})
}

func startControllers() error {
	stop, err := inprocess.Start(cfg)
	if err != nil {
		return err
	}
	stopControllers = stop
	return nil
}

func cli(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(scorectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("scorectl %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// editBackends changes every backend of the web-service profile.
func editBackends(t *testing.T, change func(b map[string]any)) {
	t.Helper()
	if err := devenv.EditConfig(ctx, c, func(doc map[string]any) error {
		for _, p := range doc["profiles"].([]any) {
			if pr := p.(map[string]any); pr["name"] == "web-service" {
				for _, b := range pr["backends"].([]any) {
					change(b.(map[string]any))
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// rolloutPasses counts the rollout controller's passes in this process (controller-runtime's
// reconcile counter, which the in-process controllers share with the test).
func rolloutPasses(t *testing.T) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "configrollout" {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// configFile writes the Orchestrator Config the cluster runs into a file of the test's.
func configFile(t *testing.T, name string) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "score-system", Name: "orchestrator-config"}, cm); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(cm.Data["config.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// rolloutNamed waits for the rollout name and returns it once cond holds.
func rolloutNamed(t *testing.T, name, what string, timeout time.Duration, cond func(*scorev1b1.ConfigRollout) error) *scorev1b1.ConfigRollout {
	t.Helper()
	r := &scorev1b1.ConfigRollout{}
	testenv.Eventually(t, timeout, "rollout "+name+" "+what, func() error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: "score-system", Name: name}, r); err != nil {
			return err
		}
		return cond(r)
	})
	return r
}

func phase(want string) func(*scorev1b1.ConfigRollout) error {
	return func(r *scorev1b1.ConfigRollout) error {
		if r.Status.Phase != want {
			return fmt.Errorf("%s at wave %d: %s", r.Status.Phase, r.Status.Wave+1, r.Status.Message)
		}
		return nil
	}
}

func ready(t *testing.T, name string, timeout time.Duration) *scorev1b1.Workload {
	t.Helper()
	w := &scorev1b1.Workload{}
	testenv.Eventually(t, timeout, name+" Ready", func() error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
			return err
		}
		if cond := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady); cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != w.Generation {
			return fmt.Errorf("not Ready: %+v", cond)
		}
		return nil
	})
	return w
}

func planRevision(t *testing.T, name string) string {
	t.Helper()
	p := &scorev1b1.WorkloadPlan{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p.Spec.ConfigRevision
}

// renderedFrom records every Workload whose plan was ever written with revision, until stop.
// Every revision each plan is written with is recorded from the watch's start, and revision
// is asked when seen is called: a plan that moves to a revision and back before the test has
// learnt which one it is (a rollout's first wave, halted at once) is still seen.
func renderedFrom(t *testing.T, revision func() string) (seen func() []string, stop func()) {
	t.Helper()
	return watchRevisions(t, ns, &scorev1b1.WorkloadPlanList{}, func(o client.Object) string {
		if p, ok := o.(*scorev1b1.WorkloadPlan); ok {
			return p.Spec.ConfigRevision
		}
		return ""
	}, revision)
}

// watchRevisions records, from now until stop, every revision (revisionOf) each object of the
// list's kind in namespace was seen with; seen names the objects ever seen with the revision
// it then gives, in no order.
func watchRevisions(t *testing.T, namespace string, list client.ObjectList, revisionOf func(client.Object) string, revision func() string) (seen func() []string, stop func()) {
	t.Helper()
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	watch, err := wc.Watch(wctx, list, client.InNamespace(namespace))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	revisions := map[string]map[string]bool{} // name → revisions seen
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range watch.ResultChan() {
			if o, ok := ev.Object.(client.Object); ok {
				mu.Lock()
				if revisions[o.GetName()] == nil {
					revisions[o.GetName()] = map[string]bool{}
				}
				revisions[o.GetName()][revisionOf(o)] = true
				mu.Unlock()
			}
		}
	}()
	return func() []string {
			want := revision()
			mu.Lock()
			defer mu.Unlock()
			var out []string
			for name, seen := range revisions {
				if want != "" && seen[want] {
					out = append(out, name)
				}
			}
			return out
		}, func() {
			cancel()
			<-done
		}
}

// The shipped web-service template, and the broken one a subtest puts in its place.
const (
	shippedRef = "configmap://score-system/score-templates/web-service.yaml"
	brokenRef  = "configmap://score-system/rollout-broken/web-service.yaml"
)

// shippedDigest is the shipped template's digest, read when it is replaced.
var shippedDigest any

func TestRollouts(t *testing.T) {
	testenv.Create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	names := []string{"web-a", "web-b", "web-c", "web-d", "web-e", "web-f"}
	for _, n := range names {
		w := testenv.Workload(ns, n, testenv.WithPort("http", 80))
		if n == "web-e" {
			w.Labels = map[string]string{"ring": "canary"}
		}
		testenv.Create(t, c, w)
	}
	for _, n := range names {
		ready(t, n, 3*time.Minute)
	}
	first := rolloutNamed(t, "rollout-0001", "completed", time.Minute, phase(scorev1b1.RolloutCompleted))
	stable := first.Spec.To

	t.Run("a good change goes through every wave, paused, resumed and across a restart", func(t *testing.T) {
		oldConfig := configFile(t, "old.yaml")
		// One Workload pinned to the revision it runs: the change passes it by.
		cli(t, "rollout", "pin", "web-f", "-n", ns, stable)
		editBackends(t, func(b map[string]any) {
			if tpl := b["template"].(map[string]any); tpl["values"] != nil {
				tpl["values"].(map[string]any)["replicas"] = 2
			}
		})
		r := rolloutNamed(t, "rollout-0002", "at its second wave", 2*time.Minute, func(r *scorev1b1.ConfigRollout) error {
			if r.Status.Wave < 1 {
				return fmt.Errorf("%s at wave %d: %s", r.Status.Phase, r.Status.Wave+1, r.Status.Message)
			}
			return nil
		})
		if r.Spec.From != stable || r.Status.Affected != 5 || len(r.Status.Waves) != 3 || strings.Join(r.Status.Waves[0].Workloads, ",") != ns+"/web-e" || r.Spec.Pins[ns+"/web-f"] != stable {
			t.Fatalf("the rollout: from %s, %d affected, waves %+v (the ring=canary web-e first)", r.Spec.From, r.Status.Affected, r.Status.Waves)
		}
		// The preview against the cluster says which wave each Workload falls in: the waves
		// the rollout took.
		var diffs []struct {
			Name string `json:"name"`
			Wave int    `json:"wave"`
		}
		out := cli(t, "config", "diff", oldConfig, configFile(t, "new.yaml"), "--cluster", "-n", ns, "--templates", filepath.Join(root, "config", "templates"), "-o", "json")
		if err := json.Unmarshal([]byte(out), &diffs); err != nil || len(diffs) != len(names) {
			t.Fatalf("config diff --cluster: %v\n%s", err, out)
		}
		for _, d := range diffs {
			if want := rollout.WaveOf(r.Status.Waves, d.Name) + 1; d.Wave != want || (want == 0) != (d.Name == ns+"/web-f") {
				t.Errorf("config diff puts %s in wave %d; the rollout in wave %d", d.Name, d.Wave, want)
			}
		}
		cli(t, "rollout", "pause")
		paused := rolloutNamed(t, r.Name, "paused", time.Minute, phase(scorev1b1.RolloutPaused))
		// A restart of the controllers while paused: nothing moves, and it resumes where it was.
		stopControllers()
		if err := startControllers(); err != nil {
			t.Fatal(err)
		}
		// The control: every Workload of the paused wave is rendered from the new revision and
		// has been Ready longer than the bake time — an unpaused rollout would start or finish
		// its bake now — and the restarted rollout controller has run a pass since.
		testenv.Eventually(t, 2*time.Minute, "the paused wave ready to pass", func() error {
			for _, key := range paused.Status.Waves[paused.Status.Wave].Workloads {
				name := strings.TrimPrefix(key, ns+"/")
				if rev := planRevision(t, name); rev != paused.Spec.To {
					return fmt.Errorf("%s rendered from %s", name, rev)
				}
				w := &scorev1b1.Workload{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
					return err
				}
				cond := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
				if cond == nil || cond.Status != metav1.ConditionTrue || time.Since(cond.LastTransitionTime.Time) < 4*time.Second {
					return fmt.Errorf("%s not Ready for longer than the bake time: %+v", name, cond)
				}
			}
			return nil
		})
		passes := rolloutPasses(t)
		nudge := paused.DeepCopy()
		nudge.Annotations = map[string]string{"test.score.dev/nudge": time.Now().Format(time.RFC3339Nano)}
		if err := c.Patch(ctx, nudge, client.MergeFrom(paused)); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, time.Minute, "a pass of the restarted rollout controller", func() error {
			if now := rolloutPasses(t); now <= passes {
				return fmt.Errorf("%v passes, %v before", now, passes)
			}
			return nil
		})
		now := rolloutNamed(t, r.Name, "still paused", time.Second, phase(scorev1b1.RolloutPaused))
		if now.Status.Wave != paused.Status.Wave || now.Status.BakeStarted != nil {
			t.Fatalf("a paused rollout moved: wave %d → %d, bake started %v (a pause stops the bake)", paused.Status.Wave+1, now.Status.Wave+1, now.Status.BakeStarted)
		}
		cli(t, "rollout", "resume")
		// A restart while the last wave is under way resumes it.
		rolloutNamed(t, r.Name, "at its last wave", time.Minute, func(r *scorev1b1.ConfigRollout) error {
			if r.Status.Wave < 2 && r.Status.Phase != scorev1b1.RolloutCompleted {
				return fmt.Errorf("%s at wave %d", r.Status.Phase, r.Status.Wave+1)
			}
			return nil
		})
		stopControllers()
		if err := startControllers(); err != nil {
			t.Fatal(err)
		}
		done := rolloutNamed(t, r.Name, "completed", 3*time.Minute, phase(scorev1b1.RolloutCompleted))
		if rev := planRevision(t, "web-f"); rev != stable {
			t.Fatalf("the pinned web-f rendered from %s, want %s", rev, stable)
		}
		cli(t, "rollout", "pin", "web-f", "-n", ns, "--unpin")
		testenv.Eventually(t, time.Minute, "web-f unpinned follows the rollout", func() error {
			if rev := planRevision(t, "web-f"); rev != done.Spec.To {
				return fmt.Errorf("rendered from %s", rev)
			}
			return nil
		})
		for _, n := range names {
			ready(t, n, time.Minute)
			if rev := planRevision(t, n); rev != done.Spec.To {
				t.Errorf("%s rendered from %s after the rollout, want %s", n, rev, done.Spec.To)
			}
			d := &appsv1.Deployment{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, d); err != nil || *d.Spec.Replicas != 2 {
				t.Errorf("%s: %v replicas, %v", n, d.Spec.Replicas, err)
			}
		}
		// Each wave passed once: none twice, none skipped.
		eachWavePassedOnce(t, r.Name, 3)
		stable = done.Spec.To
	})

	t.Run("a change that breaks health reaches the first wave only, halts and is pinned back", func(t *testing.T) {
		broken := brokenTemplate(t, "rollout-broken")
		sum := sha256.Sum256([]byte(broken))
		var mu sync.Mutex
		target := ""
		seen, stop := renderedFrom(t, func() string { mu.Lock(); defer mu.Unlock(); return target })
		defer stop()
		editBackends(t, func(b map[string]any) {
			if tpl := b["template"].(map[string]any); tpl["ref"] == shippedRef {
				shippedDigest = tpl["digest"]
				tpl["ref"], tpl["digest"] = brokenRef, "sha256:"+hex.EncodeToString(sum[:])
			}
		})
		r := rolloutNamed(t, "rollout-0003", "started", time.Minute, phase(scorev1b1.RolloutProgressing))
		mu.Lock()
		target = r.Spec.To
		mu.Unlock()
		if r.Spec.From != stable {
			t.Fatalf("from %s, want %s", r.Spec.From, stable)
		}
		canary := strings.TrimPrefix(r.Status.Waves[0].Workloads[0], ns+"/")
		// A Workload of a later wave, edited while the canary is under way: rendered at once
		// from the revision it is pinned to, and Ready.
		later := strings.TrimPrefix(r.Status.Waves[2].Workloads[0], ns+"/")
		w := &scorev1b1.Workload{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: later}, w); err != nil {
			t.Fatal(err)
		}
		testenv.WithVar("EDITED", "during the rollout")(w)
		if err := c.Update(ctx, w); err != nil {
			t.Fatal(err)
		}
		ready(t, later, time.Minute)
		if rev := planRevision(t, later); rev != stable {
			t.Fatalf("%s edited mid-rollout rendered from %s, want %s", later, rev, stable)
		}
		halted := rolloutNamed(t, r.Name, "halted", 2*time.Minute, phase(scorev1b1.RolloutHalted))
		if halted.Status.Wave != 0 || strings.Join(halted.Status.Waves[0].Failed, ",") != ns+"/"+canary {
			t.Fatalf("halted at wave %d with %v failed, want wave 1 with %s", halted.Status.Wave+1, halted.Status.Waves[0].Failed, canary)
		}
		// Pinned back: the canary is rendered from the previous revision and Ready again.
		testenv.Eventually(t, time.Minute, "the canary pinned back", func() error {
			if rev := planRevision(t, canary); rev != stable {
				return fmt.Errorf("rendered from %s", rev)
			}
			return nil
		})
		testenv.Eventually(t, 2*time.Minute, "the canary's Deployment back and available", func() error {
			d := &appsv1.Deployment{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: canary}, d); err != nil {
				return err
			}
			p := &scorev1b1.WorkloadPlan{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: canary}, p); err != nil {
				return err
			}
			if len(d.Spec.Template.Spec.NodeSelector) > 0 || d.Status.UpdatedReplicas != *d.Spec.Replicas || d.Status.AvailableReplicas != *d.Spec.Replicas {
				return fmt.Errorf("nodeSelector %v, status %+v; plan %s %+v", d.Spec.Template.Spec.NodeSelector, d.Status, p.Status.Phase, p.Status.Conditions)
			}
			return nil
		})
		ready(t, canary, 2*time.Minute)
		if got := seen(); len(got) != 1 || got[0] != canary {
			t.Fatalf("Workloads rendered from the broken revision: %v, want only %s", got, canary)
		}
		status := cli(t, "rollout", "status")
		if !strings.Contains(status, "Halted") || !strings.Contains(status, canary) {
			t.Fatalf("rollout status:\n%s", status)
		}
		cli(t, "rollout", "abort")
		rolloutNamed(t, r.Name, "aborted", time.Minute, phase(scorev1b1.RolloutAborted))
		for _, n := range names {
			ready(t, n, time.Minute)
			if rev := planRevision(t, n); rev != stable {
				t.Errorf("%s rendered from %s after the abort, want %s", n, rev, stable)
			}
		}
		if got := seen(); len(got) != 1 {
			t.Fatalf("Workloads rendered from the broken revision: %v", got)
		}
	})
	t.Run("a provisioner definition reaches its claims in waves, halts, is pinned back and superseded", func(t *testing.T) {
		// Three Workloads with a redis; two share one instance.
		caches := []string{"cache-a", "cache-b", "cache-c"}
		for _, n := range caches {
			var opts []testenv.ResourceOption
			if n != "cache-c" {
				opts = append(opts, testenv.ResourceID("shared-cache"))
			}
			testenv.Create(t, c, testenv.Workload(ns, n, testenv.WithResource("cache", "redis", opts...)))
		}
		testenv.Eventually(t, 3*time.Minute, "the redis claims Bound", func() error {
			var list scorev1b1.ResourceClaimList
			if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
				return err
			}
			bound := 0
			for _, cl := range list.Items {
				if cl.Spec.Type == "redis" && cl.Status.Phase != scorev1b1.ClaimPhaseBound {
					return fmt.Errorf("claim %s names %s: %s %s (generation %d, observed %d)", cl.Name, cl.Spec.ConfigRevision, cl.Status.Phase, cl.Status.Message, cl.Generation, cl.Status.ObservedGeneration)
				}
				if cl.Spec.Type == "redis" {
					bound++
				}
			}
			if bound != len(caches) {
				return fmt.Errorf("%d redis claims Bound", bound)
			}
			return nil
		})
		for _, n := range caches {
			ready(t, n, 3*time.Minute)
		}
		for _, cl := range redisClaims(t) {
			if cl.Spec.ConfigRevision != stable || cl.Status.ConfigRevision != stable {
				t.Fatalf("claim %s names revision %q, provisioned from %q; want %s", cl.Name, cl.Spec.ConfigRevision, cl.Status.ConfigRevision, stable)
			}
		}
		var mu sync.Mutex
		target := ""
		provisioned, stop := provisionedFrom(t, func() string { mu.Lock(); defer mu.Unlock(); return target })
		defer stop()
		// The web template back to the one the fleet runs (the aborted change is not taken
		// again), and a redis definition that fails.
		editConfig(t, func(doc map[string]any) {
			restoreTemplate(doc)
			redis := provisionerDef(doc, "template://score-dev/redis")
			redis["outputs"] = redis["outputs"].(string) + "broken: {{ fail \"broken on purpose\" }}\n"
		})
		r := rolloutNamed(t, "rollout-0004", "started", time.Minute, phase(scorev1b1.RolloutProgressing))
		mu.Lock()
		target = r.Spec.To
		mu.Unlock()
		if r.Spec.From != stable || r.Status.Affected != 3 {
			t.Fatalf("from %s with %d affected (want %s, the three with a redis): %+v", r.Spec.From, r.Status.Affected, stable, r.Status.Waves)
		}
		if a, b := rollout.WaveOf(r.Status.Waves, ns+"/cache-a"), rollout.WaveOf(r.Status.Waves, ns+"/cache-b"); a != b {
			t.Fatalf("the sharers of one instance in waves %d and %d: %+v", a+1, b+1, r.Status.Waves)
		}
		halted := rolloutNamed(t, r.Name, "halted", 2*time.Minute, phase(scorev1b1.RolloutHalted))
		first := halted.Status.Waves[0].Workloads
		if halted.Status.Wave != 0 || strings.Join(halted.Status.Waves[0].Failed, ",") != strings.Join(first, ",") {
			t.Fatalf("halted at wave %d with %v failed, want wave 1 with %v", halted.Status.Wave+1, halted.Status.Waves[0].Failed, first)
		}
		// Pinned back: the first wave's claims are provisioned from the previous revision
		// again, Bound, and their Workloads Ready.
		testenv.Eventually(t, 2*time.Minute, "the first wave's claims pinned back", func() error {
			for _, cl := range redisClaims(t) {
				if cl.Spec.ConfigRevision != stable || cl.Status.ConfigRevision != stable || cl.Status.Phase != scorev1b1.ClaimPhaseBound || cl.Status.ObservedGeneration != cl.Generation {
					return fmt.Errorf("claim %s: names %s, provisioned from %s, %s: %s", cl.Name, cl.Spec.ConfigRevision, cl.Status.ConfigRevision, cl.Status.Phase, cl.Status.Message)
				}
			}
			return nil
		})
		for _, n := range caches {
			ready(t, n, time.Minute)
		}
		var wantSeen []string
		for _, cl := range redisClaims(t) {
			if slices.Contains(first, ns+"/"+cl.Spec.WorkloadRef.Name) {
				wantSeen = append(wantSeen, cl.Name)
			}
		}
		got := provisioned()
		slices.Sort(got)
		slices.Sort(wantSeen)
		if !slices.Equal(got, wantSeen) {
			t.Fatalf("claims provisioned from the broken definition: %v, want the first wave's only: %v", got, wantSeen)
		}

		// A fixed definition supersedes the halted rollout and goes through every wave.
		editConfig(t, func(doc map[string]any) {
			redis := provisionerDef(doc, "template://score-dev/redis")
			redis["outputs"] = strings.Replace(redis["outputs"].(string), "broken: {{ fail \"broken on purpose\" }}\n", "", 1)
			m := redis["manifests"].(string)
			at := strings.Index(m, "kind: Service")
			at += strings.Index(m[at:], "labels: {") + len("labels: {")
			redis["manifests"] = m[:at] + "tier: cache, " + m[at:]
		})
		rolloutNamed(t, r.Name, "superseded", time.Minute, phase(scorev1b1.RolloutSuperseded))
		done := rolloutNamed(t, "rollout-0005", "completed", 3*time.Minute, func(r *scorev1b1.ConfigRollout) error {
			if err := phase(scorev1b1.RolloutCompleted)(r); err != nil {
				return fmt.Errorf("%w\n%s", err, cacheState(t))
			}
			return nil
		})
		if done.Spec.From != stable || done.Status.Affected != 3 || len(done.Status.Waves) < 2 {
			t.Fatalf("the fixed rollout: from %s, %d affected, waves %+v", done.Spec.From, done.Status.Affected, done.Status.Waves)
		}
		testenv.Eventually(t, time.Minute, "every claim provisioned from the fixed definition", func() error {
			for _, cl := range redisClaims(t) {
				if cl.Status.ConfigRevision != done.Spec.To || cl.Status.Phase != scorev1b1.ClaimPhaseBound {
					return fmt.Errorf("claim %s provisioned from %s, %s", cl.Name, cl.Status.ConfigRevision, cl.Status.Phase)
				}
				var svcs corev1.ServiceList
				if err := c.List(ctx, &svcs, client.InNamespace(ns), client.MatchingLabels{"tier": "cache"}); err != nil {
					return err
				}
				if len(svcs.Items) != 2 { // one for the shared instance, one for cache-c's
					return fmt.Errorf("%d redis Services with the new label, want 2", len(svcs.Items))
				}
			}
			return nil
		})
		for _, n := range caches {
			ready(t, n, time.Minute)
		}
	})
}

func editConfig(t *testing.T, change func(doc map[string]any)) {
	t.Helper()
	if err := devenv.EditConfig(ctx, c, func(doc map[string]any) error { change(doc); return nil }); err != nil {
		t.Fatal(err)
	}
}

// restoreTemplate points the web-service backends back at the shipped template.
func restoreTemplate(doc map[string]any) {
	for _, p := range doc["profiles"].([]any) {
		if pr := p.(map[string]any); pr["name"] == "web-service" {
			for _, b := range pr["backends"].([]any) {
				if tpl := b.(map[string]any)["template"].(map[string]any); tpl["ref"] == brokenRef {
					tpl["ref"], tpl["digest"] = shippedRef, shippedDigest
				}
			}
		}
	}
}

// provisionerDef is the definition uri of the config.
func provisionerDef(doc map[string]any, uri string) map[string]any {
	for _, p := range doc["provisioners"].([]any) {
		if def := p.(map[string]any); def["uri"] == uri {
			return def
		}
	}
	panic("no provisioner " + uri)
}

func redisClaims(t *testing.T) []scorev1b1.ResourceClaim {
	t.Helper()
	var list scorev1b1.ResourceClaimList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := slices.DeleteFunc(list.Items, func(cl scorev1b1.ResourceClaim) bool { return cl.Spec.Type != "redis" })
	if len(out) != 3 {
		t.Fatalf("%d redis claims, want 3", len(out))
	}
	return out
}

// provisionedFrom records every claim ever provisioned from revision, until stop.
func provisionedFrom(t *testing.T, revision func() string) (seen func() []string, stop func()) {
	t.Helper()
	return watchRevisions(t, ns, &scorev1b1.ResourceClaimList{}, func(o client.Object) string {
		if cl, ok := o.(*scorev1b1.ResourceClaim); ok {
			return cl.Status.ConfigRevision
		}
		return ""
	}, revision)
}

// cacheState says where the redis claims and their Workloads are, for a failure's message.
func cacheState(t *testing.T) string {
	var b strings.Builder
	for _, cl := range redisClaims(t) {
		fmt.Fprintf(&b, "claim %s (gen %d/%d): names %.19s, from %.19s, %s: %s\n", cl.Name, cl.Generation, cl.Status.ObservedGeneration, cl.Spec.ConfigRevision, cl.Status.ConfigRevision, cl.Status.Phase, cl.Status.Message)
		w := &scorev1b1.Workload{}
		p := &scorev1b1.WorkloadPlan{}
		_ = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: cl.Spec.WorkloadRef.Name}, w)
		_ = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: cl.Spec.WorkloadRef.Name}, p)
		fmt.Fprintf(&b, "  workload %s: %+v; plan %.19s gen %d/%d %s\n", w.Name, meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady), p.Spec.ConfigRevision, p.Generation, p.Status.ObservedGeneration, p.Status.Phase)
	}
	return b.String()
}

// eachWavePassedOnce checks the rollout's events: one per wave (WavePassed, Completed for the
// last), none twice, none missing.
func eachWavePassedOnce(t *testing.T, rollout string, waves int) {
	t.Helper()
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace("score-system")); err != nil {
		t.Fatal(err)
	}
	passed := map[string]int{}
	for _, e := range events.Items {
		if e.InvolvedObject.Name == rollout && (e.Reason == "WavePassed" || e.Reason == "Completed") {
			passed[e.Message] += int(max(e.Count, 1))
		}
	}
	if len(passed) != waves {
		t.Fatalf("the waves' events: %v", passed)
	}
	for m, n := range passed {
		if n != 1 {
			t.Errorf("%q %d times", m, n)
		}
	}
}

// brokenTemplate is the shipped web-service template with pods no node takes, so that its
// Deployments never become available; it is created as the web-service.yaml of the ConfigMap
// score-system/name.
func brokenTemplate(t *testing.T, name string) string {
	t.Helper()
	tpl, err := os.ReadFile(filepath.Join(root, "config", "templates", "web-service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(tpl), "    spec: {{ toJson .PodSpec }}", `    spec:
      nodeSelector: {"score.dev/never": "true"}
      {{- range $k, $v := .PodSpec }}
      {{ $k }}: {{ toJson $v }}
      {{- end }}`, 1)
	if broken == string(tpl) {
		t.Fatal("the template changed: no pod spec line to break")
	}
	testenv.Create(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "score-system", Name: name}, Data: map[string]string{"web-service.yaml": broken}})
	return broken
}
