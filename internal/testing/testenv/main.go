package testenv

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
)

// Main runs a package's tests against an API server of their own, from TestMain: it starts
// the API server, sends the controllers' logs to stderr, calls setup to keep the Env and start
// the package's controllers (ctx ends when the tests do), runs the tests, and stops the API
// server. It returns the exit code for os.Exit.
func Main(m *testing.M, setup func(ctx context.Context, env *Env) error) int {
	env, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(logLevel()), zap.StacktraceLevel(zapcore.PanicLevel)))
	// Deferred after env.Stop, so it runs first: the controllers stop before the API server.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := setup(ctx, env); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// logLevel is the controllers' log level: errors only, or everything with
// TEST_VERBOSE_CONTROLLER set, to follow the controllers through a failing test.
func logLevel() zapcore.Level {
	if os.Getenv("TEST_VERBOSE_CONTROLLER") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// StartForTest starts an API server for one test, which needs one of its own, and stops it
// when the test ends.
func StartForTest(t testing.TB) *Env {
	t.Helper()
	env, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Log(err)
		}
	})
	return env
}

// ManagerOptions are the options of the binaries' manager, as a test runs it: the binaries'
// cache options (what the cache holds decides what the watches see), and no metrics or health
// endpoints, so that several managers can share one process.
func ManagerOptions() ctrl.Options {
	return ctrl.Options{
		Scheme:                 Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  configsource.CacheOptions(),
	}
}
