// Command score-docker-agent is the Docker runtime: it runs on a Docker host, connects to the
// hub (the cluster the control plane runs in) with the identity it is given, and runs there
// the plans of class docker placed on its host. The Docker socket stays on the host: the hub
// holds no credential of it. Run with -h for every flag.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"

	dockerclient "github.com/docker/docker/client"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/dockerruntime"
	"github.com/score-orchestrator/score-orchestrator/internal/scheme"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "score-docker-agent:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("score-docker-agent", flag.ContinueOnError)
	host := fs.String("host", "", "the name of this Docker host: the agent runs the docker plans placed on it (required)")
	unplaced := fs.Bool("unplaced", true, "also run the docker plans of its namespaces placed on no host (a namespace has one host)")
	address := fs.String("address", "", "the host address Workloads' ports are published on and their endpoints name (required)")
	scope := fs.String("scope", string(scorev1b1.ScopeVPC), "the scope of the endpoints: Public, VPC, ClusterLocal or Other")
	namespaces := fs.String("namespaces", "", "the namespaces the host serves, comma-separated, as scorectl host add registered them (empty: every namespace, for an identity that may read them all)")
	concurrency := fs.Int("concurrency", dockerruntime.DefaultConcurrency, "how many plans are reconciled at once")
	images := map[string]string{}
	fs.Func("image-alias", "FROM=TO: run the image TO where a Workload names FROM (a local copy of an image this host cannot pull); repeatable", func(v string) error {
		from, to, ok := strings.Cut(v, "=")
		if !ok || from == "" || to == "" {
			return fmt.Errorf("%q is not FROM=TO", v)
		}
		images[from] = to
		return nil
	})
	metrics := fs.String("metrics-bind-address", "0", "the metrics endpoint's address (0: none)")
	opts := zap.Options{}
	opts.BindFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: score-docker-agent --host NAME --address ADDRESS [--kubeconfig hub.kubeconfig]\n\nThe Docker Engine is found as the docker CLI finds it (DOCKER_HOST, or the local socket).")
		fs.PrintDefaults()
	}
	ctrl.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *host == "" || *address == "" {
		return errors.New("--host and --address are required")
	}
	if net.ParseIP(*address) == nil {
		return fmt.Errorf("--address %q is not an IP address", *address)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	engine, err := dockerclient.NewClientWithOpts(dockerclient.FromEnv, dockerclient.WithAPIVersionNegotiation())
	if err != nil {
		return fmt.Errorf("the Docker Engine: %w", err)
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("the hub's kubeconfig: %w", err)
	}
	mgrOpts := ctrl.Options{Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: *metrics}}
	var served []string
	if *namespaces != "" {
		// The identity scorectl host add makes may read only these: the caches watch them alone.
		for _, ns := range strings.Split(*namespaces, ",") {
			served = append(served, strings.TrimSpace(ns))
		}
	}
	mgrOpts.Cache = dockerruntime.CacheOptions(served)
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return err
	}
	r := &dockerruntime.Reconciler{
		Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Docker: engine,
		Host: *host, Unplaced: *unplaced, Address: *address, Scope: scorev1b1.ExposureScope(*scope),
		Probe: dockerruntime.NewProbeClient(), ProbeEvery: dockerruntime.DefaultProbeEvery, Concurrency: *concurrency, Images: images,
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
