package runtimes

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// runtimeUnderTest is what the cases ask of a runtime: how to see what a Workload's container
// is given and what runs it, and how to restart the runtime.
type runtimeUnderTest struct {
	name string
	// namespaces are two namespaces the runtime serves.
	namespaces [2]string
	// precondition skips the runtime where it cannot run here, saying why.
	precondition func(t *testing.T)
	// env and file are a variable's value and a file's content as the Workload's container
	// "main" gets them; endpoint checks the Workload's endpoint.
	env      func(t *testing.T, w *scorev1b1.Workload, name string) string
	file     func(t *testing.T, w *scorev1b1.Workload, path string) string
	endpoint func(t *testing.T, endpoint string)
	// units identify what runs a Workload now (containers, ReplicaSets with replicas): a unit
	// that stays is not recreated, one that goes is removed.
	units func(t *testing.T, ns, name string) []string
	// restart restarts the runtime; controller names its plans' controller, and served counts
	// the plans its queue holds after a restart.
	restart    func(t *testing.T)
	controller string
	served     func(t *testing.T) int
	// cannot names the cases the runtime cannot honour here, with why, as docs/runtimes.md
	// declares them.
	cannot map[string]string
}

// The cases any runtime must pass (docs/runtimes.md, the conformance suite), against each
// runtime. A case a runtime cannot honour here is skipped with the reason the contract gives.
func TestRuntimeConformance(t *testing.T) {
	for _, rt := range []runtimeUnderTest{dockerRuntime(), kubernetesRuntime()} {
		t.Run(rt.name, func(t *testing.T) {
			rt.precondition(t)
			rt.run(t)
		})
	}
}

const (
	caseBrokenImage = "an update to an image that is not there keeps the old version serving and says why"
	caseCrash       = "a crash reports its exit"
)

func (rt runtimeUnderTest) run(t *testing.T) {
	ns, otherNS := rt.namespaces[0], rt.namespaces[1]
	w := workload(ns, "web", map[string]string{"GREETING": "hello", "DB_HOST": "${resources.db.host}", "DB_PASSWORD": "${resources.db.password}"}, func(s *scorev1b1.WorkloadSpec) {
		s.Resources = map[string]scorev1b1.Resource{"db": {Type: "db"}}
		c := s.Containers["main"]
		c.Files = map[string]scorev1b1.ContainerFile{"/etc/app/db.conf": {Content: ptr.To("host=${resources.db.host}\npassword=${resources.db.password}\n")}}
		s.Containers["main"] = c
	})
	testenv.Create(t, hub, w)
	ready(t, w)
	step := func(name string, f func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			if why, ok := rt.cannot[name]; ok {
				t.Skip("declared in docs/runtimes.md: " + why)
			}
			f(t)
		})
	}

	step("variables, files and a dependency's outputs, secret ones too, reach the container; the endpoint is published", func(t *testing.T) {
		rt.endpoint(t, ready(t, w))
		if got := rt.env(t, w, "GREETING"); got != "hello" {
			t.Errorf("GREETING %q", got)
		}
		host, password := rt.env(t, w, "DB_HOST"), rt.env(t, w, "DB_PASSWORD")
		if !strings.HasSuffix(host, ".internal") || len(password) != 24 {
			t.Fatalf("DB_HOST %q, DB_PASSWORD of %d characters", host, len(password))
		}
		if got, want := rt.file(t, w, "/etc/app/db.conf"), "host="+host+"\npassword="+password+"\n"; got != want {
			t.Errorf("the file holds %q, want %q", got, want)
		}
		b, _ := json.Marshal(planOf(t, w))
		if strings.Contains(string(b), password) {
			t.Error("the plan carries the secret output's value")
		}
	})

	step("an update starts the new version, then removes the old", func(t *testing.T) {
		before := rt.units(t, ns, "web")
		update(t, w, func(w *scorev1b1.Workload) { w.Spec.Containers["main"].Variables["GREETING"] = "hello again" })
		ready(t, w)
		testenv.Eventually(t, 60*time.Second, "the new version alone", func() error {
			after := rt.units(t, ns, "web")
			if len(after) != 1 || slices.Contains(before, after[0]) {
				return fmt.Errorf("%v now, %v before", after, before)
			}
			return nil
		})
		if got := rt.env(t, w, "GREETING"); got != "hello again" {
			t.Errorf("GREETING %q after the update", got)
		}
	})

	step("a restart of the runtime recreates nothing", func(t *testing.T) {
		before := rt.units(t, ns, "web")
		since, _ := passes(t, rt.controller)
		rt.restart(t)
		testenv.RequestReconcile(t, hub, ns, "web")
		// The restarted runtime has passed over every plan its queue holds (the request's pass
		// may be one of them), and is done: what it would recreate, it has.
		settled(t, rt.controller, since, rt.served(t))
		if after := rt.units(t, ns, "web"); !slices.Equal(before, after) {
			t.Fatalf("%v after the restart, %v before", after, before)
		}
		if got := rt.env(t, w, "GREETING"); got != "hello again" {
			t.Errorf("GREETING %q after the restart", got)
		}
	})

	step(caseBrokenImage, func(t *testing.T) {
		update(t, w, func(w *scorev1b1.Workload) {
			c := w.Spec.Containers["main"]
			c.Image = "local/missing:1"
			w.Spec.Containers["main"] = c
		})
		testenv.Eventually(t, 60*time.Second, "the plan says why", func() error {
			p := planOf(t, w)
			if p.Status.ObservedGeneration != p.Generation || !strings.Contains(p.Status.Message, "local/missing:1") {
				return fmt.Errorf("plan %s %s: %s", p.Status.Phase, p.Status.Reason, p.Status.Message)
			}
			return nil
		})
		if got := rt.env(t, w, "GREETING"); got != "hello again" {
			t.Errorf("GREETING %q while the update fails", got)
		}
	})

	step(caseCrash, func(t *testing.T) {
		crash := workload(ns, "crash", map[string]string{"EXIT_CODE": "3"}, nil)
		testenv.Create(t, hub, crash)
		testenv.Eventually(t, 60*time.Second, "the plan reports the exit", func() error {
			p := &scorev1b1.WorkloadPlan{}
			if err := hub.Get(ctx, client.ObjectKeyFromObject(crash), p); err != nil {
				return err
			}
			for _, o := range p.Status.Objects {
				if o.Health == scorev1b1.HealthFailed && strings.Contains(o.Message, "Exited with code 3") {
					return nil
				}
			}
			return fmt.Errorf("objects %+v", p.Status.Objects)
		})
	})

	step("two Workloads with the same names in two namespaces stay apart", func(t *testing.T) {
		a := workload(otherNS, "web", map[string]string{"GREETING": "from " + otherNS}, nil)
		testenv.Create(t, hub, a)
		ready(t, a)
		if got := rt.env(t, a, "GREETING"); got != "from "+otherNS {
			t.Errorf("GREETING %q in %s", got, otherNS)
		}
		if got := rt.env(t, w, "GREETING"); got != "hello again" {
			t.Errorf("GREETING %q in %s", got, ns)
		}
	})

	step("deletion leaves nothing behind", func(t *testing.T) {
		for _, key := range []client.ObjectKey{{Namespace: ns, Name: "web"}, {Namespace: ns, Name: "crash"}, {Namespace: otherNS, Name: "web"}} {
			obj := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
			if err := hub.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
			testenv.WaitGone(t, hub, obj)
			// The garbage collector deletes the plan, the Workload's dependent; on a loaded
			// machine it has taken more than 30 s.
			testenv.Eventually(t, 2*time.Minute, "plan "+key.String()+" gone", func() error {
				err := hub.Get(ctx, key, &scorev1b1.WorkloadPlan{})
				if apierrors.IsNotFound(err) {
					return nil
				}
				return fmt.Errorf("still there (%v)", err)
			})
			testenv.Eventually(t, 60*time.Second, "nothing of "+key.String()+" left", func() error {
				if left := rt.units(t, key.Namespace, key.Name); len(left) > 0 {
					return fmt.Errorf("%v left", left)
				}
				return nil
			})
		}
	})
}

