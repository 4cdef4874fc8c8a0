// Package devenv is the local development environment behind `make dev` and `scorectl dev`:
// a simulated cluster (real kube-apiserver, etcd, kube-controller-manager and kube-scheduler,
// with kwok nodes), the score.dev kinds, the sample Orchestrator Config with the development
// provisioner catalog, the default templates, a Gateway served by a real gateway controller
// (Contour), the controllers as a background process, and the examples, waited on until Ready. Everything it installs comes from the shipped bundle,
// so a machine with the scorectl binary alone can run it.
package devenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/scheme"
)

// Defaults of an Env.
const (
	DefaultCluster   = "score-dev"
	DefaultNamespace = "score-demo"
	controllersLog   = "score-controllers.log"
	controllersPid   = "score-controllers.pid"
)

// Env is one local development environment.
type Env struct {
	// Bundle is the shipped content (the repository's config/, examples/ and hack/ scripts).
	Bundle fs.FS
	// Dir keeps the environment's state: the cluster scripts and tool links, the kubeconfig,
	// kwok's work directory, the controllers' and the gateway controller's logs and pid files.
	Dir string
	// Cluster names the kwok cluster.
	Cluster string
	// Namespace receives the examples.
	Namespace string
	// Controllers is the command line that runs the controllers (the score-controllers
	// flags are appended to it).
	Controllers []string
	// ControllerFlags are extra score-controllers flags (metrics and probe addresses).
	ControllerFlags []string
	// Progress receives progress lines.
	Progress io.Writer
}

// Kubeconfig is the path of the cluster's kubeconfig.
func (e *Env) Kubeconfig() string { return filepath.Join(e.Dir, "kubeconfig") }

// ControllersLog is the path of the controllers' log.
func (e *Env) ControllersLog() string { return filepath.Join(e.Dir, controllersLog) }

func (e *Env) logf(format string, args ...any) {
	fmt.Fprintf(e.Progress, "[dev] "+format+"\n", args...)
}

// Up brings the environment up and waits until every example is Ready. It is safe to run
// again: the cluster is reused, everything is applied server-side and the controllers are
// restarted.
func (e *Env) Up(ctx context.Context, timeout time.Duration) error {
	if err := e.cluster(ctx, "up"); err != nil {
		return fmt.Errorf("starting the simulated cluster: %w", err)
	}
	c, err := Connect(e.Kubeconfig())
	if err != nil {
		return err
	}
	e.logf("installing the score.dev kinds, the Orchestrator Config (sample profiles and the development catalog) and the default templates")
	if _, err := Install(ctx, c, e.Bundle); err != nil {
		return fmt.Errorf("installing: %w", err)
	}
	// A copy of the config for offline use: scorectl render --config DIR/orchestrator-config.yaml.
	assembled, err := orchconfig.DevelopmentConfig(e.Bundle)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(e.Dir, "orchestrator-config.yaml"), assembled, 0o644); err != nil {
		return err
	}
	gw := e.Gateway()
	e.logf("starting the gateway controller (Contour) for the Gateway %s/%s, the parent of the catalog's routes", GatewayNamespace, GatewayName)
	pid, err := gw.Up(ctx, c, e.Bundle, time.Minute)
	if err != nil {
		return fmt.Errorf("the gateway: %w", err)
	}
	e.logf("  the Gateway is Programmed; its controller (pid %d) logs in %s", pid, gw.Log())
	if err := e.StopControllers(); err != nil {
		return err
	}
	if err := e.startControllers(); err != nil {
		return err
	}
	e.logf("applying the examples to namespace %s", e.Namespace)
	names, err := ApplyExamples(ctx, c, e.Bundle, e.Namespace)
	if err != nil {
		return err
	}
	for _, n := range names {
		e.logf("  %s", n)
	}
	if err := WaitReady(ctx, c, e.Namespace, timeout, e.Progress); err != nil {
		return fmt.Errorf("%w (controller logs: %s)", err, e.ControllersLog())
	}
	return nil
}

