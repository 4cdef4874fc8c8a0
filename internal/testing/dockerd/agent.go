package dockerd

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/dockerruntime"
	"github.com/score-orchestrator/score-orchestrator/internal/scheme"
)

// TestServer is the image of test/runtimes/testserver that ImportTestServer makes.
const TestServer = "local/testserver:1"

// ImportTestServer builds test/runtimes/testserver statically, from the repository at root,
// and imports it as TestServer.
func (e *Engine) ImportTestServer(ctx context.Context, root string) error {
	dir, err := os.MkdirTemp("", "testserver")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "testserver")
	build := exec.Command("go", "build", "-o", bin, "./test/runtimes/testserver")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building the test server: %v\n%s", err, out)
	}
	return e.Import(ctx, TestServer, bin)
}

// Agent is how StartAgent runs the agent: the host it serves and its namespaces; Concurrency
// and ProbeEvery as score-docker-agent's flags (0: their defaults).
type Agent struct {
	Host        string
	Namespaces  []string
	Concurrency int
	ProbeEvery  time.Duration
	// Images are the agent's image aliases (--image-alias).
	Images map[string]string
	// Writes, when set, counts the agent's writes to the hub but its Lease's renewals.
	Writes *atomic.Int64
}

// roundTripper is a function as an http.RoundTripper.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// StartAgent runs the Docker runtime's agent in this process, as score-docker-agent sets it up,
// connected to the hub as cfg, publishing on 127.0.0.1, until stop, which returns once it has
// stopped.
func (e *Engine) StartAgent(ctx context.Context, cfg *rest.Config, a Agent) (stop func(), err error) {
	opts := ctrl.Options{Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"}
	opts.Controller.SkipNameValidation = ptr.To(true)
	opts.Cache = dockerruntime.CacheOptions(a.Namespaces)
	// As score-docker-agent's ctrl.GetConfig: no client-side rate limit, the API server's
	// priority and fairness applies.
	if cfg = rest.CopyConfig(cfg); cfg.QPS == 0 {
		cfg.QPS = -1
	}
	if a.Writes != nil {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripper(func(req *http.Request) (*http.Response, error) {
				if req.Method != http.MethodGet && !strings.Contains(req.URL.Path, "/leases/") {
					a.Writes.Add(1)
				}
				return rt.RoundTrip(req)
			})
		})
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, err
	}
	r := &dockerruntime.Reconciler{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Docker: e.Client,
		Host: a.Host, Unplaced: true, Address: "127.0.0.1", Scope: scorev1b1.ScopeVPC,
		Probe: dockerruntime.NewProbeClient(), ProbeEvery: cmp.Or(a.ProbeEvery, dockerruntime.DefaultProbeEvery),
		Concurrency: cmp.Or(a.Concurrency, dockerruntime.DefaultConcurrency), Images: a.Images}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(mctx) }()
	return func() { cancel(); <-done }, nil
}