// workload is a Workload of one container "main" of the test server, publishing port 80.
func workload(ns, name string, env map[string]string, extra func(*scorev1b1.WorkloadSpec)) *scorev1b1.Workload {
	w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	w.Spec.Containers = map[string]scorev1b1.Container{"main": {
		Image:          image,
		Variables:      env,
		ReadinessProbe: &scorev1b1.ContainerProbe{HTTPGet: &scorev1b1.HTTPProbe{Path: "/ready", Port: 8080}},
	}}
	w.Spec.Service = &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"http": {Port: 80, TargetPort: ptr.To(int32(8080))}}}
	if extra != nil {
		extra(&w.Spec)
	}
	return w
}

// ready waits for the Workload's Ready at its current generation, and returns its endpoint.
func ready(t *testing.T, w *scorev1b1.Workload) string {
	t.Helper()
	var endpoint string
	testenv.Eventually(t, 2*time.Minute, "Workload "+w.Namespace+"/"+w.Name+" Ready with an endpoint", func() error {
		got := &scorev1b1.Workload{}
		if err := hub.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, scorev1b1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != got.Generation || got.Status.Endpoint == nil {
			return fmt.Errorf("not Ready with an endpoint: %+v", got.Status.Conditions)
		}
		endpoint = *got.Status.Endpoint
		return nil
	})
	return endpoint
}

func update(t *testing.T, w *scorev1b1.Workload, change func(*scorev1b1.Workload)) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, "update "+w.Name, func() error {
		if err := hub.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
			return err
		}
		change(w)
		return hub.Update(ctx, w)
	})
}

func planOf(t *testing.T, w *scorev1b1.Workload) *scorev1b1.WorkloadPlan {
	t.Helper()
	p := &scorev1b1.WorkloadPlan{}
	if err := hub.Get(ctx, client.ObjectKeyFromObject(w), p); err != nil {
		t.Fatal(err)
	}
	return p
}
