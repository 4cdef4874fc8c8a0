package rollout

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/controlplane"
	"github.com/score-orchestrator/score-orchestrator/internal/shard"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv/inprocess"
)

// shardProcess is one score-controllers process of a shard, run in the test's own process as
// the binary runs with its defaults and --leader-elect: the shard's controllers under the
// shard's lease, and the rollout under the fleet's.
type shardProcess struct {
	selector string
	stop     func()
	// rolloutWrites counts its writes to rollouts: only the one that runs the rollout writes
	// them.
	rolloutWrites atomic.Int64
}

func (p *shardProcess) start(t *testing.T) {
	t.Helper()
	sel, err := shard.Selector(p.selector)
	if err != nil {
		t.Fatal(err)
	}
	opts := controlplane.DefaultOptions()
	opts.Shard = sel
	as := rest.CopyConfig(cfg)
	as.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method != http.MethodGet && strings.Contains(r.URL.Path, "/configrollouts") {
				p.rolloutWrites.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	p.stop, err = inprocess.StartWith(as, opts, ctrl.Options{LeaderElection: true, LeaderElectionNamespace: "score-system", LeaderElectionReleaseOnCancel: true})
	if err != nil {
		t.Fatal(err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// shardedNS holds TestShardedRollout's Workloads; shardedBackend serves them alone.
const (
	shardedNS      = "fleet-shards"
	shardedBackend = "k8s-web-sharded"
)

// editShardedBackend changes the backend that serves TestShardedRollout's Workloads.
func editShardedBackend(t *testing.T, change func(b map[string]any)) {
	t.Helper()
	editConfig(t, func(doc map[string]any) {
		for _, p := range doc["profiles"].([]any) {
			if pr := p.(map[string]any); pr["name"] == "web-service" {
				for _, b := range pr["backends"].([]any) {
					if b.(map[string]any)["backendId"] == shardedBackend {
						change(b.(map[string]any))
					}
				}
			}
		}
	})
}

// latestRollout waits until the newest rollout, newer than after, satisfies cond.
func latestRollout(t *testing.T, after, what string, timeout time.Duration, cond func(*scorev1b1.ConfigRollout) error) *scorev1b1.ConfigRollout {
	t.Helper()
	var latest *scorev1b1.ConfigRollout
	testenv.Eventually(t, timeout, "the latest rollout "+what, func() error {
		var list scorev1b1.ConfigRolloutList
		if err := c.List(ctx, &list, client.InNamespace("score-system")); err != nil {
			return err
		}
		latest = nil
		for i := range list.Items {
			if list.Items[i].Name > after && (latest == nil || list.Items[i].Name > latest.Name) {
				latest = &list.Items[i]
			}
		}
		if latest == nil {
			return fmt.Errorf("no rollout after %q", after)
		}
		return cond(latest)
	})
	return latest
}

// shardOf says which shard a Workload key of TestShardedRollout is in.
func shardOf(key string) string {
	if strings.Contains(key, "/blue-") {
		return "blue"
	}
	return "rest"
}

// Rollouts and shards together: two shards (the unlabelled rest and score.dev/shard=blue),
// each a process of its own that also carries the rollout controller; one rollout for both.
// A good change goes through waves that each take Workloads of both shards, and the process
// that runs the rollout restarting mid-rollout hands it to the other without a wave run twice;
// a broken change halts at its first wave, whose Workloads of both shards are pinned back, and
// the second wave's never render it.
func TestShardedRollout(t *testing.T) {
	// The unsharded controllers of TestMain give way to two shards' processes.
	stopControllers()
	rest := &shardProcess{selector: "!" + scorev1b1.LabelShard}
	blue := &shardProcess{selector: scorev1b1.LabelShard + "=blue"}
	rest.start(t)
	blue.start(t)
	t.Cleanup(func() {
		rest.stop()
		blue.stop()
		if err := startControllers(); err != nil {
			t.Error(err)
		}
	})

	// A backend for this test's Workloads alone, and waves of two: the canaries (one in each
	// shard), then the rest. A change that affects no Workload yet: it completes at once.
	before := latestRollout(t, "", "settled", time.Minute, func(r *scorev1b1.ConfigRollout) error {
		if !slices.Contains([]string{scorev1b1.RolloutCompleted, scorev1b1.RolloutAborted}, r.Status.Phase) {
			return fmt.Errorf("%s %s", r.Name, r.Status.Phase)
		}
		return nil
	})
	var waves any
	editConfig(t, func(doc map[string]any) {
		policy := doc["rollout"].(map[string]any)
		waves, policy["waves"] = policy["waves"], []any{"2", "100%"}
		for _, p := range doc["profiles"].([]any) {
			if pr := p.(map[string]any); pr["name"] == "web-service" {
				tpl := map[string]any{}
				for _, b := range pr["backends"].([]any) {
					if b.(map[string]any)["backendId"] == "k8s-web-v2" {
						for k, v := range b.(map[string]any)["template"].(map[string]any) {
							tpl[k] = v
						}
					}
				}
				tpl["ref"], tpl["values"] = shippedRef, map[string]any{"replicas": 1}
				pr["backends"] = append(pr["backends"].([]any), map[string]any{"backendId": shardedBackend, "runtimeClass": "kubernetes", "priority": 200, "version": "1.0.0",
					"template": tpl, "constraints": map[string]any{"selectors": []any{map[string]any{"matchLabels": map[string]any{"suite": "sharded"}}}}})
			}
		}
	})
	base := latestRollout(t, before.Name, "completed", time.Minute, phase(scorev1b1.RolloutCompleted))
	stable := base.Spec.To

	testenv.Create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shardedNS}})
	names := []string{"rest-a", "rest-b", "blue-a", "blue-b"}
	for _, n := range names {
		w := testenv.Workload(shardedNS, n, testenv.WithPort("http", 80))
		w.Labels = map[string]string{"suite": "sharded"}
		if strings.HasPrefix(n, "blue-") {
			w.Labels[scorev1b1.LabelShard] = "blue"
		}
		if strings.HasSuffix(n, "-a") {
			w.Labels["ring"] = "canary"
		}
		testenv.Create(t, c, w)
	}
	t.Cleanup(func() {
		for _, n := range names {
			_ = c.Delete(ctx, &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: shardedNS, Name: n}})
		}
	})
	shardedReady := func(t *testing.T, timeout time.Duration) {
		t.Helper()
		for _, n := range names {
			testenv.Eventually(t, timeout, n+" Ready", func() error {
				w := &scorev1b1.Workload{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: shardedNS, Name: n}, w); err != nil {
					return err
				}
				if cond := testenv.Condition(w, scorev1b1.ConditionReady); cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != w.Generation {
					return fmt.Errorf("not Ready: %+v", cond)
				}
				return nil
			})
		}
	}
	shardedReady(t, 3*time.Minute)
	revisionOf := func(name string) string {
		p := &scorev1b1.WorkloadPlan{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: shardedNS, Name: name}, p); err != nil {
			t.Fatal(err)
		}
		return p.Spec.ConfigRevision
	}
	for _, n := range names {
		if rev := revisionOf(n); rev != stable {
			t.Fatalf("%s rendered from %s, want %s", n, rev, stable)
		}
	}

	t.Run("waves span both shards; the process running the rollout restarts and the other takes it over", func(t *testing.T) {
		editShardedBackend(t, func(b map[string]any) { b["template"].(map[string]any)["values"] = map[string]any{"replicas": 2} })
		r := latestRollout(t, base.Name, "past its first wave", 2*time.Minute, func(r *scorev1b1.ConfigRollout) error {
			if r.Status.Wave < 1 && r.Status.Phase != scorev1b1.RolloutCompleted {
				return fmt.Errorf("%s %s at wave %d: %s", r.Name, r.Status.Phase, r.Status.Wave+1, r.Status.Message)
			}
			return nil
		})
		if r.Spec.From != stable || r.Status.Affected != 4 || len(r.Status.Waves) != 2 {
			t.Fatalf("the rollout: from %s, %d affected, waves %+v; want the four of the sharded backend in two waves", r.Spec.From, r.Status.Affected, r.Status.Waves)
		}
		for i, w := range r.Status.Waves {
			var shards []string
			for _, key := range w.Workloads {
				shards = append(shards, shardOf(key))
			}
			if slices.Sort(shards); strings.Join(shards, ",") != "blue,rest" {
				t.Fatalf("wave %d takes %v: not one Workload of each shard", i+1, w.Workloads)
			}
		}
		// One process runs the rollout; it restarts, and the other one takes the rollout over.
		leader, standby := rest, blue
		if blue.rolloutWrites.Load() > 0 {
			leader, standby = blue, rest
		}
		if leader.rolloutWrites.Load() == 0 || standby.rolloutWrites.Load() != 0 {
			t.Fatalf("rollout writes: %s %d, %s %d; want one process alone", rest.selector, rest.rolloutWrites.Load(), blue.selector, blue.rolloutWrites.Load())
		}
		holder := func() string {
			l := &coordinationv1.Lease{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "score-system", Name: controlplane.RolloutLease}, l); err != nil {
				t.Fatal(err)
			}
			return ptr.Deref(l.Spec.HolderIdentity, "")
		}
		was := holder()
		leader.stop()
		testenv.Eventually(t, time.Minute, "the other process takes the rollout's lease", func() error {
			if now := holder(); now == "" || now == was {
				return fmt.Errorf("held by %q", now)
			}
			return nil
		})
		leader.start(t)
		done := latestRollout(t, base.Name, "completed", 3*time.Minute, phase(scorev1b1.RolloutCompleted))
		if done.Name != r.Name {
			t.Fatalf("%s completed, want %s", done.Name, r.Name)
		}
		if standby.rolloutWrites.Load() == 0 {
			t.Errorf("the standby never wrote the rollout: it did not take it over")
		}
		shardedReady(t, time.Minute)
		for _, n := range names {
			if rev := revisionOf(n); rev != done.Spec.To {
				t.Errorf("%s rendered from %s, want %s", n, rev, done.Spec.To)
			}
			d := &appsv1.Deployment{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: shardedNS, Name: n}, d); err != nil || *d.Spec.Replicas != 2 {
				t.Errorf("%s: %v replicas, %v", n, d.Spec.Replicas, err)
			}
		}
		// Each wave passed once, across the handover.
		eachWavePassedOnce(t, r.Name, 2)
		stable = done.Spec.To
		base = done
	})

	t.Run("a halt pins back the Workloads of both shards", func(t *testing.T) {
		broken := brokenTemplate(t, "sharded-broken")
		var target atomic.Value
		target.Store("")
		seen, stop := renderedFrom(t, func() string { return target.Load().(string) })
		defer stop()
		// renderedFrom watches the test's namespace; this test's is another.
		seenHere, stopHere := watchRevisionsIn(t, shardedNS, func() string { return target.Load().(string) })
		defer stopHere()
		editShardedBackend(t, func(b map[string]any) {
			tpl := b["template"].(map[string]any)
			tpl["ref"], tpl["digest"] = "configmap://score-system/sharded-broken/web-service.yaml", testenv.Digest(broken)
		})
		r := latestRollout(t, base.Name, "started", time.Minute, phase(scorev1b1.RolloutProgressing))
		target.Store(r.Spec.To)
		if r.Spec.From != stable {
			t.Fatalf("from %s, want %s", r.Spec.From, stable)
		}
		halted := latestRollout(t, base.Name, "halted", 2*time.Minute, phase(scorev1b1.RolloutHalted))
		failed := halted.Status.Waves[0].Failed
		if halted.Status.Wave != 0 || len(failed) != 2 || shardOf(failed[0]) == shardOf(failed[1]) {
			t.Fatalf("halted at wave %d with %v failed; want wave 1 with its canary of each shard", halted.Status.Wave+1, failed)
		}
		// Pinned back in both shards: rendered from the previous revision, available and Ready.
		testenv.Eventually(t, 2*time.Minute, "the canaries of both shards pinned back and available", func() error {
			for _, key := range failed {
				name := strings.TrimPrefix(key, shardedNS+"/")
				if rev := revisionOf(name); rev != stable {
					return fmt.Errorf("%s rendered from %s", name, rev)
				}
				d := &appsv1.Deployment{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: shardedNS, Name: name}, d); err != nil {
					return err
				}
				if len(d.Spec.Template.Spec.NodeSelector) > 0 || d.Status.UpdatedReplicas != *d.Spec.Replicas || d.Status.AvailableReplicas != *d.Spec.Replicas {
					return fmt.Errorf("%s: nodeSelector %v, status %+v", name, d.Spec.Template.Spec.NodeSelector, d.Status)
				}
			}
			return nil
		})
		shardedReady(t, 2*time.Minute)
		// The second wave, one Workload in each shard, never rendered the broken revision.
		for _, key := range halted.Status.Waves[1].Workloads {
			if name := strings.TrimPrefix(key, shardedNS+"/"); slices.Contains(seenHere(), name) || revisionOf(name) != stable {
				t.Errorf("%s of the second wave rendered from the broken revision", name)
			}
		}
		if got := seen(); len(got) != 0 {
			t.Errorf("Workloads outside the sharded backend rendered from the broken revision: %v", got)
		}
		cli(t, "rollout", "abort")
		latestRollout(t, base.Name, "aborted", time.Minute, phase(scorev1b1.RolloutAborted))
		shardedReady(t, time.Minute)
		for _, n := range names {
			if rev := revisionOf(n); rev != stable {
				t.Errorf("%s rendered from %s after the abort, want %s", n, rev, stable)
			}
		}
	})

	// Back to the config TestRollouts left: this test's Workloads go, then its backend and
	// waves (a change that affects no Workload).
	for _, n := range names {
		w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: shardedNS, Name: n}}
		if err := c.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
		testenv.WaitGone(t, c, w)
	}
	editConfig(t, func(doc map[string]any) {
		doc["rollout"].(map[string]any)["waves"] = waves
		for _, p := range doc["profiles"].([]any) {
			if pr := p.(map[string]any); pr["name"] == "web-service" {
				pr["backends"] = slices.DeleteFunc(pr["backends"].([]any), func(b any) bool { return b.(map[string]any)["backendId"] == shardedBackend })
			}
		}
	})
}

// watchRevisionsIn is renderedFrom for the plans of namespace.
func watchRevisionsIn(t *testing.T, namespace string, revision func() string) (seen func() []string, stop func()) {
	t.Helper()
	return watchRevisions(t, namespace, &scorev1b1.WorkloadPlanList{}, func(o client.Object) string {
		if p, ok := o.(*scorev1b1.WorkloadPlan); ok {
			return p.Spec.ConfigRevision
		}
		return ""
	}, revision)
}
