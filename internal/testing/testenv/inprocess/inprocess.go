// Package inprocess runs the controllers in the test's own process as score-controllers does
// with its defaults (controlplane.NewManagers: the shard's three in one manager, the fleet's
// rollout in one of its own reading the same cache): the end-to-end tests that restart them at
// will.
package inprocess

import (
	"context"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/score-orchestrator/score-orchestrator/internal/controller/controlplane"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// Start runs the controllers against cfg until the returned stop, which waits for them to end.
func Start(cfg *rest.Config) (stop func(), err error) {
	return StartWith(cfg, controlplane.DefaultOptions(), ctrl.Options{})
}

// StartWith runs opts' controllers against cfg, with base's manager options (leader election,
// say) over the test's: its scheme, no metrics or probe endpoints, and controller names that
// may repeat (a test may run several processes' worth).
func StartWith(cfg *rest.Config, opts controlplane.Options, base ctrl.Options) (stop func(), err error) {
	base.Scheme, base.Metrics, base.HealthProbeBindAddress = testenv.Scheme(), metricsserver.Options{BindAddress: "0"}, "0"
	base.Controller = config.Controller{SkipNameValidation: ptr.To(true)}
	mgrs, err := controlplane.NewManagers(cfg, opts, base)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = controlplane.Start(ctx, mgrs) }()
	return func() { cancel(); <-done }, nil
}
