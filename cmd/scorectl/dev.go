package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scoreorchestrator "github.com/score-orchestrator/score-orchestrator"
	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/cligc"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/controlplane"
)

// newDevCommand is scorectl dev: up, down and members share the environment's directory and
// cluster name.
func newDevCommand() *cobra.Command {
	var env devenv.Env
	cmd := &cobra.Command{
		Use:     "dev",
		Short:   "Run the orchestrator on a local simulated cluster (what make dev does)",
		Example: "  scorectl dev up\n  scorectl dev down",
		Long: `Run the orchestrator on a local simulated cluster, with nothing but this binary.

"dev up" starts a simulated cluster (real kube-apiserver, etcd, kube-controller-manager and
kube-scheduler, with kwok nodes), installs the score.dev kinds, the sample Orchestrator Config
with the development provisioner catalog and the default templates, creates the Gateway
score-system/score-dev that the catalog's routes attach to and runs its controller (Contour,
logging to DIR/gateway.log), starts the controllers in the background (this binary, logging to
DIR/score-controllers.log), applies the examples and waits until they are Ready. "dev down"
stops the controllers and the gateway controller and deletes the cluster.

The cluster's binaries and Contour are built from source with the Go toolchain on first use
(about twelve minutes on two cores) and cached in
${SCORE_TOOLS_CACHE:-~/.cache/score-orchestrator}; later runs start in seconds. bash is needed
to run the cluster scripts.`,
	}
	cmd.PersistentFlags().StringVar(&env.Dir, "dir", defaultDevDir(), "directory of the environment's state (kubeconfig, logs)")
	cmd.PersistentFlags().StringVar(&env.Cluster, "name", devenv.DefaultCluster, "name of the simulated cluster")

	cmd.AddCommand(newDevUpCommand(&env), newDevDownCommand(&env), newDevMembersCommand(&env), newDevDockerCommand(&env), newDevControllersCommand())
	return cmd
}

// newDevUpCommand is scorectl dev up: the environment, the controllers this binary runs in the
// background, and the examples, Ready.
func newDevUpCommand(env *devenv.Env) *cobra.Command {
	var (
		timeout time.Duration
		metrics string
		probes  string
	)
	up := &cobra.Command{
		Use:   "up",
		Short: "Start the simulated cluster, the controllers and the examples; wait until Ready",
		Example: `  scorectl dev up
  kubectl --kubeconfig ~/.local/state/score-orchestrator/dev/kubeconfig get workloads -A
  scorectl dev up --dir .dev --timeout 5m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			if env.Dir, err = filepath.Abs(env.Dir); err != nil {
				return err
			}
			if err := os.MkdirAll(env.Dir, 0o755); err != nil {
				return err
			}
			env.Bundle = scoreorchestrator.Bundle
			env.Controllers = []string{self, "dev", "controllers"}
			env.ControllerFlags = []string{"--metrics-bind-address=" + metrics, "--health-probe-bind-address=" + probes}
			env.Progress = cmd.ErrOrStderr()
			if err := env.Up(cmd.Context(), timeout); err != nil {
				return err
			}
			return printDev(cmd, env)
		},
	}
	up.Flags().StringVarP(&env.Namespace, "namespace", "n", devenv.DefaultNamespace, "namespace of the examples")
	up.Flags().DurationVar(&timeout, "timeout", 3*time.Minute, "how long to wait for the examples to become Ready")
	up.Flags().StringVar(&metrics, "metrics-bind-address", "127.0.0.1:18080", "the controllers' metrics address (0 to disable)")
	up.Flags().StringVar(&probes, "health-probe-bind-address", "127.0.0.1:18081", "the controllers' health probe address (0 to disable)")
	return up
}

// newDevDownCommand is scorectl dev down: the controllers stopped, the clusters deleted.
func newDevDownCommand(env *devenv.Env) *cobra.Command {
	down := &cobra.Command{
		Use:     "down",
		Short:   "Stop the controllers and delete the simulated cluster",
		Example: `  scorectl dev down`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if env.Dir, err = filepath.Abs(env.Dir); err != nil {
				return err
			}
			if _, err := os.Stat(env.Dir); errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(cmd.ErrOrStderr(), "[dev] nothing to stop: %s does not exist\n", env.Dir)
				return nil
			}
			env.Bundle = scoreorchestrator.Bundle
			env.Progress = cmd.ErrOrStderr()
			return errors.Join(env.DownMembers(cmd.Context()), env.Down(cmd.Context()))
		},
	}
	return down
}

// newDevControllersCommand is scorectl dev controllers, which dev up starts: the controllers
// in the foreground.
func newDevControllersCommand() *cobra.Command {
	controllers := &cobra.Command{
		Use:                "controllers [score-controllers flags]",
		Short:              "Run the controllers in the foreground (what dev up starts in the background)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			cligc.Restore() // a long-running process: the collector's default
			if code := controlplane.Run("scorectl dev controllers", args, cmd.ErrOrStderr()); code != controlplane.ExitOK {
				return fmt.Errorf("the controllers exited with %d", code)
			}
			return nil
		},
	}
	return controllers
}

// newDevMembersCommand is scorectl dev members: two member clusters added to the environment.
func newDevMembersCommand(env *devenv.Env) *cobra.Command {
	var timeout time.Duration
	members := &cobra.Command{
		Use:   "members",
		Short: "Add two member clusters to the running environment and place an example on one by label",
		Long: `Starts two more simulated clusters on this machine (eu and us, each with its own API
server and etcd, state under DIR/members), registers them on the dev cluster, the hub, as
scorectl cluster add does (labels env=dev and region), adds to the Orchestrator Config the
web-service backend k8s-web-members (for Workloads labelled score.dev/placement=members; placed
on clusters labelled env=dev), applies examples/hello so labelled to namespace score-members, and
waits until it is Ready on a member. "dev down" deletes the members too.`,
		Example: `  scorectl dev members --dir .dev
  scorectl cluster list --kubeconfig .dev/kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if env.Dir, err = filepath.Abs(env.Dir); err != nil {
				return err
			}
			env.Bundle = scoreorchestrator.Bundle
			env.Progress = cmd.ErrOrStderr()
			return env.UpMembers(cmd.Context(), timeout)
		},
	}
	members.Flags().DurationVar(&timeout, "timeout", 3*time.Minute, "how long to wait for the example to become Ready")
	return members
}

