package controlplane

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/scheme"
	"github.com/score-orchestrator/score-orchestrator/internal/shard"
	"github.com/score-orchestrator/score-orchestrator/internal/version"
)

// Exit codes of Run.
const (
	ExitOK     = 0
	ExitFailed = 1
	ExitSetup  = 2
)

// Run is the score-controllers command: it parses args, builds a manager from the kubeconfig
// ($KUBECONFIG, --kubeconfig or in-cluster), sets up the chosen controllers and runs them
// until SIGINT or SIGTERM. `scorectl dev up` runs the same command from its own binary.
func Run(name string, args []string, output io.Writer) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(output)
	opts := DefaultOptions()
	f := bindFlags(fs, &opts)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return ExitOK
		}
		return ExitSetup
	}
	if f.printVersion {
		fmt.Fprintln(output, name, version.String())
		return ExitOK
	}
	logger := zap.New(zap.UseFlagOptions(&f.zap), zap.WriteTo(output))
	ctrl.SetLogger(logger)
	// client-go logs through klog (leader election, event broadcasting): the same sink, so
	// that every line has the chosen encoding.
	klog.SetLogger(logger)
	log := ctrl.Log.WithName("setup")
	if err := f.complete(&opts); err != nil {
		log.Error(err, "Parsing the flags")
		return ExitSetup
	}
	restConfig, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "Loading the kubeconfig")
		return ExitFailed
	}
	f.limitClient(restConfig, name)
	mgrs, err := NewManagers(restConfig, opts, f.managerOptions(opts.Config.ConfigMap.Namespace))
	if err != nil {
		log.Error(err, "Setting up the controllers")
		return ExitSetup
	}
	// The first manager serves the probes (NewManagers).
	if err := mgrs[0].AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "Adding the health check")
		return ExitFailed
	}
	if err := mgrs[0].AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "Adding the readiness check")
		return ExitFailed
	}
	log.Info("Starting", "controllers", f.controllers, "config", opts.Config.ConfigMap, "version", version.Version, "commit", version.Commit)
	if err := Start(ctrl.SetupSignalHandler(), mgrs); err != nil {
		log.Error(err, "Running the managers")
		return ExitFailed
	}
	return ExitOK
}

// processFlags are the flags that are not Options: the process's (its endpoints, leader
// election, client limits, logging) and those Options are completed from.
type processFlags struct {
	controllers, metricsAddr, probeAddr, pprofAddr string
	watchSelector                                  string
	leaderElect, printVersion, adaptive            bool
	leaseDuration, renewDeadline, retryPeriod      time.Duration
	qps                                            float64
	burst                                          int
	zap                                            zap.Options
}

