package controlplane

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/score-orchestrator/score-orchestrator/internal/controller/workers"
)

// NewManagers builds the managers that run opts.Controllers against cfg, each with base's
// options: the shard's controllers (Sharded) in one, under the lease LeaderElectionID names,
// and the rollout in one of its own, under RolloutLease whatever the shard, so that every
// process may carry it while only one runs it. When both are built, the rollout's manager
// reads the other's cache — one copy of the Workloads and plans in the process, which that
// manager starts — and leaves it the metrics and probe endpoints and the config's events. The
// first manager is the one that serves them.
func NewManagers(cfg *rest.Config, opts Options, base ctrl.Options) ([]ctrl.Manager, error) {
	var sharded []string
	fleet := false
	for _, c := range opts.Controllers {
		if c == Rollout {
			fleet = true
		} else {
			sharded = append(sharded, c)
		}
	}
	if len(opts.Controllers) == 0 {
		return nil, fmt.Errorf("no controller to run: use %v", All)
	}
	base.Cache = CacheOptions(opts)
	if opts.Workers != nil && opts.Workers.Pushback == nil {
		// The API server's pushback is recorded under every client of the process (both
		// managers, every controller), on a copy of cfg: the caller's is left as it was.
		a := *opts.Workers
		a.Pushback = workers.NewPushback()
		opts.Workers = &a
		cfg = rest.CopyConfig(cfg)
		cfg.Wrap(transport.WrapperFunc(a.Pushback.Wrap))
	}
	var mgrs []ctrl.Manager
	if len(sharded) > 0 {
		o := base
		o.LeaderElectionID = LeaderElectionID(sharded, opts.Shard)
		mgr, err := newManager(cfg, o, opts, sharded)
		if err != nil {
			return nil, err
		}
		mgrs = append(mgrs, mgr)
	}
	if fleet {
		o := base
		o.LeaderElectionID = RolloutLease
		if len(mgrs) > 0 {
			shared := mgrs[0].GetCache()
			o.NewCache = func(*rest.Config, cache.Options) (cache.Cache, error) { return borrowedCache{shared}, nil }
			o.Metrics.BindAddress, o.HealthProbeBindAddress, o.PprofBindAddress = "0", "0", "0"
			opts.Config.Silent = true // the shard's config source reports the loads
		}
		mgr, err := newManager(cfg, o, opts, []string{Rollout})
		if err != nil {
			return nil, err
		}
		mgrs = append(mgrs, mgr)
	}
	return mgrs, nil
}

func newManager(cfg *rest.Config, o ctrl.Options, opts Options, controllers []string) (ctrl.Manager, error) {
	mgr, err := ctrl.NewManager(cfg, o)
	if err != nil {
		return nil, fmt.Errorf("creating the manager of %v: %w", controllers, err)
	}
	opts.Controllers = controllers
	if err := Setup(mgr, opts); err != nil {
		return nil, err
	}
	return mgr, nil
}

// Start runs the managers until ctx ends or one of them stops (a lost lease, a failure),
// which stops the others: the process then ends, as a process with one manager does.
func Start(ctx context.Context, mgrs []ctrl.Manager) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, len(mgrs))
	for _, m := range mgrs {
		go func() { done <- m.Start(ctx) }()
	}
	var errs []error
	for range mgrs {
		errs = append(errs, <-done)
		cancel()
	}
	return errors.Join(errs...)
}

// borrowedCache is another manager's cache, which that manager starts: this one only waits
// for it.
type borrowedCache struct{ cache.Cache }

// Start waits for the end: the cache's own manager starts and stops it.
func (borrowedCache) Start(ctx context.Context) error {
	<-ctx.Done()
	return nil
}
