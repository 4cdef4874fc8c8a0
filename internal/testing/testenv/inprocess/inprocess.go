// Package inprocess runs the three controllers in the test's own process, in one manager, as
// score-controllers does with its defaults: the end-to-end tests that restart them at will.
package inprocess

import (
	"context"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/score-orchestrator/score-orchestrator/internal/controlplane"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// Start runs the controllers against cfg until the returned stop, which waits for them to end.
func Start(cfg *rest.Config) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	opts := controlplane.DefaultOptions()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: testenv.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Cache: controlplane.CacheOptions(opts), Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err == nil {
		err = controlplane.Setup(mgr, opts)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	return func() { cancel(); <-done }, nil
}