// bindFlags defines the command's flags on fs: into opts, their defaults its values, and into
// the processFlags it returns.
func bindFlags(fs *flag.FlagSet, opts *Options) *processFlags {
	f := &processFlags{}
	cfg := &opts.Config
	fs.StringVar(&f.controllers, "controllers", strings.Join(All, ","), "comma-separated controllers to run: orchestrator, provisioner, runtime (a shard's, under one lease), rollout (the fleet's, under a lease of its own whatever the shard: any number of processes may carry it, one runs it)")
	fs.StringVar(&cfg.ConfigMap.Namespace, "config-namespace", cfg.ConfigMap.Namespace, "namespace of the Orchestrator Config ConfigMap")
	fs.StringVar(&cfg.ConfigMap.Name, "config-name", cfg.ConfigMap.Name, "name of the Orchestrator Config ConfigMap")
	fs.StringVar(&cfg.Key, "config-key", cfg.Key, "key of the document in the ConfigMap")
	fs.StringVar(&cfg.OCIRef, "config-oci-ref", "", "load the Orchestrator Config from this OCI artifact, pinned by digest (<registry>/<repository>@sha256:<hex>), instead of the ConfigMap; to change the reference without a restart, put it in the ConfigMap's ociRef key instead")
	fs.StringVar(&cfg.OCICacheDir, "oci-cache-dir", "", "directory that caches verified OCI content (config and templates) by digest")
	fs.BoolVar(&cfg.OCIPlainHTTP, "oci-plain-http", false, "reach OCI registries over plain HTTP (development only)")
	fs.StringVar(&cfg.OCIPullSecret, "oci-pull-secret", "", "a kubernetes.io/dockerconfigjson Secret in the config namespace holding the OCI registries' credentials (config and templates); read at each fetch, so a replaced Secret is used without a restart")
	fs.StringVar(&f.watchSelector, "watch-label-selector", "", "own only the Workloads this selector on "+scorev1b1.LabelShard+" matches, and their claims, plans and exposures: score.dev/shard=NAME for a shard, !score.dev/shard for the unlabelled rest (empty: every Workload)")
	fs.StringVar(&opts.Orchestrator.Region, "region", "", "region this orchestrator runs in (for backends restricted to regions); the rollout reads it too")
	fs.IntVar(&opts.Orchestrator.Concurrency, "concurrency", opts.Orchestrator.Concurrency, "most Workloads reconciled at once (the orchestrator's workers' cap; with --adaptive-workers=false, its workers)")
	fs.DurationVar(&opts.Orchestrator.ProgressHold, "progress-hold", opts.Orchestrator.ProgressHold, "how long a status that only reports progress waits for the next step, so that both are written once: a Workload's (a dependency being provisioned, the workload being deployed, an endpoint before Ready), a claim's or a plan's while their objects only become healthy, and an exposure's first until they are; measured from the step's own time, never applied to a new generation, a failure or Ready, nor to a Workload's, claim's or plan's first status (0: write every step)")
	fs.IntVar(&opts.Provisioner.Concurrency, "provisioner-concurrency", opts.Provisioner.Concurrency, "most claims provisioned at once (the provisioner's workers' cap; with --adaptive-workers=false, its workers)")
	fs.IntVar(&opts.Runtime.Concurrency, "runtime-concurrency", opts.Runtime.Concurrency, "most plans rendered and applied at once (the runtime's workers' cap; with --adaptive-workers=false, its workers)")
	fs.BoolVar(&f.adaptive, "adaptive-workers", true, "move each controller's workers between 1 and its cap: one more while requests wait and the API server answers about as fast as it did of late, half on a 429 (Priority and Fairness), back what it grew by when its latency doubles right after (false: each runs its cap)")
	fs.IntVar(&opts.Workers.Start, "initial-workers", opts.Workers.Start, "each controller's workers at start, with --adaptive-workers (at most its cap)")
	fs.BoolVar(&opts.Provisioner.EnableCmd, "enable-cmd-provisioners", false, "allow cmd:// provisioners, which run binaries inside the controller with its user and file system (off: their claims fail with PermissionDenied); only cmd:///absolute/path and cmd://name-on-PATH are run")
	fs.DurationVar(&opts.Provisioner.CmdLimits.Timeout, "cmd-provisioner-timeout", opts.Provisioner.CmdLimits.Timeout, "longest a cmd:// provisioner may run; its process group is killed after it")
	fs.IntVar(&opts.Provisioner.CmdLimits.MaxOutput, "cmd-provisioner-max-output", opts.Provisioner.CmdLimits.MaxOutput, "most bytes a cmd:// provisioner may print on stdout")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "address of the metrics endpoint (0 to disable)")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "address of the health and readiness probes (0 to disable)")
	fs.StringVar(&f.pprofAddr, "pprof-bind-address", "0", "address of the pprof endpoint (0 to disable)")
	fs.BoolVar(&f.leaderElect, "leader-elect", false, "elect a leader so that one replica reconciles at a time")
	fs.DurationVar(&f.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a standby waits after the leader's last renewal before it takes the lease (how long a leader that went away without handing it back goes unreplaced)")
	fs.DurationVar(&f.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps retrying a failed renewal before it stops leading (less than the lease duration)")
	fs.DurationVar(&f.retryPeriod, "leader-elect-retry-period", 2*time.Second, "how often a standby tries to take the lease, and the leader to renew it")
	fs.Float64Var(&f.qps, "kube-api-qps", 0, "requests per second to the API server, on average (0: no client-side limit; the API server's fairness applies)")
	fs.IntVar(&f.burst, "kube-api-burst", 0, "requests to the API server in a burst, with --kube-api-qps")
	fs.BoolVar(&f.printVersion, "version", false, "print the version and commit, then exit")
	ctrlconfig.RegisterFlags(fs)
	f.zap.BindFlags(fs)
	return f
}

// complete fills in the Options that follow from the flags: the shard, whether the workers
// adapt, the controllers to run, and the control plane's namespace where each controller
// looks for it.
func (f *processFlags) complete(opts *Options) error {
	sel, err := shard.Selector(f.watchSelector)
	if err != nil {
		return err
	}
	opts.Shard = sel
	if !f.adaptive {
		opts.Workers = nil
	}
	opts.Controllers = strings.Split(f.controllers, ",")
	// http+api:// credentials live in the control plane's namespace.
	ns := opts.Config.ConfigMap.Namespace
	opts.Provisioner.APINamespace = ns
	opts.Runtime.Namespace = ns
	opts.Orchestrator.Namespace = ns
	opts.Rollout.Namespace, opts.Rollout.Region = ns, opts.Orchestrator.Region
	return nil
}

// limitClient names the process in restConfig's user agent and applies the client-side limits
// asked for.
func (f *processFlags) limitClient(restConfig *rest.Config, name string) {
	// Each controller process names itself, so the API server's audit log (and a benchmark)
	// can tell its requests from another's and from the cluster's own.
	restConfig.UserAgent = strings.ReplaceAll(name, " ", "-") + "/" + strings.ReplaceAll(f.controllers, ",", "+")
	if f.qps > 0 {
		restConfig.QPS = float32(f.qps)
	}
	if f.burst > 0 {
		restConfig.Burst = f.burst
	}
}

// managerOptions are the managers' options: endpoints and leader election, its leases in the
// control plane's namespace.
func (f *processFlags) managerOptions(namespace string) ctrl.Options {
	return ctrl.Options{
		Scheme:                 scheme.New(),
		Metrics:                metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress: f.probeAddr,
		PprofBindAddress:       f.pprofAddr,
		LeaderElection:         f.leaderElect,
		// Run returns once the managers stop, so the leases can go at once: a restarted or
		// replacing process takes over without waiting them out.
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &f.leaseDuration,
		RenewDeadline:                 &f.renewDeadline,
		RetryPeriod:                   &f.retryPeriod,
		LeaderElectionNamespace:       namespace,
	}
}
