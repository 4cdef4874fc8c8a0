// Package orchestrator wires the orchestrator's Workload reconciler into a manager. The
// binary and the integration tests use it alike.
package orchestrator

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/score-orchestrator/score-orchestrator/internal/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/workload"
)

// Options configure the orchestrator.
type Options struct {
	Config configsource.Options
	// Region is where this orchestrator runs.
	Region string
	// Concurrency is the number of Workloads reconciled at once.
	Concurrency int
}

// DefaultOptions are the documented defaults.
func DefaultOptions() Options {
	return Options{Config: configsource.DefaultOptions(), Concurrency: 4}
}

// Setup registers the orchestrator's Workload controller with mgr; store is the process's
// config store (configsource.Setup).
func Setup(mgr ctrl.Manager, store *configsource.Store, opts Options) error {
	wr := &workload.Reconciler{
		Client: mgr.GetClient(), Config: store, Recorder: mgr.GetEventRecorder("score-orchestrator"),
		Region: opts.Region, Concurrency: opts.Concurrency,
	}
	if err := wr.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the workload controller: %w", err)
	}
	return nil
}
