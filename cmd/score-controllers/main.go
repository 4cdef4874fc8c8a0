// Command score-controllers runs the Score Orchestrator's controllers: the orchestrator
// (Workloads into claims and plans, one abstract status), the provisioner (claims into
// provisioned dependencies) and the Kubernetes runtime (plans into applied objects and
// endpoints). --controllers chooses which run in this process, so they can be deployed
// together or apart.
package main

import (
	"flag"
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
	"github.com/score-orchestrator/score-orchestrator/internal/controlplane"
)

func main() {
	opts := controlplane.DefaultOptions()
	cfg := &opts.Orchestrator.Config
	var (
		controllers, metricsAddr, probeAddr string
		leaderElect                         bool
	)
	flag.StringVar(&controllers, "controllers", strings.Join(controlplane.All, ","), "comma-separated controllers to run: orchestrator, provisioner, runtime")
	flag.StringVar(&cfg.ConfigMap.Namespace, "config-namespace", cfg.ConfigMap.Namespace, "namespace of the Orchestrator Config ConfigMap")
	flag.StringVar(&cfg.ConfigMap.Name, "config-name", cfg.ConfigMap.Name, "name of the Orchestrator Config ConfigMap")
	flag.StringVar(&cfg.Key, "config-key", cfg.Key, "key of the document in the ConfigMap")
	flag.StringVar(&cfg.OCIRef, "config-oci-ref", "", "load the Orchestrator Config from this OCI artifact, pinned by digest (<registry>/<repository>@sha256:<hex>), instead of the ConfigMap")
	flag.StringVar(&cfg.OCICacheDir, "oci-cache-dir", "", "directory that caches verified OCI content (config and templates) by digest")
	flag.BoolVar(&cfg.OCIPlainHTTP, "oci-plain-http", false, "reach OCI registries over plain HTTP (development only)")
	flag.StringVar(&opts.Orchestrator.Region, "region", "", "region this orchestrator runs in (for backends restricted to regions)")
	flag.IntVar(&opts.Orchestrator.Concurrency, "concurrency", opts.Orchestrator.Concurrency, "Workloads reconciled at once")
	flag.IntVar(&opts.ProvisionerConcurrency, "provisioner-concurrency", opts.ProvisionerConcurrency, "claims provisioned at once")
	flag.IntVar(&opts.RuntimeConcurrency, "runtime-concurrency", opts.RuntimeConcurrency, "plans rendered and applied at once")
	flag.BoolVar(&opts.EnableCmdProvisioners, "enable-cmd-provisioners", false, "allow cmd:// provisioners, which run binaries inside the controller with its user and file system (off: their claims fail with PermissionDenied); only cmd:///absolute/path and cmd://name-on-PATH are run")
	flag.DurationVar(&opts.CmdLimits.Timeout, "cmd-provisioner-timeout", opts.CmdLimits.Timeout, "longest a cmd:// provisioner may run; its process group is killed after it")
	flag.IntVar(&opts.CmdLimits.MaxOutput, "cmd-provisioner-max-output", opts.CmdLimits.MaxOutput, "most bytes a cmd:// provisioner may print on stdout")
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "address of the metrics endpoint (0 to disable)")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address of the health and readiness probes")
	flag.BoolVar(&leaderElect, "leader-elect", false, "elect a leader so that one replica reconciles at a time")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")
	opts.Controllers = strings.Split(controllers, ",")

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
		LeaderElectionID:        "score-" + strings.ReplaceAll(controllers, ",", "-") + ".score.dev",
		LeaderElectionNamespace: cfg.ConfigMap.Namespace,
		Cache:                   configsource.CacheOptions(*cfg),
	})
	if err != nil {
		log.Error(err, "Creating the manager")
		os.Exit(1)
	}
	if err := controlplane.Setup(mgr, opts); err != nil {
		log.Error(err, "Setting up the controllers")
		os.Exit(2)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "Adding the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "Adding the readiness check")
		os.Exit(1)
	}
	log.Info("Starting", "controllers", controllers, "config", cfg.ConfigMap)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "Running the manager")
		os.Exit(1)
	}
}
