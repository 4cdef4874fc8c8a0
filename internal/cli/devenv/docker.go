package devenv

// A Docker host for the local environment (make dev-docker): a dockerd of its own under
// Dir/docker, registered on the dev cluster as the host "local" serving the namespace
// score-docker, its agent running, a docker backend for that namespace, and the hello and
// orders examples Ready there with their endpoints on 127.0.0.1, orders' postgres and redis
// running beside it. Nothing is pulled: nginx, postgres and redis are Debian's, built into
// images from Debian's packages (internal/build/debimage) and given to the agent as aliases.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	dockerclient "github.com/docker/docker/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/build/debimage"
	"github.com/score-orchestrator/score-orchestrator/internal/build/toolcache"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/hosts"
)

// The local Docker host: its name, the namespace it serves and the backend that selects it.
const (
	DockerHost      = "local"
	DockerNamespace = "score-docker"
	DockerBackend   = "docker-web"
)

func (e *Env) dockerDir() string { return filepath.Join(e.Dir, "docker") }

// DockerHostAddr is the local dockerd's DOCKER_HOST.
func (e *Env) DockerHostAddr() string { return "unix://" + filepath.Join(e.dockerDir(), "docker.sock") }

func (e *Env) dockerd() background {
	return background{name: "dockerd", log: filepath.Join(e.dockerDir(), "dockerd.log"), pid: filepath.Join(e.dockerDir(), "dockerd.pid"), owner: e.dockerDir()}
}

func (e *Env) agent() background {
	return background{name: "the Docker agent", log: filepath.Join(e.dockerDir(), "agent.log"), pid: filepath.Join(e.dockerDir(), "agent.pid"), owner: e.dockerDir()}
}

// DockerBinaries are the programs the local Docker host runs: the agent, and the stand-in
// for the orders example's image (examples/web-postgres-redis/orders-api), both static.
type DockerBinaries struct{ Agent, OrdersAPI string }

// ordersImage is the orders example's image, and ordersStandIn what the host runs in its place.
const (
	ordersImage   = "ghcr.io/example/orders-api:1.4.2"
	ordersStandIn = "score-dev/orders-api:stand-in"
)

// UpDocker starts the local Docker host (Up must have run): dockerd, the images (Debian's
// nginx, postgres and redis, and the orders stand-in), the host's registration and agent, the
// docker backend, and hello and orders (with its postgres and redis, from the catalog's
// Compose definitions, DockerCatalog) in score-docker, waited for Ready.
// It is safe to run again.
func (e *Env) UpDocker(ctx context.Context, bins DockerBinaries, timeout time.Duration) error {
	hub, err := Connect(e.Kubeconfig())
	if err != nil {
		return fmt.Errorf("the hub (run dev up first): %w", err)
	}
	if err := os.MkdirAll(e.dockerDir(), 0o755); err != nil {
		return err
	}
	engine, err := e.startDockerd(ctx)
	if err != nil {
		return err
	}
	if err := e.dockerImages(ctx, engine, bins.OrdersAPI); err != nil {
		return err
	}
	if err := applyObject(ctx, hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: DockerNamespace}}); err != nil {
		return err
	}
	cfg, err := restConfig(e.Kubeconfig())
	if err != nil {
		return err
	}
	kubeconfig, err := hosts.Register(ctx, cfg, hub, hosts.Registration{Name: DockerHost, Namespaces: []string{DockerNamespace}, Address: "127.0.0.1"})
	if err != nil {
		return fmt.Errorf("registering the Docker host: %w", err)
	}
	agentKubeconfig := filepath.Join(e.dockerDir(), "agent.kubeconfig")
	if err := os.WriteFile(agentKubeconfig, kubeconfig, 0o600); err != nil {
		return err
	}
	if _, err := e.agent().stop(); err != nil {
		return err
	}
	args := []string{"env", "DOCKER_HOST=" + e.DockerHostAddr(), bins.Agent, "--kubeconfig", agentKubeconfig,
		"--host", DockerHost, "--address", "127.0.0.1", "--namespaces", DockerNamespace, "--image-alias", ordersImage + "=" + ordersStandIn}
	for from, to := range debimage.Aliases() {
		args = append(args, "--image-alias", from+"="+to)
	}
	pid, _, err := e.agent().start(args)
	if err != nil {
		return err
	}
	e.logf("started the Docker agent (pid %d), logs in %s", pid, e.agent().log)
	if err := e.addDockerBackend(ctx, hub); err != nil {
		return err
	}
	var workloads []*scorev1b1.Workload
	for _, example := range []string{"hello", "web-postgres-redis"} {
		e.logf("applying examples/%s to namespace %s, on the Docker host", example, DockerNamespace)
		ws, err := Example(e.Bundle, "examples/"+example+"/score.yaml", DockerNamespace)
		if err != nil {
			return err
		}
		workloads = append(workloads, ws...)
	}
	for _, w := range workloads {
		if err := applyObject(ctx, hub, w); err != nil {
			return err
		}
	}
	if err := WaitReady(ctx, hub, DockerNamespace, timeout, e.Progress); err != nil {
		return fmt.Errorf("%w (agent log: %s)", err, e.agent().log)
	}
	for _, w := range workloads {
		got := &scorev1b1.Workload{}
		if err := hub.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
			return err
		}
		if got.Status.Endpoint != nil {
			e.logf("%s/%s runs on the Docker host: curl %s", w.Namespace, w.Name, *got.Status.Endpoint)
		}
	}
	return nil
}

