// Package orchestrator tests the orchestrator, and the preview controller that ends preview
// environments, on a real kube-apiserver and etcd, following the lifecycle document's paths.
// Where a provisioner or runtime is needed, the test plays that role through the API (it
// writes claim, plan and exposure status as they would), never by calling orchestrator
// internals.
package orchestrator

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/orchestrator"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/preview"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/workers"
	"github.com/score-orchestrator/score-orchestrator/internal/shard"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

var (
	env *testenv.Env
	// writes counts the orchestrator's API writes (every verb but get, list and watch).
	writes atomic.Int64
	// orchestratorCache is what the orchestrator reads: its manager's cache.
	orchestratorCache client.Reader
	// heldStatusWrites counts the Workload status writes of the orchestrator that holds
	// progress (heldShard), by Workload, "namespace/name" (each run of a test has a namespace
	// of its own: -count=2 counts each run's apart).
	heldStatusWrites sync.Map
)

// heldShard is the shard of the Workloads an orchestrator with a progress hold of an hour
// serves (--progress-hold): its writes are counted whatever the machine's speed. Every other
// Workload is served by an orchestrator that holds nothing, so that each test sees every step
// at once.
const heldShard = "held"

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, func(ctx context.Context, e *testenv.Env) error {
		env = e
		if err := startOrchestrator(ctx); err != nil {
			return err
		}
		return startHeldOrchestrator(ctx)
	}))
}

// startOrchestrator runs the orchestrator's manager as the binary does, for the Workloads of
// no shard and without a progress hold, with a transport that counts its writes. Its workers
// are adaptive, from two: every test goes through the gate (internal/controller/workers),
// which lets more through as requests wait.
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
	pushback := workers.NewPushback()
	cfg.Wrap(pushback.Wrap)
	opts := orchestrator.DefaultOptions()
	opts.ProgressHold = 0
	opts.TraceKeep = traceKeep
	var err error
	if opts.Shard, err = shard.Selector("!" + scorev1b1.LabelShard); err != nil {
		return err
	}
	opts.Workers = &workers.Adaptive{Start: 2, Pushback: pushback}
	mgr, err := runOrchestrator(ctx, cfg, testenv.ManagerOptions(), opts, true)
	if err != nil {
		return err
	}
	orchestratorCache = mgr.GetCache()
	return nil
}

// startHeldOrchestrator runs a second orchestrator, for the Workloads of heldShard, holding
// progress for an hour, and counts its Workload status writes.
func startHeldOrchestrator(ctx context.Context) error {
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if rest, ok := strings.CutSuffix(req.URL.Path, "/status"); ok && req.Method != http.MethodGet && strings.Contains(rest, "/workloads/") {
				_, nsPath, _ := strings.Cut(rest, "/namespaces/")
				ns, _, _ := strings.Cut(nsPath, "/")
				n, _ := heldStatusWrites.LoadOrStore(ns+"/"+path.Base(rest), new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	options := testenv.ManagerOptions()
	options.Controller.SkipNameValidation = ptr.To(true)
	opts := orchestrator.DefaultOptions()
	opts.ProgressHold = time.Hour
	var err error
	if opts.Shard, err = shard.Selector(scorev1b1.LabelShard + "=" + heldShard); err != nil {
		return err
	}
	_, err = runOrchestrator(ctx, cfg, options, opts, false)
	return err
}

// runOrchestrator starts a manager with the orchestrator as the binary sets it up, and the
// preview controller beside it when previews is set (one runs for the whole cluster).
func runOrchestrator(ctx context.Context, cfg *rest.Config, options ctrl.Options, opts orchestrator.Options, previews bool) (ctrl.Manager, error) {
	mgr, err := ctrl.NewManager(cfg, options)
	if err != nil {
		return nil, err
	}
	store, err := configsource.Setup(mgr, configsource.DefaultOptions(), "score-orchestrator")
	if err != nil {
		return nil, err
	}
	if err := orchestrator.Setup(mgr, store, opts); err != nil {
		return nil, err
	}
	if previews {
		if err := preview.Setup(mgr, store); err != nil {
			return nil, err
		}
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return mgr, nil
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
