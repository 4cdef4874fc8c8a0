// Package controlplane wires the chosen controllers into one manager: the config source
// they share, the orchestrator, the provisioner and the Kubernetes runtime. The
// score-controllers binary and the end-to-end tests use it alike.
package controlplane

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/score-orchestrator/score-orchestrator/internal/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/orchestrator"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/provisioner"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/runtime"
	"github.com/score-orchestrator/score-orchestrator/internal/provisionercmd"
	"github.com/score-orchestrator/score-orchestrator/internal/templates"
)

// The controllers that can run in a process, named as their flags, folders, docs and roles
// name them.
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
	Controllers []string
	// Config says where the Orchestrator Config comes from; every controller reads it.
	Config       configsource.Options
	Orchestrator orchestrator.Options
	Provisioner  provisioner.Options
	Runtime      runtime.Options
}

// DefaultOptions run every controller with the documented defaults.
func DefaultOptions() Options {
	cfg := configsource.DefaultOptions()
	return Options{Controllers: All, Config: cfg, Orchestrator: orchestrator.DefaultOptions(),
		Provisioner: provisioner.Options{Concurrency: 4, CmdLimits: provisionercmd.DefaultLimits, APINamespace: cfg.ConfigMap.Namespace},
		Runtime:     runtime.Options{Concurrency: 4}}
}

// Setup adds the config source and the chosen controllers to mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	store, err := configsource.Setup(mgr, opts.Config, "score-controllers")
	if err != nil {
		return err
	}
	// Templates and helm provisioners' charts: fetched by digest, verified, cached.
	newTemplates := func() *templates.Source {
		return &templates.Source{Reader: mgr.GetAPIReader(), OCI: opts.Config.Fetcher(mgr.GetAPIReader())}
	}
	for _, c := range opts.Controllers {
		switch c {
		case Orchestrator:
			err = orchestrator.Setup(mgr, store, opts.Orchestrator)
		case Provisioner:
			err = provisioner.Setup(mgr, store, newTemplates(), opts.Provisioner)
		case Runtime:
			err = runtime.Setup(mgr, store, newTemplates(), opts.Runtime)
		default:
			err = fmt.Errorf("unknown controller %q: use %v", c, All)
		}
		if err != nil {
			return fmt.Errorf("setting up the %s: %w", c, err)
		}
	}
	return nil
}