// newDevDockerCommand is scorectl dev docker: a Docker host added to the environment.
func newDevDockerCommand(env *devenv.Env) *cobra.Command {
	var timeout time.Duration
	var agent, ordersAPI string
	docker := &cobra.Command{
		Use:   "docker",
		Short: "Add a Docker host to the running environment and run an example on it",
		Long: `Starts a dockerd of its own on this machine (state under DIR/docker, its socket
DIR/docker/docker.sock), builds Debian's nginx, postgres and redis into images from Debian's
packages (once; nothing is pulled) and imports the orders stand-in, registers the host "local"
on the dev cluster for the namespace score-docker as scorectl host add does, starts
score-docker-agent there (running those images where a Workload or a Compose definition names
nginx:1.27, postgres:17-alpine, redis:7-alpine or the orders image, its --image-alias), adds to
the Orchestrator Config the web-service backend docker-web for that namespace, applies
examples/hello and examples/web-postgres-redis (orders) there and waits until they are Ready,
their endpoints on 127.0.0.1, orders' postgres and redis beside them. "dev down" stops the
agent and dockerd too.`,
		Example: `  scorectl dev docker --dir .dev --agent bin/score-docker-agent --orders-api bin/orders-api
  DOCKER_HOST=unix://.dev/docker/docker.sock docker ps`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if env.Dir, err = filepath.Abs(env.Dir); err != nil {
				return err
			}
			if agent, err = filepath.Abs(agent); err != nil {
				return err
			}
			env.Bundle = scoreorchestrator.Bundle
			env.Progress = cmd.ErrOrStderr()
			if ordersAPI, err = filepath.Abs(ordersAPI); err != nil {
				return err
			}
			return env.UpDocker(cmd.Context(), devenv.DockerBinaries{Agent: agent, OrdersAPI: ordersAPI}, timeout)
		},
	}
	docker.Flags().DurationVar(&timeout, "timeout", 3*time.Minute, "how long to wait for the example to become Ready")
	docker.Flags().StringVar(&agent, "agent", "bin/score-docker-agent", "the score-docker-agent binary")
	docker.Flags().StringVar(&ordersAPI, "orders-api", "bin/orders-api", "the orders example's stand-in (a static build of examples/web-postgres-redis/orders-api)")
	return docker
}

// printDev prints the examples' status and endpoints and how to use the cluster.
func printDev(cmd *cobra.Command, env *devenv.Env) error {
	c, err := devenv.Connect(env.Kubeconfig())
	if err != nil {
		return err
	}
	var list scorev1b1.WorkloadList
	if err := c.List(cmd.Context(), &list, client.InNamespace(env.Namespace)); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	fmt.Fprintln(out)
	if err := printStatus(out, list.Items, "table"); err != nil {
		return err
	}
	fmt.Fprintln(out, "\nEndpoints:")
	for _, w := range list.Items {
		endpoint := "(no service)"
		if w.Status.Endpoint != nil {
			endpoint = *w.Status.Endpoint
		}
		fmt.Fprintf(out, "  %s: %s\n", w.Name, endpoint)
	}
	fmt.Fprintf(out, `
The cluster keeps running. Use it with:
  export KUBECONFIG=%s
  scorectl status -n %s
  scorectl why orders -n %s
  scorectl dashboard            # a live view in the browser, at http://localhost:8001
  %s get score -A
Controller logs: %s (the gateway controller's: %s)
Stop everything with: scorectl dev down%s
`, env.Kubeconfig(), env.Namespace, env.Namespace, filepath.Join(env.Dir, "bin", "kubectl"), env.ControllersLog(), env.Gateway().Log(), envFlags(env))
	return nil
}

// envFlags are the --dir and --name flags to repeat, where they are not the defaults.
func envFlags(env *devenv.Env) string {
	flags := ""
	if def, err := filepath.Abs(defaultDevDir()); err != nil || def != env.Dir {
		flags += " --dir " + env.Dir
	}
	if env.Cluster != devenv.DefaultCluster {
		flags += " --name " + env.Cluster
	}
	return flags
}

// defaultDevDir is $XDG_STATE_HOME/score-orchestrator/dev (~/.local/state/... by default).
func defaultDevDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "score-orchestrator", "dev")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ".score-dev"
	}
	return filepath.Join(home, ".local", "state", "score-orchestrator", "dev")
}
