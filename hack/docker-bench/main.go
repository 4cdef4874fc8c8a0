// Command docker-bench times the Docker runtime against Docker Compose in one sitting: N
// Workloads of one container each (the static test server, a readiness probe, one published
// port) brought to Ready by the control plane and the agent, against the same N containers
// brought up by `docker compose up --wait` (a healthcheck asking the same readiness path), on
// the same dockerd, alternating, --runs times each. It also counts the containers the agent
// creates at rest and after a restart of the agent (both should be 0). The hub is a real
// kube-apiserver and etcd (the test binaries hack/tools.sh builds); nothing is pulled.
//
//	make bench-docker N=50 COMPOSE_SRC=path/to/docker/compose
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/controlplane"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/dockerruntime"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/hosts"
	"github.com/score-orchestrator/score-orchestrator/internal/scheme"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/dockerd"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

const config = `apiVersion: score.dev/v1b1
kind: OrchestratorConfig
profiles:
  - name: web-service
    backends:
      - {backendId: docker-web, runtimeClass: docker, version: 1.0.0, template: {kind: compose}}
defaults: {profile: web-service}
`

const host = "bench-host"

type run struct {
	Runtime string  `json:"runtime"`
	Seconds float64 `json:"seconds"`
	// CreatedAtRest and CreatedAfterRestart count the containers the agent created in the
	// windows after all Ready, and after its restart.
	CreatedAtRest       *int `json:"createdAtRest,omitempty"`
	CreatedAfterRestart *int `json:"createdAfterRestart,omitempty"`
}

type bench struct {
	n       int
	compose string
	window  time.Duration
	c       client.Client
	engine  *dockerd.Engine
	agent   func() (func(), error)
	stop    func()
}

func main() {
	n := flag.Int("n", 50, "Workloads (and Compose services)")
	runs := flag.Int("runs", 3, "runs of each, alternating")
	compose := flag.String("compose", "bin/docker-compose", "the docker-compose binary (hack/tools.sh docker-compose builds it from COMPOSE_SRC)")
	concurrency := flag.Int("concurrency", dockerruntime.DefaultConcurrency, "the agent's --concurrency")
	window := flag.Duration("window", 15*time.Second, "how long the at-rest and after-restart windows count creations")
	out := flag.String("out", "docker-bench.json", "where to write the JSON result")
	flag.Parse()
	if err := benchmark(*n, *runs, *concurrency, *compose, *window, *out); err != nil {
		fmt.Fprintln(os.Stderr, "docker-bench:", err)
		os.Exit(1)
	}
}

