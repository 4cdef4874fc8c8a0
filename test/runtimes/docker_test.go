// Package runtimes runs the runtime conformance cases against the Docker runtime: a real
// kube-apiserver and etcd as the hub, the control plane, a real dockerd (Debian's, started
// for the run with its own data root and socket) and the agent. Images are made from a file
// (a static test server), never pulled; containers are reached only through the ports the
// agent publishes on 127.0.0.1.
package runtimes

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/controlplane"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/dockerruntime"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/hosts"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/dockerd"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

var (
	env     *testenv.Env
	engine  *dockerd.Engine
	running context.Context
	ctx     = context.Background()
	// stopAgent stops the agent running now and returns once it has stopped.
	stopAgent func()
	skipped   string
)

const (
	image = dockerd.TestServer
	host  = "test-host"
	// shop and other are the namespaces the host serves; elsewhere is one it does not.
	shop, other, elsewhere = "shop", "other", "elsewhere"
)

// agentConfig is the agent's connection to the hub: the identity scorectl host add makes.
var agentConfig *rest.Config

// config: one profile on the Docker host, and a dependency with a secret output.
const config = `apiVersion: score.dev/v1b1
kind: OrchestratorConfig
profiles:
  - name: web-service
    backends:
      - {backendId: docker-web, runtimeClass: docker, version: 1.0.0, template: {kind: compose}}
defaults: {profile: web-service}
provisioners:
  - uri: template://runtimes/db
    type: db
    init: |
      name: db-{{ substr 0 8 .Guid }}
    state: |
      password: {{ dig "password" (randAlphaNum 24) .State | quote }}
    outputs: |
      host: {{ .Init.name }}.internal
      password: {{ encodeSecretRef .Init.name "password" }}
    expected_outputs: [host, password]
    manifests: |
      - apiVersion: v1
        kind: Secret
        metadata:
          name: {{ .Init.name }}
          namespace: {{ .Namespace }}
        stringData: {password: {{ .State.password | quote }}}
`

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, func(c context.Context, e *testenv.Env) error {
		env, running = e, c
		var err error
		if engine, err = dockerd.Start(); err != nil {
			if err == dockerd.ErrNoDocker && os.Getenv("SCORE_DOCKER_REQUIRED") == "" {
				skipped = err.Error()
				return nil
			}
			return err
		}
		go func() { <-c.Done(); engine.Stop() }()
		if err := engine.ImportTestServer(c, testenv.RepoRoot()); err != nil {
			return err
		}
		if err := testenv.CreateAll(c, env.Client,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "score-system"}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shop}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: elsewhere}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "score-system", Name: "orchestrator-config"}, Data: map[string]string{"config.yaml": config}},
		); err != nil {
			return err
		}
		mgr, err := ctrl.NewManager(env.Config, testenv.ManagerOptions())
		if err != nil {
			return err
		}
		if err := controlplane.Setup(mgr, controlplane.DefaultOptions()); err != nil {
			return err
		}
		go func() { _ = mgr.Start(c) }()
		kubeconfig, err := hosts.Register(c, env.Config, env.Client, hosts.Registration{Name: host, Namespaces: []string{shop, other}, Address: "127.0.0.1"})
		if err != nil {
			return fmt.Errorf("registering the host: %w", err)
		}
		if agentConfig, err = clientcmd.RESTConfigFromKubeConfig(kubeconfig); err != nil {
			return err
		}
		stopAgent, err = startAgent()
		return err
	}))
}

// startAgent runs the agent on the host's identity, serving its namespaces.
func startAgent() (stop func(), err error) {
	return engine.StartAgent(running, agentConfig, dockerd.Agent{Host: host, Namespaces: []string{shop, other}, ProbeEvery: 250 * time.Millisecond})
}

func needDocker(t *testing.T) {
	if skipped != "" {
		t.Skip(skipped)
	}
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
	testenv.Eventually(t, 90*time.Second, "Workload "+w.Name+" Ready with an endpoint", func() error {
		got := &scorev1b1.Workload{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
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

// get answers a path of an endpoint.
func get(endpoint, path string) (string, error) {
	resp, err := http.Get(endpoint + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return string(b), err
}

func answers(t *testing.T, endpoint, path, want string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, endpoint+path+" answers "+want, func() error {
		got, err := get(endpoint, path)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("answered %q", got)
		}
		return nil
	})
}

// containers lists the host's containers of a Workload (by name and namespace), by ID.
func containers(t *testing.T, ns, name string) []string {
	t.Helper()
	list, err := engine.Client.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", dockerruntime.LabelNamespace+"="+ns), filters.Arg("label", scorev1b1.LabelWorkload+"="+name))})
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

func update(t *testing.T, w *scorev1b1.Workload, change func(*scorev1b1.Workload)) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, "update "+w.Name, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
			return err
		}
		change(w)
		return env.Client.Update(ctx, w)
	})
}

