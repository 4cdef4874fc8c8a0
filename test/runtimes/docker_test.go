package runtimes

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/dockerruntime"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// dockerRuntime sees a container through the test server it runs, at the Workload's endpoint
// (a port published on 127.0.0.1), and what runs a Workload as its containers on the host.
func dockerRuntime() runtimeUnderTest {
	return runtimeUnderTest{
		name:         "docker",
		namespaces:   [2]string{shop, other},
		precondition: needDocker,
		env: func(t *testing.T, w *scorev1b1.Workload, name string) string {
			return served(t, w, "/env/"+name)
		},
		file: func(t *testing.T, w *scorev1b1.Workload, path string) string {
			return served(t, w, "/file"+path)
		},
		endpoint: func(t *testing.T, endpoint string) {
			if !strings.HasPrefix(endpoint, "http://127.0.0.1:") {
				t.Errorf("endpoint %s, want one on the host's address", endpoint)
			}
		},
		units: containers,
		restart: func(t *testing.T) {
			restart(t, &stopAgent, startAgent)
		},
		controller: "docker-runtime",
		served:     dockerPlans,
	}
}

// served is what the test server answers on a path at the Workload's endpoint.
func served(t *testing.T, w *scorev1b1.Workload, path string) string {
	t.Helper()
	var body string
	testenv.Eventually(t, 30*time.Second, w.Name+" answers "+path, func() error {
		got := &scorev1b1.Workload{}
		if err := hub.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
			return err
		}
		if got.Status.Endpoint == nil {
			return fmt.Errorf("no endpoint")
		}
		resp, err := http.Get(*got.Status.Endpoint + path)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		body = string(b)
		return err
	})
	return body
}

// containers lists the host's containers of a Workload (by name and namespace), by ID.
func containers(t *testing.T, ns, name string) []string {
	t.Helper()
	return containersLabelled(t, ns, scorev1b1.LabelWorkload+"="+name)
}

// containersLabelled lists the host's containers of a namespace that carry a label (key=value,
// or a key), by ID, sorted.
func containersLabelled(t *testing.T, ns, label string) []string {
	t.Helper()
	list, err := engine.Client.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", dockerruntime.LabelNamespace+"="+ns), filters.Arg("label", label))})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	return ids
}

// A tenant's container holds nothing of the host's: not privileged, no mounts, no host
// namespaces, no new privileges, no raw sockets, a process limit, a bounded log, ports only on
// the platform's address.
func TestHostileDockerContainer(t *testing.T) {
	needDocker(t)
	w := workload(other, "holds", map[string]string{"GREETING": "hi"}, nil)
	testenv.Create(t, hub, w)
	ready(t, w)
	for _, id := range containers(t, other, "holds") {
		c, err := engine.Client.ContainerInspect(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		h := c.HostConfig
		if h.Privileged || len(h.Binds) > 0 || len(h.Mounts) > 0 || h.PidMode != "" || h.IpcMode.IsHost() || h.NetworkMode.IsHost() {
			t.Errorf("privileged %v, binds %v, mounts %v, pid %q, ipc %q, network %q", h.Privileged, h.Binds, h.Mounts, h.PidMode, h.IpcMode, h.NetworkMode)
		}
		if !slices.Contains(h.SecurityOpt, "no-new-privileges") || h.PidsLimit == nil || *h.PidsLimit <= 0 || !slices.ContainsFunc(h.CapDrop, func(c string) bool { return strings.TrimPrefix(c, "CAP_") == "NET_RAW" }) {
			t.Errorf("security options %v, pids limit %v, capabilities dropped %v", h.SecurityOpt, h.PidsLimit, h.CapDrop)
		}
		if h.LogConfig.Config["max-size"] == "" {
			t.Errorf("the container's log is not bounded: %+v", h.LogConfig)
		}
		for port, bindings := range h.PortBindings {
			for _, b := range bindings {
				if b.HostIP != "127.0.0.1" {
					t.Errorf("port %s published on %q, not the platform's address", port, b.HostIP)
				}
			}
		}
	}
	if err := hub.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
}

// At rest the agent writes nothing (its Lease's renewals aside) and creates nothing, a restart
// of it neither.
func TestDockerAgentQuietAtRest(t *testing.T) {
	needDocker(t)
	w := workload(other, "quiet", map[string]string{"GREETING": "hi"}, nil)
	testenv.Create(t, hub, w)
	ready(t, w)
	before := containers(t, other, "quiet")
	// The passes the last writes brought have run first.
	since, _ := passes(t, "docker-runtime")
	settled(t, "docker-runtime", since, 0)
	for _, phase := range []string{"at rest", "after a restart"} {
		start := agentWrites.Load()
		since, _ := passes(t, "docker-runtime")
		queued := 1 // the request's pass
		if phase == "after a restart" {
			restart(t, &stopAgent, startAgent)
			queued = dockerPlans(t) // the request's pass may be one of these
		}
		// A pass over the plan that changes nothing of it (the request is the Workload's
		// annotation, passed on to the plan): the agent runs, and must write nothing.
		testenv.RequestReconcile(t, hub, other, "quiet")
		settled(t, "docker-runtime", since, queued)
		if n := agentWrites.Load() - start; n != 0 {
			t.Errorf("%s the agent wrote %d times", phase, n)
		}
		if after := containers(t, other, "quiet"); !slices.Equal(before, after) {
			t.Errorf("%s: containers %v, %v before", phase, after, before)
		}
	}
	if err := hub.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
}

// A Workload that moves to another runtime (its plan's class changes under the agent) has its
// containers removed and the host's finalizer let go: the plan is not kept from its deletion.
func TestDockerPlanMovedAwayIsReleased(t *testing.T) {
	needDocker(t)
	w := workload(other, "moving", map[string]string{"GREETING": "hi"}, nil)
	testenv.Create(t, hub, w)
	ready(t, w)
	if len(containers(t, other, "moving")) == 0 {
		t.Fatal("no container runs the Workload")
	}
	// The orchestrator would rewrite the plan for the Workload's new backend; it is stopped,
	// so that this plan stays as the test leaves it.
	restart(t, &stopControllers, func() (func(), error) { return func() {}, nil })
	defer restart(t, &stopControllers, startControllers)
	p := planOf(t, w)
	before := p.DeepCopy()
	p.Spec.RuntimeClass, p.Spec.Template = scorev1b1.RuntimeClassKubernetes, scorev1b1.TemplateRef{Kind: scorev1b1.TemplateManifests, Ref: "configmap://score-system/score-templates/web-service.yaml"}
	if err := hub.Patch(ctx, p, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the containers removed and the finalizer let go", func() error {
		if left := containers(t, other, "moving"); len(left) > 0 {
			return fmt.Errorf("containers %v", left)
		}
		got := planOf(t, w)
		if slices.Contains(got.Finalizers, "docker.score.dev/"+host) {
			return fmt.Errorf("finalizers %v", got.Finalizers)
		}
		return nil
	})
	if err := hub.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
}

// dockerPlans counts the plans the agent serves or holds: after its restart, its queue's.
func dockerPlans(t *testing.T) int {
	t.Helper()
	n := 0
	for _, ns := range []string{shop, other} {
		plans := &scorev1b1.WorkloadPlanList{}
		if err := hub.List(ctx, plans, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, p := range plans.Items {
			if p.Spec.RuntimeClass == scorev1b1.RuntimeClassDocker || slices.Contains(p.Finalizers, "docker.score.dev/"+host) {
				n++
			}
		}
	}
	return n
}