func benchmark(n, runs, concurrency int, compose string, window time.Duration, out string) error {
	if _, err := os.Stat(compose); err != nil {
		return fmt.Errorf("%s: %w (hack/tools.sh docker-compose builds it from a checkout in COMPOSE_SRC)", compose, err)
	}
	compose, _ = filepath.Abs(compose)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctrl.SetLogger(logr.Discard())
	env, err := testenv.Start()
	if err != nil {
		return err
	}
	defer env.Stop()
	engine, err := dockerd.Start()
	if err != nil {
		return err
	}
	defer engine.Stop()
	if err := engine.ImportTestServer(ctx, testenv.RepoRoot()); err != nil {
		return err
	}
	var namespaces []string
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "score-system"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "score-system", Name: "orchestrator-config"}, Data: map[string]string{"config.yaml": config}}}
	for i := 1; i <= runs; i++ {
		ns := fmt.Sprintf("bench-%d", i)
		namespaces = append(namespaces, ns)
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	if err := testenv.CreateAll(ctx, env.Client, objs...); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	if err := controlplane.Setup(mgr, controlplane.DefaultOptions()); err != nil {
		return err
	}
	go func() { _ = mgr.Start(ctx) }()
	kubeconfig, err := hosts.Register(ctx, env.Config, env.Client, hosts.Registration{Name: host, Namespaces: namespaces, Address: "127.0.0.1"})
	if err != nil {
		return err
	}
	agentConfig, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return err
	}
	b := &bench{n: n, compose: compose, window: window, c: env.Client, engine: engine,
		agent: func() (func(), error) {
			return engine.StartAgent(ctx, agentConfig, dockerd.Agent{Host: host, Namespaces: namespaces, Concurrency: concurrency})
		}}
	if b.stop, err = b.agent(); err != nil {
		return err
	}
	defer func() { b.stop() }()
	var results []run
	for i, ns := range namespaces {
		r, err := b.ours(ctx, ns)
		if err != nil {
			return err
		}
		results = append(results, r)
		fmt.Printf("run %d: docker runtime %.1f s (created at rest %d, after a restart %d)\n", i+1, r.Seconds, *r.CreatedAtRest, *r.CreatedAfterRestart)
		r, err = b.composeUp(ctx, fmt.Sprintf("compose%d", i+1))
		if err != nil {
			return err
		}
		results = append(results, r)
		fmt.Printf("run %d: docker compose up --wait %.1f s\n", i+1, r.Seconds)
	}
	ours, theirs := median(results, "docker"), median(results, "compose")
	fmt.Printf("N=%d, medians of %d: docker runtime %.1f s, compose %.1f s, ratio %.2f×\n", n, runs, ours, theirs, ours/theirs)
	data, _ := json.MarshalIndent(map[string]any{"n": n, "runs": results, "medianDockerRuntime": ours, "medianCompose": theirs, "ratio": ours / theirs}, "", "  ")
	return os.WriteFile(out, data, 0o644)
}

// ours creates N Workloads and times them to Ready with an endpoint; then counts the
// containers created at rest and after an agent restart; then deletes them.
func (b *bench) ours(ctx context.Context, ns string) (run, error) {
	start := time.Now()
	for i := 0; i < b.n; i++ {
		w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("web-%d", i)}}
		w.Spec.Containers = map[string]scorev1b1.Container{"main": {Image: dockerd.TestServer, Variables: map[string]string{"GREETING": "hello"},
			ReadinessProbe: &scorev1b1.ContainerProbe{HTTPGet: &scorev1b1.HTTPProbe{Path: "/ready", Port: 8080}}}}
		w.Spec.Service = &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"http": {Port: 80, TargetPort: ptr.To(int32(8080))}}}
		if err := b.c.Create(ctx, w); err != nil {
			return run{}, err
		}
	}
	for {
		list := &scorev1b1.WorkloadList{}
		if err := b.c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return run{}, err
		}
		ready := 0
		for _, w := range list.Items {
			c := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
			if c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation && w.Status.Endpoint != nil {
				ready++
			}
		}
		if ready == b.n {
			break
		}
		if time.Since(start) > 10*time.Minute {
			return run{}, fmt.Errorf("%d of %d Ready after 10 minutes", ready, b.n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r := run{Runtime: "docker", Seconds: time.Since(start).Seconds()}
	if os.Getenv("BENCH_TIMELINE") != "" {
		b.timeline(ctx, ns, start)
	}
	atRest, err := b.created(ctx, ns, nil)
	if err != nil {
		return r, err
	}
	afterRestart, err := b.created(ctx, ns, func() error {
		b.stop()
		var err error
		b.stop, err = b.agent()
		return err
	})
	if err != nil {
		return r, err
	}
	r.CreatedAtRest, r.CreatedAfterRestart = &atRest, &afterRestart
	return r, b.clean(ctx, ns)
}

// created counts the containers created in the namespace during the window, after do.
func (b *bench) created(ctx context.Context, ns string, do func() error) (int, error) {
	wctx, cancel := context.WithTimeout(ctx, b.window)
	defer cancel()
	msgs, errs := b.engine.Client.Events(wctx, events.ListOptions{Filters: filters.NewArgs(filters.Arg("type", "container"), filters.Arg("event", "create"),
		filters.Arg("label", dockerruntime.LabelNamespace+"="+ns))})
	if do != nil {
		if err := do(); err != nil {
			return 0, err
		}
	}
	n := 0
	for {
		select {
		case <-msgs:
			n++
		case <-errs:
			return n, nil
		case <-wctx.Done():
			return n, nil
		}
	}
}

// clean deletes the Workloads and their plans (this API server runs no garbage collector)
// and waits for their containers to go.
func (b *bench) clean(ctx context.Context, ns string) error {
	if err := b.c.DeleteAllOf(ctx, &scorev1b1.Workload{}, client.InNamespace(ns)); err != nil {
		return err
	}
	for start := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		_ = b.c.DeleteAllOf(ctx, &scorev1b1.WorkloadPlan{}, client.InNamespace(ns))
		list, err := b.engine.Client.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", dockerruntime.LabelNamespace+"="+ns))})
		if err != nil {
			return err
		}
		if len(list) == 0 {
			return nil
		}
		if time.Since(start) > 5*time.Minute {
			return fmt.Errorf("%d containers of %s left after 5 minutes", len(list), ns)
		}
	}
}

