// Package controlplane wires the chosen controllers into one manager: the config source
// they share, the orchestrator, the provisioner and the Kubernetes runtime. The
// score-controllers binary and the end-to-end tests use it alike.
package controlplane

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/score-orchestrator/score-orchestrator/internal/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/claim"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/plan"
	"github.com/score-orchestrator/score-orchestrator/internal/ocifetch"
	"github.com/score-orchestrator/score-orchestrator/internal/orchestrator"
	"github.com/score-orchestrator/score-orchestrator/internal/provisionercmd"
)

// The controllers that can run in a process.
const (
	Orchestrator = "orchestrator"
	Provisioner  = "provisioner"
	Runtime      = "runtime"
)

// All is every controller.
var All = []string{Orchestrator, Provisioner, Runtime}

// Options configure the control plane.
type Options struct {
	// Controllers lists the controllers to run.
	Controllers  []string
	Orchestrator orchestrator.Options
	// ProvisionerConcurrency and RuntimeConcurrency are claims and plans handled at once.
	ProvisionerConcurrency, RuntimeConcurrency int
	// EnableCmdProvisioners allows cmd:// provisioners; CmdLimits bound each run.
	EnableCmdProvisioners bool
	CmdLimits             provisionercmd.Limits
}

// DefaultOptions run every controller with the documented defaults.
func DefaultOptions() Options {
	return Options{Controllers: All, Orchestrator: orchestrator.DefaultOptions(), ProvisionerConcurrency: 4, RuntimeConcurrency: 4,
		CmdLimits: provisionercmd.DefaultLimits}
}

// Setup adds the config source and the chosen controllers to mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	store, err := configsource.Setup(mgr, opts.Orchestrator.Config, "score-controllers")
	if err != nil {
		return err
	}
	cfg := opts.Orchestrator.Config
	// Templates and helm provisioners' charts: fetched by digest, verified, cached.
	newTemplates := func() *plan.Templates {
		return &plan.Templates{Reader: mgr.GetAPIReader(), OCI: &ocifetch.Fetcher{CacheDir: cfg.OCICacheDir, PlainHTTP: cfg.OCIPlainHTTP}}
	}
	for _, c := range opts.Controllers {
		switch c {
		case Orchestrator:
			err = orchestrator.Setup(mgr, store, opts.Orchestrator)
		case Provisioner:
			p := &claim.Reconciler{Client: mgr.GetClient(), Config: store, Recorder: mgr.GetEventRecorder("score-provisioner"),
				EnableCmd: opts.EnableCmdProvisioners, CmdLimits: opts.CmdLimits,
				APINamespace: opts.Orchestrator.Config.ConfigMap.Namespace, Charts: newTemplates(), Concurrency: opts.ProvisionerConcurrency}
			err = p.SetupWithManager(mgr)
		case Runtime:
			err = (&plan.Reconciler{Client: mgr.GetClient(), Templates: newTemplates(), Config: store, Secrets: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("score-runtime"), Concurrency: opts.RuntimeConcurrency}).SetupWithManager(mgr)
		default:
			err = fmt.Errorf("unknown controller %q: use %v", c, All)
		}
		if err != nil {
			return fmt.Errorf("setting up the %s: %w", c, err)
		}
	}
	return nil
}