func planOf(t *testing.T, w *scorev1b1.Workload) *scorev1b1.WorkloadPlan {
	t.Helper()
	p := &scorev1b1.WorkloadPlan{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRuntimeConformance(t *testing.T) {
	t.Run("docker", func(t *testing.T) {
		needDocker(t)
		ns := shop
		w := workload(ns, "web", map[string]string{"GREETING": "hello", "DB_HOST": "${resources.db.host}", "DB_PASSWORD": "${resources.db.password}"}, func(s *scorev1b1.WorkloadSpec) {
			s.Resources = map[string]scorev1b1.Resource{"db": {Type: "db"}}
			c := s.Containers["main"]
			c.Files = map[string]scorev1b1.ContainerFile{"/etc/app/db.conf": {Content: ptr.To("host=${resources.db.host}\npassword=${resources.db.password}\n")}}
			s.Containers["main"] = c
		})
		testenv.Create(t, env.Client, w)
		endpoint := ready(t, w)

		t.Run("variables, files and a dependency's outputs, secret ones too, reach the container", func(t *testing.T) {
			if !strings.HasPrefix(endpoint, "http://127.0.0.1:") {
				t.Fatalf("endpoint %s, want one on the host's address", endpoint)
			}
			answers(t, endpoint, "/env/GREETING", "hello")
			host, err := get(endpoint, "/env/DB_HOST")
			if err != nil || !strings.HasSuffix(host, ".internal") {
				t.Fatalf("DB_HOST %q, %v", host, err)
			}
			password, err := get(endpoint, "/env/DB_PASSWORD")
			if err != nil || len(password) != 24 {
				t.Fatalf("DB_PASSWORD of %d characters, %v", len(password), err)
			}
			answers(t, endpoint, "/file/etc/app/db.conf", "host="+host+"\npassword="+password+"\n")
			plan := planOf(t, w)
			b, _ := json.Marshal(plan)
			if strings.Contains(string(b), password) {
				t.Error("the plan carries the secret output's value")
			}
		})

		t.Run("a tenant's container holds nothing of the host's", func(t *testing.T) {
			for _, id := range containers(t, ns, "web") {
				c, err := engine.Client.ContainerInspect(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				h := c.HostConfig
				if h.Privileged || len(h.Binds) > 0 || len(h.Mounts) > 0 || h.PidMode != "" || h.IpcMode.IsHost() || h.NetworkMode.IsHost() {
					t.Errorf("privileged %v, binds %v, mounts %v, pid %q, ipc %q, network %q", h.Privileged, h.Binds, h.Mounts, h.PidMode, h.IpcMode, h.NetworkMode)
				}
				if !slices.Contains(h.SecurityOpt, "no-new-privileges") || h.PidsLimit == nil || *h.PidsLimit <= 0 {
					t.Errorf("security options %v, pids limit %v", h.SecurityOpt, h.PidsLimit)
				}
				for port, bindings := range h.PortBindings {
					for _, b := range bindings {
						if b.HostIP != "127.0.0.1" {
							t.Errorf("port %s published on %q, not the platform's address", port, b.HostIP)
						}
					}
				}
			}
		})

		t.Run("an update starts the new version, then removes the old", func(t *testing.T) {
			before := containers(t, ns, "web")
			update(t, w, func(w *scorev1b1.Workload) { w.Spec.Containers["main"].Variables["GREETING"] = "hello again" })
			endpoint = ready(t, w)
			answers(t, endpoint, "/env/GREETING", "hello again")
			testenv.Eventually(t, 30*time.Second, "the old version removed", func() error {
				after := containers(t, ns, "web")
				if len(after) != 1 || slices.Contains(before, after[0]) {
					return fmt.Errorf("containers %v (before %v)", after, before)
				}
				return nil
			})
		})

		t.Run("a restart of the agent recreates nothing", func(t *testing.T) {
			before := containers(t, ns, "web")
			stopAgent()
			var err error
			if stopAgent, err = startAgent(); err != nil {
				t.Fatal(err)
			}
			testenv.RequestReconcile(t, env.Client, ns, "web")
			time.Sleep(3 * time.Second)
			if after := containers(t, ns, "web"); !slices.Equal(before, after) {
				t.Fatalf("containers %v after the restart, %v before", after, before)
			}
			answers(t, endpoint, "/env/GREETING", "hello again")
		})

		t.Run("an update to an image that is not there keeps the old version serving and says why", func(t *testing.T) {
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
			answers(t, endpoint, "/env/GREETING", "hello again")
		})

		t.Run("a crash reports its exit", func(t *testing.T) {
			crash := workload(ns, "crash", map[string]string{"EXIT_CODE": "3"}, nil)
			testenv.Create(t, env.Client, crash)
			testenv.Eventually(t, 60*time.Second, "the plan reports the exit", func() error {
				p := &scorev1b1.WorkloadPlan{}
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(crash), p); err != nil {
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

		t.Run("two Workloads with the same names in two namespaces stay apart", func(t *testing.T) {
			a := workload(other, "web", map[string]string{"GREETING": "from " + other}, nil)
			testenv.Create(t, env.Client, a)
			ea := ready(t, a)
			if ea == endpoint {
				t.Fatalf("both Workloads have the endpoint %s", ea)
			}
			answers(t, ea, "/env/GREETING", "from "+other)
			answers(t, endpoint, "/env/GREETING", "hello again")
		})

		t.Run("deletion leaves no container behind", func(t *testing.T) {
			for _, name := range []string{"web", "crash"} {
				obj := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				if err := env.Client.Delete(ctx, obj); err != nil {
					t.Fatal(err)
				}
				testenv.WaitGone(t, env.Client, obj)
				// The garbage collector deletes the plan, the Workload's dependent; this API server
				// runs none, so the test does what it would.
				plan := &scorev1b1.WorkloadPlan{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				if err := env.Client.Delete(ctx, plan, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
					t.Fatal(err)
				}
				testenv.WaitGone(t, env.Client, plan)
				if left := containers(t, ns, name); len(left) > 0 {
					t.Errorf("Workload %s deleted, its containers %v left", name, left)
				}
			}
		})
	})
}
