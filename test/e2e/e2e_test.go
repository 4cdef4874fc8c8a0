// Package e2e runs whole journeys on a simulated cluster of its own: real kube-apiserver,
// etcd, kube-controller-manager and kube-scheduler, with kwok nodes, and the gateway controller
// make dev runs (Contour, serving the Gateway the catalog's routes attach to). The controllers
// run in the test process, exactly as score-controllers wires them.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/scorefile"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/controlplane"
	"github.com/score-orchestrator/score-orchestrator/internal/shard"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

var (
	cfg        *rest.Config
	c          client.Client
	kubeconfig string
	ctx        = context.Background()
)

func TestMain(m *testing.M) {
	os.Exit(testenv.SimulatedMain(m, testenv.Simulated{Name: "score-e2e", Clusters: map[string]testenv.ClusterSpec{"": {Volumes: 96}}, Install: true, Gateway: true},
		func(env *testenv.SimulatedEnv) (func(), error) {
			k := env.Clusters[""]
			kubeconfig, cfg, c, devConfig = k.Kubeconfig(), k.Config, k.Client, env.Config
			// Every log line the controllers write, at every level, is kept to search for secrets.
			ctrl.SetLogger(zap.New(zap.WriteTo(io.MultiWriter(&controllerLogs, errorsOnly{os.Stderr})), zap.Level(zapcore.DebugLevel), zap.StacktraceLevel(zapcore.PanicLevel)))
			stop, err := startControllers(nil)
			if err != nil {
				return nil, err
			}
			restart = func(writes *atomic.Int64) error {
				stop()
				stop, err = startControllers(writes)
				return err
			}
			return func() { stop() }, nil
		}))
}

// restart stops the controllers and starts them again, counting their writes into writes.
var restart func(writes *atomic.Int64) error

// writeLog holds the last write counted, for the failure message.
var writeLog atomic.Value

// devConfig is the Orchestrator Config install loaded.
var devConfig *orchconfig.Config

// controllerLogs holds everything the controllers logged.
var controllerLogs lockedBuffer

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// errorsOnly passes on error lines only, so the test output stays readable.
type errorsOnly struct{ w io.Writer }

