// Package controlplane wires the chosen controllers into managers: the config source they
// share, the orchestrator, the provisioner and the Kubernetes runtime, which a shard runs, and
// the fleet's controllers (the rollout, and the preview controller that ends expired preview
// environments), which run once for every shard under a lease of their own.
// The score-controllers binary and the end-to-end tests use it alike.
package controlplane

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/orchestrator"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/preview"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/previewpolicy"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/provisioner"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/rollout"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/runtime"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/workers"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisionercmd"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/templates"
	"github.com/score-orchestrator/score-orchestrator/internal/shard"
)

// The controllers that can run in a process, named as their flags, folders, docs and roles
// name them.
const (
	Orchestrator = "orchestrator"
	Provisioner  = "provisioner"
	Runtime      = "runtime"
	// Rollout is the fleet's: one instance for every shard, under RolloutLease. It carries
	// the preview controller too (internal/controller/preview).
	Rollout = "rollout"
)

// All is every controller.
var All = []string{Orchestrator, Provisioner, Runtime, Rollout}

// Sharded are the controllers a shard runs: those that divide the Workloads between shards
// (--watch-label-selector). The rollout is the whole fleet's.
var Sharded = []string{Orchestrator, Provisioner, Runtime}

// RolloutLease names the rollout controller's Lease: one for the fleet, whatever the shard of
// the process that carries it, so that any number of processes may carry it and one runs it.
const RolloutLease = "score-rollout.score.dev"

// Options configure the control plane.
type Options struct {
	// Controllers lists the controllers to run.
	Controllers []string
	// Config says where the Orchestrator Config comes from; every controller reads it.
	Config       configsource.Options
	Orchestrator orchestrator.Options
	Provisioner  provisioner.Options
	Runtime      runtime.Options
	Rollout      rollout.Options
	// Shard selects the Workloads this instance owns (score.dev/shard); nil: every Workload.
	Shard labels.Selector
	// Workers moves the orchestrator's, the provisioner's and the runtime's worker counts up to
	// their Concurrency, each with its own demand and the process's pushback (NewManagers
	// records it); nil pins each at its Concurrency.
	Workers *workers.Adaptive
}

// DefaultMaxWorkers is each controller's default cap (--concurrency,
// --provisioner-concurrency, --runtime-concurrency): the most that measured well on an API
// server with room (docs/performance.md); the adaptive limit starts at workers.DefaultStart.
const DefaultMaxWorkers = 16

// DefaultOptions run every controller with the documented defaults: adaptive workers, from
// eight (workers.DefaultStart) up to DefaultMaxWorkers in each.
func DefaultOptions() Options {
	cfg := configsource.DefaultOptions()
	o := Options{Controllers: All, Config: cfg, Orchestrator: orchestrator.DefaultOptions(),
		Provisioner: provisioner.Options{Concurrency: DefaultMaxWorkers, CmdLimits: provisionercmd.DefaultLimits, APINamespace: cfg.ConfigMap.Namespace},
		Runtime:     runtime.Options{Concurrency: DefaultMaxWorkers, Namespace: cfg.ConfigMap.Namespace},
		Rollout:     rollout.Options{Namespace: cfg.ConfigMap.Namespace},
		Workers:     &workers.Adaptive{Start: workers.DefaultStart, Interval: workers.DefaultInterval}}
	o.Orchestrator.Concurrency = DefaultMaxWorkers
	return o
}

// LeaderElectionID names the Lease of a process running controllers for sel's shard: one
// leader per set of controllers and shard. The rollout is not in the set: it has a lease of
// its own (RolloutLease).
func LeaderElectionID(controllers []string, sel labels.Selector) string {
	return "score-" + strings.Join(slices.DeleteFunc(slices.Clone(controllers), func(c string) bool { return c == Rollout }), "-") + shard.LeaseSuffix(sel) + ".score.dev"
}

// Leases names the Leases a process running controllers for sel's shard takes: its shard's
// (LeaderElectionID), and RolloutLease when it carries the rollout.
func Leases(controllers []string, sel labels.Selector) []string {
	var out []string
	if slices.ContainsFunc(controllers, func(c string) bool { return c != Rollout }) {
		out = append(out, LeaderElectionID(controllers, sel))
	}
	if slices.Contains(controllers, Rollout) {
		out = append(out, RolloutLease)
	}
	return out
}

