package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/scorefile"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// Two shards, as Flux runs them: the controllers of every other test own the unlabelled
// Workloads (!score.dev/shard), a second set owns score.dev/shard=blue. Each writes only its
// own Workloads' objects; a Workload relabelled into the blue shard is handed over with the
// same objects (no duplicate, nothing recreated), stays Ready throughout (no gap), and from
// then on only the blue shard writes for it.
func TestShards(t *testing.T) {
	const blue = scorev1b1.LabelShard + "=blue"
	var mu sync.Mutex
	writes := map[string][]string{} // by the selector of the shard that wrote
	record := func(selector, write string) {
		if strings.Contains(write, "/namespaces/e2e-shard-") {
			mu.Lock()
			writes[selector] = append(writes[selector], write)
			mu.Unlock()
		}
	}
	shardWrites.Store(&record)
	defer shardWrites.Store(nil)
	stopBlue, err := startShard(nil, blue)
	if err != nil {
		t.Fatal(err)
	}
	defer stopBlue()

	// The example with postgres and redis, once in each shard, each in a namespace of its own
	// so that a write tells by its path which Workload it is for.
	res, err := scorefile.ReadFile(filepath.Join(testenv.RepoRoot(), "examples", "web-postgres-redis", "score.yaml"), scorefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]client.ObjectKey{}
	for _, s := range []string{"blue", "rest"} {
		ns := "e2e-shard-" + s
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		w := res[0].Workload.DeepCopy()
		w.Namespace = ns
		if s == "blue" {
			w.Labels = map[string]string{scorev1b1.LabelShard: "blue"}
		}
		if err := c.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		keys[s] = client.ObjectKeyFromObject(w)
	}
	for _, key := range keys {
		waitWorkload(t, key, "Ready", nil)
	}
	ownWritesOnly := func(t *testing.T, selector, ns string) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if len(writes[selector]) == 0 {
			t.Errorf("shard %s wrote nothing", selector)
		}
		for _, w := range writes[selector] {
			if !strings.Contains(w, "/namespaces/"+ns+"/") {
				t.Errorf("shard %s wrote %s, for another shard's Workload", selector, w)
			}
		}
	}
	t.Run("each shard writes its own Workloads' objects only", func(t *testing.T) {
		ownWritesOnly(t, blue, "e2e-shard-blue")
		ownWritesOnly(t, "!"+scorev1b1.LabelShard, "e2e-shard-rest")
	})

	t.Run("a Workload relabelled into another shard is handed over", func(t *testing.T) {
		key := keys["rest"]
		before := followers(t, key)
		// Every status the Workload has from now until its next generation is Ready.
		wl := &scorev1b1.WorkloadList{}
		if err := c.List(ctx, wl, client.InNamespace(key.Namespace)); err != nil {
			t.Fatal(err)
		}
		wc, err := client.NewWithWatch(cfg, client.Options{Scheme: testenv.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		watcher, err := wc.Watch(ctx, &scorev1b1.WorkloadList{}, client.InNamespace(key.Namespace), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: wl.ResourceVersion}})
		if err != nil {
			t.Fatal(err)
		}
		defer watcher.Stop()
		update(t, key, func(w *scorev1b1.Workload) { w.Labels = map[string]string{scorev1b1.LabelShard: "blue"} })
		testenv.Eventually(t, time.Minute, "the claims, plan and exposure in the blue shard", func() error {
			for name, f := range followers(t, key) {
				if name != "Deployment" && f.shard != "blue" {
					return fmt.Errorf("%s is in shard %q", name, f.shard)
				}
			}
			return nil
		})
		mu.Lock()
		delete(writes, blue)
		delete(writes, "!"+scorev1b1.LabelShard)
		mu.Unlock()
		// A new generation, rolled out by the blue shard alone.
		update(t, key, func(w *scorev1b1.Workload) {
			ctr := w.Spec.Containers["api"]
			ctr.Variables["SHARD"] = "blue"
			w.Spec.Containers["api"] = ctr
		})
		var generation int64
		waitWorkload(t, key, "Ready with the new variable", func(w *scorev1b1.Workload) error {
			generation = w.Generation
			d := &appsv1.Deployment{}
			if err := c.Get(ctx, key, d); err != nil {
				return err
			}
			for _, e := range d.Spec.Template.Spec.Containers[0].Env { // literal values stay in the spec
				if e.Name == "SHARD" && e.Value == "blue" {
					return nil
				}
			}
			return fmt.Errorf("the Deployment has no SHARD variable yet")
		})
		ownWritesOnly(t, blue, key.Namespace)
		mu.Lock()
		if rest := writes["!"+scorev1b1.LabelShard]; len(rest) > 0 {
			t.Errorf("the shard it left still wrote for it: %v", rest)
		}
		mu.Unlock()
		// The same objects, none recreated.
		after := followers(t, key)
		for name, f := range before {
			if after[name].uid != f.uid {
				t.Errorf("%s was recreated (%s, then %s)", name, f.uid, after[name].uid)
			}
		}
		if len(after) != len(before) {
			t.Errorf("objects before %v, after %v", before, after)
		}
		// Ready throughout, until the new generation.
		for done := false; !done; {
			select {
			case ev := <-watcher.ResultChan():
				w, ok := ev.Object.(*scorev1b1.Workload)
				if !ok || ev.Type == watch.Deleted {
					t.Fatalf("watch event %s %T", ev.Type, ev.Object)
				}
				if w.Generation >= generation {
					done = true
					break
				}
				if r := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue {
					t.Errorf("not Ready during the handover (generation %d): %+v", w.Generation, r)
					for _, l := range strings.Split(controllerLogs.String(), "\n") {
						if strings.Contains(l, key.Namespace) {
							t.Log(l)
						}
					}
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no watch event of the new generation")
			}
		}
	})

	for _, key := range keys {
		if err := c.Delete(ctx, &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range keys {
		workloadGone(t, key.Namespace, key.Name)
	}
}

// follower is an object that follows its Workload into its shard.
type follower struct {
	uid   types.UID
	shard string
}

// followers are the Workload's claims, plan and exposure, and the Deployment applied for it,
// by kind and name.
func followers(t *testing.T, key client.ObjectKey) map[string]follower {
	t.Helper()
	out := map[string]follower{}
	var claims scorev1b1.ResourceClaimList
	if err := c.List(ctx, &claims, client.InNamespace(key.Namespace), client.MatchingLabels{scorev1b1.LabelWorkload: key.Name}); err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 2 {
		t.Fatalf("%d claims, want postgres and redis", len(claims.Items))
	}
	objs := []client.Object{&scorev1b1.WorkloadPlan{}, &scorev1b1.WorkloadExposure{}}
	for i := range claims.Items {
		objs = append(objs, &claims.Items[i])
	}
	for _, o := range objs {
		if o.GetName() == "" {
			if err := c.Get(ctx, key, o); err != nil {
				t.Fatal(err)
			}
		}
		out[fmt.Sprintf("%T %s", o, o.GetName())] = follower{o.GetUID(), o.GetLabels()[scorev1b1.LabelShard]}
	}
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, key, d); err != nil {
		t.Fatal(err)
	}
	out["Deployment"] = follower{uid: d.UID} // applied objects do not carry the label
	return out
}