// Down stops the controllers and the gateway controller and deletes the cluster. It is safe
// to run when nothing runs.
func (e *Env) Down(ctx context.Context) error {
	if err := errors.Join(e.StopControllers(), e.DownDocker()); err != nil {
		return err
	}
	pid, err := e.Gateway().Stop()
	if err != nil {
		return err
	}
	if pid != 0 {
		e.logf("stopped the gateway controller (pid %d)", pid)
	}
	return e.cluster(ctx, "down")
}

// Gateway is the environment's gateway controller: hack/tools.sh links its binary into
// Dir/bin, where the cluster script runs it.
func (e *Env) Gateway() *Gateway {
	return &Gateway{Bin: filepath.Join(e.Dir, "bin"), Dir: e.Dir, Kubeconfig: e.Kubeconfig()}
}

// cluster runs the shipped cluster script with verb. The scripts are written under Dir, so
// the tool links land in Dir/bin; the tools themselves are built once into a cache shared by
// every clone and environment on the machine.
func (e *Env) cluster(ctx context.Context, verb string) error {
	for _, name := range []string{"hack/tools.sh", "hack/cluster.sh"} {
		data, err := fs.ReadFile(e.Bundle, name)
		if err != nil {
			return err
		}
		path := filepath.Join(e.Dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o755); err != nil {
			return err
		}
	}
	// Everything the scripts and kwokctl print goes to a log; the scripts' own step lines
	// ("[cluster] ...", "[tools] ...") are shown too, and the log's end when it fails.
	logPath := filepath.Join(e.Dir, "cluster.log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	steps := &stepLines{out: e.Progress}
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(e.Dir, "hack", "cluster.sh"), verb)
	cmd.Env = append(os.Environ(), "SCORE_CLUSTER_NAME="+e.Cluster, "SCORE_DEV_DIR="+e.Dir)
	cmd.Stdout = io.MultiWriter(log, steps)
	cmd.Stderr = cmd.Stdout
	if err := cmd.Run(); err != nil {
		tail, _ := os.ReadFile(logPath)
		if len(tail) > 4000 {
			tail = tail[len(tail)-4000:]
		}
		return fmt.Errorf("hack/cluster.sh %s: %w (its log, %s, ends:\n%s)", verb, err, logPath, tail)
	}
	return nil
}

// stepLines passes on the lines that are a script's own steps ("[cluster] creating cluster
// dev"), not what the programs it runs print (kwokctl's JSON log lines, with the source file
// of each).
type stepLines struct {
	out     io.Writer
	partial []byte
}

func (s *stepLines) Write(p []byte) (int, error) {
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := s.partial[:i+1]
		if bytes.HasPrefix(line, []byte("[")) {
			if _, err := s.out.Write(line); err != nil {
				return len(p), err
			}
		}
		s.partial = s.partial[i+1:]
	}
}

// controllers is the controllers' process, which Up leaves running.
func (e *Env) controllers() background {
	return background{name: "the controllers", log: e.ControllersLog(), pid: filepath.Join(e.Dir, controllersPid), owner: e.Kubeconfig()}
}

// startControllers starts the controllers in the background, logging to Dir.
func (e *Env) startControllers() error {
	argv := append(append(append([]string{}, e.Controllers...), "--kubeconfig="+e.Kubeconfig()), e.ControllerFlags...)
	pid, _, err := e.controllers().start(argv)
	if err != nil {
		return err
	}
	e.logf("started the controllers (pid %d), logs in %s", pid, e.ControllersLog())
	return nil
}

// StopControllers stops the controllers Up started, if they still run.
func (e *Env) StopControllers() error {
	pid, err := e.controllers().stop()
	if pid != 0 {
		e.logf("stopped the controllers (pid %d)", pid)
	}
	return err
}

// Connect returns a client for the kubeconfig at path.
func Connect(path string) (client.Client, error) {
	cfg, err := restConfig(path)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme.New()})
}
