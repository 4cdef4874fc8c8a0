// Command score-orchestrator runs the Score Orchestrator's controllers: it turns Workloads
// into ResourceClaims and WorkloadPlans under the Orchestrator Config and keeps one abstract
// status on each Workload.
package main

import (
	"flag"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/orchestrator"
)

func main() {
	opts := orchestrator.DefaultOptions()
	var (
		metricsAddr, probeAddr string
		leaderElect            bool
	)
	flag.StringVar(&opts.ConfigMap.Namespace, "config-namespace", opts.ConfigMap.Namespace, "namespace of the Orchestrator Config ConfigMap")
	flag.StringVar(&opts.ConfigMap.Name, "config-name", opts.ConfigMap.Name, "name of the Orchestrator Config ConfigMap")
	flag.StringVar(&opts.ConfigKey, "config-key", opts.ConfigKey, "key of the document in the ConfigMap")
	flag.StringVar(&opts.ConfigOCIRef, "config-oci-ref", "", "load the Orchestrator Config from this OCI artifact, pinned by digest (<registry>/<repository>@sha256:<hex>), instead of the ConfigMap")
	flag.StringVar(&opts.OCICacheDir, "oci-cache-dir", "", "directory that caches verified OCI content by digest")
	flag.BoolVar(&opts.OCIPlainHTTP, "oci-plain-http", false, "reach OCI registries over plain HTTP (development only)")
	flag.StringVar(&opts.Region, "region", "", "region this orchestrator runs in (for backends restricted to regions)")
	flag.IntVar(&opts.Concurrency, "concurrency", opts.Concurrency, "Workloads reconciled at once")
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "address of the metrics endpoint (0 to disable)")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address of the health and readiness probes")
	flag.BoolVar(&leaderElect, "leader-elect", false, "elect a leader so that one replica reconciles at a time")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		log.Error(err, "Building the scheme")
		os.Exit(1)
	}
	if err := scorev1b1.AddToScheme(scheme); err != nil {
		log.Error(err, "Building the scheme")
		os.Exit(1)
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        "score-orchestrator.score.dev",
		LeaderElectionNamespace: opts.ConfigMap.Namespace,
		Cache:                   orchestrator.CacheOptions(opts),
	})
	if err != nil {
		log.Error(err, "Creating the manager")
		os.Exit(1)
	}
	if _, err := orchestrator.Setup(mgr, opts); err != nil {
		log.Error(err, "Setting up the controllers")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "Adding the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "Adding the readiness check")
		os.Exit(1)
	}
	log.Info("Starting the orchestrator", "configMap", opts.ConfigMap, "concurrency", opts.Concurrency)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "Running the manager")
		os.Exit(1)
	}
}
