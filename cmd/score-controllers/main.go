// Command score-controllers runs the Score Orchestrator's controllers: the orchestrator
// (Workloads into claims and plans, one abstract status), the provisioner (claims into
// provisioned dependencies) and the Kubernetes runtime (plans into applied objects and
// endpoints). --controllers chooses which run in this process, so they can be deployed
// together or apart.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/claim"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/plan"
	"github.com/score-orchestrator/score-orchestrator/internal/ocifetch"
	"github.com/score-orchestrator/score-orchestrator/internal/orchestrator"
)

// The controllers this binary can run.
const (
	controllerOrchestrator = "orchestrator"
	controllerProvisioner  = "provisioner"
	controllerRuntime      = "runtime"
)

func main() {
	opts := orchestrator.DefaultOptions()
	var (
		controllers, metricsAddr, probeAddr string
		leaderElect, enableCmd              bool
		provisionerConcurrency              int
		runtimeConcurrency                  int
	)
	flag.StringVar(&controllers, "controllers", controllerOrchestrator+","+controllerProvisioner+","+controllerRuntime, "comma-separated controllers to run: orchestrator, provisioner, runtime")
	flag.StringVar(&opts.Config.ConfigMap.Namespace, "config-namespace", opts.Config.ConfigMap.Namespace, "namespace of the Orchestrator Config ConfigMap")
	flag.StringVar(&opts.Config.ConfigMap.Name, "config-name", opts.Config.ConfigMap.Name, "name of the Orchestrator Config ConfigMap")
	flag.StringVar(&opts.Config.Key, "config-key", opts.Config.Key, "key of the document in the ConfigMap")
	flag.StringVar(&opts.Config.OCIRef, "config-oci-ref", "", "load the Orchestrator Config from this OCI artifact, pinned by digest (<registry>/<repository>@sha256:<hex>), instead of the ConfigMap")
	flag.StringVar(&opts.Config.OCICacheDir, "oci-cache-dir", "", "directory that caches verified OCI content by digest")
	flag.BoolVar(&opts.Config.OCIPlainHTTP, "oci-plain-http", false, "reach OCI registries over plain HTTP (development only)")
	flag.StringVar(&opts.Region, "region", "", "region this orchestrator runs in (for backends restricted to regions)")
	flag.IntVar(&opts.Concurrency, "concurrency", opts.Concurrency, "Workloads reconciled at once")
	flag.IntVar(&provisionerConcurrency, "provisioner-concurrency", 4, "claims provisioned at once")
	flag.IntVar(&runtimeConcurrency, "runtime-concurrency", 4, "plans rendered and applied at once")
	flag.BoolVar(&enableCmd, "enable-cmd-provisioners", false, "allow cmd:// provisioners, which run binaries inside the controller")
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "address of the metrics endpoint (0 to disable)")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address of the health and readiness probes")
	flag.BoolVar(&leaderElect, "leader-elect", false, "elect a leader so that one replica reconciles at a time")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	run := map[string]bool{}
	for _, c := range strings.Split(controllers, ",") {
		c = strings.TrimSpace(c)
		if c != controllerOrchestrator && c != controllerProvisioner && c != controllerRuntime {
			fmt.Fprintf(os.Stderr, "unknown controller %q: use orchestrator, provisioner, runtime\n", c)
			os.Exit(2)
		}
		run[c] = true
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		fail(log, err, "Building the scheme")
	}
	if err := scorev1b1.AddToScheme(scheme); err != nil {
		fail(log, err, "Building the scheme")
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        "score-" + strings.ReplaceAll(controllers, ",", "-") + ".score.dev",
		LeaderElectionNamespace: opts.Config.ConfigMap.Namespace,
		Cache:                   configsource.CacheOptions(opts.Config),
	})
	if err != nil {
		fail(log, err, "Creating the manager")
	}
	store, err := configsource.Setup(mgr, opts.Config, "score-controllers")
	if err != nil {
		fail(log, err, "Setting up the config source")
	}
	if run[controllerOrchestrator] {
		if err := orchestrator.Setup(mgr, store, opts); err != nil {
			fail(log, err, "Setting up the orchestrator")
		}
	}
	if run[controllerProvisioner] {
		p := &claim.Reconciler{Client: mgr.GetClient(), Config: store, Recorder: mgr.GetEventRecorder("score-provisioner"), EnableCmd: enableCmd, Concurrency: provisionerConcurrency}
		if err := p.SetupWithManager(mgr); err != nil {
			fail(log, err, "Setting up the provisioner")
		}
	}
	if run[controllerRuntime] {
		templates := &plan.Templates{Reader: mgr.GetAPIReader(), OCI: &ocifetch.Fetcher{CacheDir: opts.Config.OCICacheDir, PlainHTTP: opts.Config.OCIPlainHTTP}}
		rt := &plan.Reconciler{Client: mgr.GetClient(), Templates: templates, Concurrency: runtimeConcurrency}
		if err := rt.SetupWithManager(mgr); err != nil {
			fail(log, err, "Setting up the runtime")
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		fail(log, err, "Adding the health check")
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		fail(log, err, "Adding the readiness check")
	}
	log.Info("Starting", "controllers", controllers, "config", opts.Config.ConfigMap)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		fail(log, err, "Running the manager")
	}
}

func fail(log interface{ Error(error, string, ...any) }, err error, what string) {
	log.Error(err, what)
	os.Exit(1)
}
