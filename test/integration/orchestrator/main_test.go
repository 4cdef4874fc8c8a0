// Package orchestrator tests the orchestrator on a real kube-apiserver and etcd, following
// the lifecycle document's paths. Where a provisioner or runtime is needed, the test plays
// that role through the API (it writes claim, plan and exposure status as they would),
// never by calling orchestrator internals.
package orchestrator

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	"go.uber.org/zap/zapcore"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/score-orchestrator/score-orchestrator/internal/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/orchestrator"
	"github.com/score-orchestrator/score-orchestrator/internal/testenv"
)

var (
	env *testenv.Env
	// writes counts the orchestrator's API writes (every verb but get, list and watch).
	writes atomic.Int64
)

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(false), zap.Level(zapLevel()), zap.StacktraceLevel(zapcore.PanicLevel)))
	ctx, cancel := context.WithCancel(context.Background())
	if err := startOrchestrator(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	cancel()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// startOrchestrator runs the orchestrator's manager as the binary does, with a transport that
// counts its writes.
func startOrchestrator(ctx context.Context) error {
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet {
				writes.Add(1)
				if os.Getenv("TEST_LOG_WRITES") != "" {
					fmt.Fprintln(os.Stderr, "WRITE", req.Method, req.URL.Path)
				}
			}
			return rt.RoundTrip(req)
		})
	})
	opts := orchestrator.DefaultOptions()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testenv.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  configsource.CacheOptions(),
	})
	if err != nil {
		return err
	}
	store, err := configsource.Setup(mgr, configsource.DefaultOptions(), "score-orchestrator")
	if err != nil {
		return err
	}
	if err := orchestrator.Setup(mgr, store, opts); err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return nil
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