func (e errorsOnly) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"level":"error"`)) {
		return e.w.Write(p)
	}
	return len(p), nil
}

// startControllers runs the controllers that own the Workloads of no shard (every test's but
// TestShards').
func startControllers(writes *atomic.Int64) (stop func(), err error) {
	return startShard(writes, "!"+scorev1b1.LabelShard)
}

// startShard runs each controller in its own manager under its own service account, bound to
// the ClusterRole generated from its RBAC markers (config/rbac): the journeys prove those
// roles are enough. They own the Workloads selector selects. The unlabelled rest's set also
// runs the fleet's rollout, as the chart's first Deployments do (no leader election here: one
// rollout controller in all). When writes is set, every request but a read is counted in it;
// every write is also passed to shardWrites when set.
func startShard(writes *atomic.Int64, selector string) (stop func(), err error) {
	sel, err := shard.Selector(selector)
	if err != nil {
		return nil, err
	}
	controllers := controlplane.Sharded
	if selector == "!"+scorev1b1.LabelShard {
		controllers = controlplane.All
	}
	mctx, cancel := context.WithCancel(ctx)
	for _, name := range controllers {
		opts := controlplane.DefaultOptions()
		opts.Config.OCIPlainHTTP = true // the in-process registry of TestTemplateFromOCI
		opts.Controllers = []string{name}
		opts.Shard = sel
		as := rest.CopyConfig(cfg)
		as.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:score-system:score-" + name}
		as.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if r.Method != http.MethodGet && writes != nil {
					writes.Add(1)
					writeLog.Store(r.Method + " " + r.URL.Path)
				}
				if record := shardWrites.Load(); record != nil && r.Method != http.MethodGet {
					(*record)(selector, r.Method+" "+r.URL.Path)
				}
				if q := r.URL.Query(); r.Method == http.MethodGet && q.Get("watch") == "true" {
					watches.Store(watched{name, r.URL.Path, q.Get("labelSelector"), q.Get("fieldSelector")}, true)
				}
				return rt.RoundTrip(r)
			})
		})
		// Several managers share this process, so each runs its own config source controller.
		mgr, err := ctrl.NewManager(as, ctrl.Options{Scheme: testenv.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
			Cache: controlplane.CacheOptions(opts), Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
		if err != nil {
			cancel()
			return nil, err
		}
		if err := controlplane.Setup(mgr, opts); err != nil {
			cancel()
			return nil, err
		}
		go func() { _ = mgr.Start(mctx) }()
	}
	return cancel, nil
}

// shardWrites, when set, hears of every write of every controller, with the selector of the
// shard that wrote it.
var shardWrites atomic.Pointer[func(selector, write string)]

// watches holds every watch the controllers opened (what fills their caches), as watched.
var watches sync.Map

// watched is a watch: the controller that opened it, its path and its selectors.
type watched struct{ controller, path, labels, fields string }

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The examples of make dev — a hello web service, a web service with postgres and redis, a
// batch job — all become Ready, the web services with a cluster-local endpoint.
func TestExamplesBecomeReady(t *testing.T) {
	root := testenv.RepoRoot()
	ns := "e2e-examples"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	examples, _ := filepath.Glob(filepath.Join(root, "examples", "*", "score.yaml"))
	var names []string
	for _, f := range examples {
		results, err := scorefile.ReadFile(f, scorefile.Options{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		res := results[0]
		if err := c.Create(ctx, res.Workload); err != nil {
			t.Fatal(err)
		}
		names = append(names, res.Workload.Name)
	}
	sort.Strings(names)
	start := time.Now()
	for _, name := range names {
		testenv.Eventually(t, 3*time.Minute, name+" Ready", func() error {
			w := &scorev1b1.Workload{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
				return err
			}
			if r := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue {
				return fmt.Errorf("ready: %+v", r)
			}
			if w.Spec.Service != nil && (w.Status.Endpoint == nil || *w.Status.Endpoint != fmt.Sprintf("http://%s.%s.svc.cluster.local:80", name, ns)) {
				return fmt.Errorf("endpoint %v", w.Status.Endpoint)
			}
			return nil
		})
	}
	t.Logf("%d examples Ready in %s", len(names), time.Since(start).Round(time.Millisecond))

	t.Run("no secret value leaves its Secret", func(t *testing.T) {
		var secrets corev1.SecretList
		if err := c.List(ctx, &secrets, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		var values []string
		for _, sec := range secrets.Items {
			if strings.HasSuffix(sec.Name, "-outputs") {
				for _, v := range sec.Data {
					values = append(values, string(v))
				}
			}
		}
		if len(values) < 2 {
			t.Fatalf("expected the postgres and redis passwords, found %d secret outputs", len(values))
		}
		assertSecretsStayInSecrets(t, values)
	})

	t.Run("the offline render is what the cluster got", func(t *testing.T) {
		assertRenderIsTheCluster(t, ns, names...)
	})

	t.Run("the controllers cache their own objects only", func(t *testing.T) {
		assertCachesHoldOurs(t)
	})

	t.Run("controllers restarting over Ready workloads write nothing", func(t *testing.T) {
		waitSettled(t)
		since := reconciled(t)
		var writes atomic.Int64
		if err := restart(&writes); err != nil {
			t.Fatal(err)
		}
		// The positive control: each restarted controller has been through every object.
		waitFullPass(t, since)
		if n := writes.Load(); n != 0 {
			t.Fatalf("%d writes after a restart with nothing changed; the last: %v", n, writeLog.Load())
		}
		// Zero writes must come from controllers that run: they answer a reconcile request.
		w := &scorev1b1.Workload{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello"}, w); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(w.DeepCopy())
		w.Annotations[scorev1b1.AnnotationReconcileRequestedAt] = "after-restart"
		if err := c.Patch(ctx, w, patch); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 30*time.Second, "the restarted controllers answer", func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
				return err
			}
			if w.Status.LastHandledReconcileAt != "after-restart" {
				return fmt.Errorf("lastHandledReconcileAt %q", w.Status.LastHandledReconcileAt)
			}
			return nil
		})
	})

	t.Run("deleting a Workload deprovisions its Delete dependencies", func(t *testing.T) {
		// The provisioned StatefulSets (the ledger example runs as one too, a Workload's own).
		var sets appsv1.StatefulSetList
		provisioned := client.HasLabels{scorev1b1.LabelInstance}
		if err := c.List(ctx, &sets, client.InNamespace(ns), provisioned); err != nil || len(sets.Items) != 2 {
			t.Fatalf("postgres and redis: %v %d", err, len(sets.Items))
		}
		if err := c.Delete(ctx, &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders"}}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, time.Minute, "orders and its dependencies gone", func() error {
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, &scorev1b1.Workload{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("workload: %v", err)
			}
			if err := c.List(ctx, &sets, client.InNamespace(ns), provisioned); err != nil || len(sets.Items) != 0 {
				return fmt.Errorf("statefulsets left: %d %v", len(sets.Items), err)
			}
			var deps appsv1.DeploymentList
			if err := c.List(ctx, &deps, client.InNamespace(ns), client.MatchingLabels{scorev1b1.LabelWorkload: "orders"}); err != nil || len(deps.Items) != 0 {
				return fmt.Errorf("deployments left: %d %v", len(deps.Items), err)
			}
			return nil
		})
	})
}

func jsonObject(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

// assertSecretsStayInSecrets fails when a secret value appears in a score.dev object, an
// event (in the namespaces opts select) or any controller log line, or is short.
func assertSecretsStayInSecrets(t *testing.T, values []string, opts ...client.ListOption) {
	t.Helper()
	var haystack strings.Builder
	for _, list := range []client.ObjectList{&scorev1b1.WorkloadList{}, &scorev1b1.ResourceClaimList{}, &scorev1b1.WorkloadPlanList{}, &scorev1b1.WorkloadExposureList{}, &corev1.EventList{}, &eventsv1.EventList{}} {
		if err := c.List(ctx, list, opts...); err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(list)
		haystack.Write(raw)
	}
	haystack.WriteString(controllerLogs.String())
	for _, v := range values {
		if len(v) < 16 {
			t.Fatalf("a secret value is short: %d characters", len(v))
		}
		if strings.Contains(haystack.String(), v) {
			t.Fatalf("a secret value appears outside its Secret")
		}
	}
	t.Logf("%d secret values checked against %d bytes of objects, events and controller logs", len(values), haystack.Len())
}