// dockerImages makes the images the host runs where the examples and the Docker hosts'
// catalog name others: Debian's nginx, PostgreSQL and Redis (cached in the tools cache), and
// the orders stand-in.
func (e *Env) dockerImages(ctx context.Context, engine *dockerclient.Client, ordersAPI string) error {
	cache, err := toolcache.Dir()
	if err != nil {
		return err
	}
	for _, img := range []debimage.Image{debimage.Nginx, debimage.Postgres, debimage.Redis} {
		if err := debimage.Ensure(ctx, engine, img, filepath.Join(cache, "images"), e.logf); err != nil {
			return err
		}
	}
	if err := debimage.ImportProgram(ctx, engine, ordersStandIn, ordersAPI); err != nil {
		return fmt.Errorf("the orders stand-in: %w", err)
	}
	return nil
}

// DownDocker stops the agent and dockerd (with their containers), if they run.
func (e *Env) DownDocker() error {
	var errs error
	for _, b := range []background{e.agent(), e.dockerd()} {
		pid, err := b.stop()
		if pid != 0 {
			e.logf("stopped %s (pid %d)", b.name, pid)
		}
		errs = errors.Join(errs, err)
	}
	return errs
}

// startDockerd starts the environment's dockerd unless it answers already.
func (e *Env) startDockerd(ctx context.Context) (*dockerclient.Client, error) {
	engine, err := dockerclient.NewClientWithOpts(dockerclient.WithHost(e.DockerHostAddr()), dockerclient.WithAPIVersionNegotiation())
	if err != nil {
		return nil, err
	}
	if _, err := engine.Ping(ctx); err == nil {
		return engine, nil
	}
	bin, err := exec.LookPath("dockerd")
	if err != nil {
		return nil, errors.New("dockerd is not installed: hack/tools.sh docker installs Debian's docker.io (as root)")
	}
	dir := e.dockerDir()
	pid, exited, err := e.dockerd().start([]string{bin, "--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "dockerd.run.pid"), "-H", e.DockerHostAddr()})
	if err != nil {
		return nil, err
	}
	e.logf("started dockerd (pid %d), logs in %s", pid, e.dockerd().log)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if _, err := engine.Ping(ctx); err == nil {
			return engine, nil
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("dockerd exited (%v); its log: %s", err, e.dockerd().log)
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("dockerd did not answer within a minute; its log: %s", e.dockerd().log)
		}
	}
}

// addDockerBackend adds, once, the docker web-service backend for the namespace score-docker
// and the Docker hosts' catalog to the Orchestrator Config the hub runs with.
func (e *Env) addDockerBackend(ctx context.Context, hub client.Client) error {
	return EditConfig(ctx, hub, func(doc map[string]any) error {
		if err := AddDockerCatalog(doc, e.Bundle); err != nil {
			return err
		}
		return AddDockerBackend(doc, DockerBackend, DockerNamespace)
	})
}

// DockerCatalog is the development catalog's file for Docker hosts: definitions in
// score-compose's format (postgres, redis, volume), which serve docker claims only. It is not
// in the development config (config/provisioners): a Docker host brings it.
const DockerCatalog = "config/docker/provisioners.yaml"

// AddDockerCatalog appends, once each, the definitions of the Docker hosts' catalog (read from
// bundle, laid out as the repository) to a config document's provisioners.
func AddDockerCatalog(doc map[string]any, bundle fs.FS) error {
	raw, err := fs.ReadFile(bundle, DockerCatalog)
	if err != nil {
		return err
	}
	var defs []any
	if err := yaml.Unmarshal(raw, &defs); err != nil {
		return fmt.Errorf("%s: %w", DockerCatalog, err)
	}
	provisioners, _ := doc["provisioners"].([]any)
	have := map[any]bool{}
	for _, p := range provisioners {
		have[p.(map[string]any)["uri"]] = true
	}
	for _, d := range defs {
		if !have[d.(map[string]any)["uri"]] {
			provisioners = append(provisioners, d)
		}
	}
	doc["provisioners"] = provisioners
	return nil
}

// AddDockerBackend puts, once, a docker backend id first in the web-service profile of a
// config document, for the Workloads of the namespaces.
func AddDockerBackend(doc map[string]any, id string, namespaces ...string) error {
	profiles, _ := doc["profiles"].([]any)
	for _, p := range profiles {
		profile, _ := p.(map[string]any)
		if profile["name"] != "web-service" {
			continue
		}
		backends, _ := profile["backends"].([]any)
		for _, b := range backends {
			if b.(map[string]any)["backendId"] == id {
				return nil
			}
		}
		var selected []any
		for _, ns := range namespaces {
			selected = append(selected, ns)
		}
		profile["backends"] = append([]any{map[string]any{"backendId": id, "runtimeClass": scorev1b1.RuntimeClassDocker, "priority": 1000, "version": "1.0.0",
			"template":    map[string]any{"kind": string(scorev1b1.TemplateCompose)},
			"constraints": map[string]any{"selectors": []any{map[string]any{"namespaces": selected}}}}}, backends...)
		return nil
	}
	return errors.New("the Orchestrator Config has no web-service profile")
}

// applyObject applies an object of the scheme, without its status.
func applyObject(ctx context.Context, c client.Client, o client.Object) error {
	u, err := toUnstructured(c, o)
	if err != nil {
		return err
	}
	unstructured.RemoveNestedField(u.Object, "status")
	return apply(ctx, c, u)
}
