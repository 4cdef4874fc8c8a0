package devenv

// A Docker host for the local environment (make dev-docker): a dockerd of its own under
// Dir/docker, registered on the dev cluster as the host "local" serving the namespace
// score-docker, its agent running, a docker backend for that namespace, and the hello example
// Ready there with its endpoint on 127.0.0.1. Nothing is pulled: hello's nginx is Debian's,
// built into an image from Debian's packages (mmdebstrap) and given to the agent as an alias.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/docker/api/types/image"
	dockerclient "github.com/docker/docker/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/hosts"
)

// The local Docker host: its name, the namespace it serves and the backend that selects it.
const (
	DockerHost      = "local"
	DockerNamespace = "score-docker"
	DockerBackend   = "docker-web"
	// nginxAlias is the image the agent runs where hello names nginx:1.27: Debian's nginx.
	nginxAlias = "score-dev/nginx:debian-bookworm"
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

// UpDocker starts the local Docker host (Up must have run): dockerd, the nginx image, the
// host's registration and agent, the docker backend, and hello in score-docker, waited for
// Ready. agentBin is the score-docker-agent binary. It is safe to run again.
func (e *Env) UpDocker(ctx context.Context, agentBin string, timeout time.Duration) error {
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
	if err := e.nginxImage(ctx, engine); err != nil {
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
	pid, _, err := e.agent().start([]string{"env", "DOCKER_HOST=" + e.DockerHostAddr(), agentBin, "--kubeconfig", agentKubeconfig,
		"--host", DockerHost, "--address", "127.0.0.1", "--namespaces", DockerNamespace, "--image-alias", "nginx:1.27=" + nginxAlias})
	if err != nil {
		return err
	}
	e.logf("started the Docker agent (pid %d), logs in %s", pid, e.agent().log)
	if err := addDockerBackend(ctx, hub); err != nil {
		return err
	}
	e.logf("applying examples/hello to namespace %s, on the Docker host", DockerNamespace)
	workloads, err := Example(e.Bundle, "examples/hello/score.yaml", DockerNamespace)
	if err != nil {
		return err
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

// nginxImage makes, once, Debian's nginx as an image: a root filesystem of Debian's packages
// (mmdebstrap, from this machine's apt sources) serving /usr/share/nginx/html, as the image
// hello names does. The package's default site is a symbolic link with an absolute target,
// which the hook, running on this machine, must not follow: it is replaced, not edited.
func (e *Env) nginxImage(ctx context.Context, engine *dockerclient.Client) error {
	if _, err := engine.ImageInspect(ctx, nginxAlias); err == nil {
		return nil
	}
	sources := "/etc/apt/sources.list.d/debian.sources"
	if _, err := os.Stat(sources); err != nil {
		sources = "/etc/apt/sources.list"
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		return errors.New("mmdebstrap is not installed: hack/tools.sh docker installs it (as root)")
	}
	tarball := filepath.Join(e.dockerDir(), "nginx-rootfs.tar")
	e.logf("building Debian's nginx into an image (mmdebstrap, about half a minute)")
	cmd := exec.CommandContext(ctx, "mmdebstrap", "--variant=essential", "--include=nginx-light", "--mode=root", "--format=tar",
		`--customize-hook=rm -f "$1/etc/nginx/sites-enabled/default" && echo "server { listen 80 default_server; root /usr/share/nginx/html; index index.html; }" > "$1/etc/nginx/sites-enabled/default"`,
		"bookworm", tarball, sources)
	if out, err := cmd.CombinedOutput(); err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		return fmt.Errorf("mmdebstrap: %v: %s", err, strings.Join(lines[max(0, len(lines)-4):], "; "))
	}
	defer os.Remove(tarball)
	f, err := os.Open(tarball)
	if err != nil {
		return err
	}
	defer f.Close()
	out, err := engine.ImageImport(ctx, image.ImportSource{Source: f, SourceName: "-"}, nginxAlias,
		image.ImportOptions{Changes: []string{`ENTRYPOINT ["nginx", "-g", "daemon off;"]`}})
	if err != nil {
		return err
	}
	defer out.Close()
	_, err = io.Copy(io.Discard, out)
	return err
}

// addDockerBackend adds, once, the docker web-service backend for the namespace score-docker
// to the Orchestrator Config the hub runs with.
func addDockerBackend(ctx context.Context, hub client.Client) error {
	return EditConfig(ctx, hub, func(doc map[string]any) error {
		return AddDockerBackend(doc, DockerBackend, DockerNamespace)
	})
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