// CacheOptions are the manager's cache's for opts: configsource.CacheOptions, the admission
// policy that binds previews to their makers alone (previewpolicy.CacheOptions), and for a shard,
// the Workloads, plans and exposures of its own Workloads only, where no controller of the
// process needs the others'. The provisioner reads every Workload (a template may look up
// another Workload's ports, in whichever shard) and every claim (an instance shared across
// shards goes only with its last consumer); the orchestrator reads the plans and exposures
// of a Workload that has just moved into its shard, to hand them over; the rollout reads
// every Workload and plan of the fleet. The rollouts are never narrowed: every orchestrator
// follows the fleet's.
func CacheOptions(opts Options) cache.Options {
	o := configsource.CacheOptions()
	previewpolicy.CacheOptions(&o)
	if opts.Shard == nil {
		return o
	}
	own := cache.ByObject{Label: opts.Shard}
	runs := func(names ...string) bool {
		return slices.ContainsFunc(names, func(n string) bool { return slices.Contains(opts.Controllers, n) })
	}
	if !runs(Provisioner, Rollout) {
		o.ByObject[&scorev1b1.Workload{}] = own
	}
	if !runs(Orchestrator, Rollout) {
		o.ByObject[&scorev1b1.WorkloadPlan{}] = own
	}
	if !runs(Orchestrator) {
		o.ByObject[&scorev1b1.WorkloadExposure{}] = own
	}
	return o
}

// Setup adds the config source and the chosen controllers to mgr, all under mgr's lease if it
// elects one (NewManagers gives the rollout a manager and a lease of its own).
func Setup(mgr ctrl.Manager, opts Options) error {
	component := "score-controllers"
	if slices.Equal(opts.Controllers, []string{Rollout}) {
		component = "score-rollout" // beside score-controllers' manager in the same process
	}
	store, err := configsource.Setup(mgr, opts.Config, component)
	if err != nil {
		return err
	}
	// Templates and helm provisioners' charts: fetched by digest, verified, cached.
	newTemplates := func() *templates.Source {
		return &templates.Source{Reader: mgr.GetAPIReader(), OCI: opts.Config.Fetcher(mgr.GetAPIReader())}
	}
	opts.Orchestrator.Shard, opts.Provisioner.Shard, opts.Runtime.Shard = opts.Shard, opts.Shard, opts.Shard
	// One progress hold (--progress-hold) for the three: the Workload's status, the claim's and
	// the plan's while their objects only progress, and the exposure's first until they are
	// healthy (the runtime's, with the plan's).
	opts.Provisioner.ProgressHold, opts.Runtime.ProgressHold = opts.Orchestrator.ProgressHold, opts.Orchestrator.ProgressHold
	// One Adaptive for the three: each controller moves its own limit, from the pushback the
	// process shares (workers.Pushback). The rollout reconciles one request, the fleet, so
	// it never runs more than one worker whatever its limit; its requests count in the
	// pushback all the same.
	opts.Orchestrator.Workers, opts.Provisioner.Workers, opts.Runtime.Workers = opts.Workers, opts.Workers, opts.Workers
	for _, c := range opts.Controllers {
		switch c {
		case Orchestrator:
			err = orchestrator.Setup(mgr, store, opts.Orchestrator)
		case Provisioner:
			err = provisioner.Setup(mgr, store, newTemplates(), opts.Provisioner)
		case Runtime:
			err = runtime.Setup(mgr, store, newTemplates(), opts.Runtime)
		case Rollout:
			// The fleet's controllers: the rollouts and the previews' expiry.
			if err = rollout.Setup(mgr, store, opts.Rollout); err == nil {
				err = preview.Setup(mgr, store)
			}
		default:
			err = fmt.Errorf("unknown controller %q: use %v", c, All)
		}
		if err != nil {
			return fmt.Errorf("setting up the %s: %w", c, err)
		}
	}
	return nil
}