// composeUp brings up the same N containers with docker compose up --wait, then down.
func (b *bench) composeUp(ctx context.Context, project string) (run, error) {
	dir, err := os.MkdirTemp("", "compose")
	if err != nil {
		return run{}, err
	}
	defer os.RemoveAll(dir)
	var file strings.Builder
	file.WriteString("services:\n")
	for i := 0; i < b.n; i++ {
		fmt.Fprintf(&file, `  web-%d:
    image: %s
    environment: {GREETING: hello}
    ports: ["127.0.0.1::8080"]
    restart: unless-stopped
    healthcheck: {test: ["CMD", "/program", "healthcheck"], interval: 1s, timeout: 1s, retries: 60}
`, i, dockerd.TestServer)
	}
	path := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(path, []byte(file.String()), 0o644); err != nil {
		return run{}, err
	}
	cmd := func(args ...string) error {
		c := exec.CommandContext(ctx, b.compose, append([]string{"-f", path, "-p", project}, args...)...)
		c.Env = append(os.Environ(), "DOCKER_HOST="+b.engine.Host)
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("docker compose %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	start := time.Now()
	if err := cmd("up", "-d", "--wait"); err != nil {
		return run{}, err
	}
	r := run{Runtime: "compose", Seconds: time.Since(start).Seconds()}
	return r, cmd("down", "-t", "1")
}

func median(rs []run, runtime string) float64 {
	var s []float64
	for _, r := range rs {
		if r.Runtime == runtime {
			s = append(s, r.Seconds)
		}
	}
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// timeline prints when the plans and the containers were created and started, from start.
func (b *bench) timeline(ctx context.Context, ns string, start time.Time) {
	plans := &scorev1b1.WorkloadPlanList{}
	_ = b.c.List(ctx, plans, client.InNamespace(ns))
	var planTimes []float64
	for _, p := range plans.Items {
		planTimes = append(planTimes, p.CreationTimestamp.Sub(start).Seconds())
	}
	list, _ := b.engine.Client.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", dockerruntime.LabelNamespace+"="+ns))})
	var created, started []float64
	for _, s := range list {
		c, err := b.engine.Client.ContainerInspect(ctx, s.ID)
		if err != nil {
			continue
		}
		if t, err := time.Parse(time.RFC3339Nano, c.Created); err == nil {
			created = append(created, t.Sub(start).Seconds())
		}
		if t, err := time.Parse(time.RFC3339Nano, c.State.StartedAt); err == nil {
			started = append(started, t.Sub(start).Seconds())
		}
	}
	for _, l := range [][]float64{planTimes, created, started} {
		slices.Sort(l)
	}
	q := func(l []float64) string {
		if len(l) == 0 {
			return "-"
		}
		return fmt.Sprintf("first %.1f median %.1f last %.1f", l[0], l[len(l)/2], l[len(l)-1])
	}
	fmt.Printf("  plans created: %s\n  containers created: %s\n  containers started: %s\n", q(planTimes), q(created), q(started))
}
