// Package workers tests the adaptive worker gate (internal/controller/workers) on a real
// kube-apiserver and etcd: a controller wired as the orchestrator, the provisioner and the
// runtime are (MaxConcurrentReconciles at the cap, the gate in front of urgency.FairQueue,
// the process's Pushback on the manager's rest.Config), whose limit grows with a deep queue,
// falls when the API server answers 429 as Priority and Fairness does, and grows back.
//
// The 429s come from a transport between the pushback and the API server, switched on by the
// test, and, in TestTheLimitFallsUnderPriorityAndFairness, from the API server itself: a flow
// schema puts the controller's reads in a priority level without seats, which rejects every one
// (a level with seats would reject only when enough requests happen to meet, which no test can
// wait for without timing luck). Latency is left out of the law here (Near and Far infinite):
// the windows are short and the machine shared, and the law's latency rules are table-tested
// (internal/controller/workerlimit). Last, the control plane as the binary builds it gates the
// orchestrator, the provisioner and the runtime.
package workers

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/score-orchestrator/score-orchestrator/internal/controller/controlplane"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/urgency"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/workerlimit"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/workers"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

const (
	maxWorkers = 8
	label      = "workers.test/controller"
)

var (
	env *testenv.Env
	// throttled names the namespace whose ConfigMap requests the API server answers with 429
	// (empty: none).
	throttled atomic.Value
	// deep and pushback are controllers under test; apf's reads are made as throttledUser,
	// whom a real flow schema may put in a priority level without seats.
	deep, pushback, apf *probe
)

func TestMain(m *testing.M) {
	throttled.Store("")
	os.Exit(testenv.Main(m, func(ctx context.Context, e *testenv.Env) error {
		env = e
		return start(ctx)
	}))
}

// start runs a manager as controlplane.NewManagers builds it: the process's Pushback wraps
// every client's transport; here it wraps the 429s injected below it too.
func start(ctx context.Context) error {
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(rejectWhileThrottled)
	adaptive := &workers.Adaptive{Start: 2, Interval: 20 * time.Millisecond, Pushback: workers.NewPushback(),
		Params: &workerlimit.Params{Min: 1, Near: math.Inf(1), Far: math.Inf(1), MinSamples: 10, Follow: 128}}
	cfg.Wrap(adaptive.Pushback.Wrap)
	mgr, err := ctrl.NewManager(cfg, testenv.ManagerOptions())
	if err != nil {
		return err
	}
	deep, pushback, apf = &probe{name: "deep"}, &probe{name: "pushback"}, &probe{name: "apf"}
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: throttledUser}
	throttledReader, err := client.New(as, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		return err
	}
	for _, p := range []*probe{deep, pushback, apf} {
		p.reader, p.release = mgr.GetAPIReader(), make(chan struct{})
		a := *adaptive
		switch p {
		case pushback:
			a.Start = maxWorkers
		case apf:
			// The API server's Retry-After is a second: client-go retries each rejected
			// request then, and windows as long as the default see its 429s.
			a.Start, a.Interval, p.reader = maxWorkers, workers.DefaultInterval, throttledReader
		}
		if err := ctrl.NewControllerManagedBy(mgr).
			Named(p.name).
			For(&corev1.ConfigMap{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[label] == p.name }))).
			WithOptions(controller.Options{MaxConcurrentReconciles: maxWorkers, NewQueue: workers.Queue(p.name, maxWorkers, &a, urgency.FairQueue)}).
			Complete(p); err != nil {
			return err
		}
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return nil
}

// rejectWhileThrottled answers the throttled namespace's ConfigMap requests as Priority and
// Fairness rejects a request: 429, a Retry-After (0: client-go retries at once, ten times,
// then the reconcile fails and is requeued), the flow schema's and priority level's UIDs.
func rejectWhileThrottled(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		ns := throttled.Load().(string)
		if ns == "" || !strings.Contains(req.URL.Path, "/namespaces/"+ns+"/configmaps") {
			return rt.RoundTrip(req)
		}
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		h.Set("Retry-After", "0")
		h.Set("X-Kubernetes-PF-FlowSchema-UID", "test-flow-schema")
		h.Set("X-Kubernetes-PF-PriorityLevel-UID", "test-priority-level")
		body := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Too many requests, please try again later.","reason":"TooManyRequests","code":429}`
		return &http.Response{StatusCode: http.StatusTooManyRequests, Status: "429 Too Many Requests", Header: h,
			Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// probe is a controller that reads its ConfigMap from the API server (a request through the
// pushback) and then, while hold is set, waits for release: its workers stay busy and its
// queue deep. It counts the reconciles running at once.
type probe struct {
	name    string
	reader  client.Reader
	hold    atomic.Bool
	release chan struct{}

	mu               sync.Mutex
	running, busiest int
	done             map[string]bool
}

func (p *probe) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	p.mu.Lock()
	p.running++
	p.busiest = max(p.busiest, p.running)
	release := p.release
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.running--
		p.mu.Unlock()
	}()
	if err := p.reader.Get(ctx, req.NamespacedName, &corev1.ConfigMap{}); err != nil {
		return reconcile.Result{}, err
	}
	if p.hold.Load() {
		select {
		case <-release:
		case <-ctx.Done():
		}
	}
	p.mu.Lock()
	if p.done == nil {
		p.done = map[string]bool{}
	}
	p.done[req.String()] = true
	p.mu.Unlock()
	return reconcile.Result{}, nil
}

func (p *probe) counts() (running, busiest, done int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running, p.busiest, len(p.done)
}

// reset forgets what earlier tests reconciled.
func (p *probe) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.busiest, p.done = p.running, nil
}

// unhold lets every held reconcile go, and the next ones through without waiting.
func (p *probe) unhold() {
	p.hold.Store(false)
	p.mu.Lock()
	close(p.release)
	p.release = make(chan struct{})
	p.mu.Unlock()
}

// limit reads the controller's score_workers_limit from the metrics registry.
func limit(controller string) (int, error) {
	n, err := gathered("score_workers_limit", controller, "")
	return int(n), err
}

// gathered reads a series of name from the metrics registry: the controller's, and the
// reason's when reason is set.
func gathered(name, controller, reason string) (float64, error) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["controller"] == controller && labels["reason"] == reason {
				return m.GetGauge().GetValue() + m.GetCounter().GetValue(), nil
			}
		}
	}
	return 0, fmt.Errorf("no %s{controller=%q, reason=%q}", name, controller, reason)
}

func limitIs(controller string, ok func(int) bool, want string) func() error {
	return func() error {
		n, err := limit(controller)
		if err != nil {
			return err
		}
		if !ok(n) {
			return fmt.Errorf("limit %d, want %s", n, want)
		}
		return nil
	}
}

// configMaps creates n ConfigMaps for controller p in a new namespace, and returns it.
func configMaps(t *testing.T, p *probe, n int) string {
	t.Helper()
	ns := testenv.Namespace(t, env.Client)
	for i := range n {
		testenv.Create(t, env.Client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%02d", i), Labels: map[string]string{label: p.name}}})
	}
	return ns
}

// touch changes every ConfigMap of ns: each is queued again, ready at once.
func touch(t *testing.T, ns string, round int) {
	t.Helper()
	var list corev1.ConfigMapList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, cm := range list.Items {
		if cm.Labels[label] == "" {
			continue
		}
		cm.Data = map[string]string{"round": fmt.Sprint(round)}
		if err := env.Client.Update(context.Background(), &cm); err != nil {
			t.Fatal(err)
		}
	}
}

// With requests waiting and every admitted worker busy, the limit grows from its start to the
// cap, one a window, and no further: the workers reconciling at once follow it, never above
// the cap. Work done, nothing waiting, it holds.
func TestTheLimitGrowsWithADeepQueue(t *testing.T) {
	// 2 at the start; lower after another test's 429s (the pushback is the process's).
	testenv.Eventually(t, 30*time.Second, "the limit is exposed", limitIs(deep.name, func(int) bool { return true }, "any"))
	if n, _ := limit(deep.name); n == maxWorkers {
		t.Skip("the limit is at the cap already (-count: an earlier run grew it): nothing to grow")
	}
	deep.reset()
	deep.hold.Store(true)
	configMaps(t, deep, 30)
	testenv.Eventually(t, 30*time.Second, "the limit grows to the cap", limitIs(deep.name, func(n int) bool { return n == maxWorkers }, "the cap"))
	testenv.Eventually(t, 30*time.Second, "the cap's workers reconcile at once", func() error {
		if running, _, _ := deep.counts(); running != maxWorkers {
			return fmt.Errorf("%d running, want %d", running, maxWorkers)
		}
		return nil
	})
	deep.unhold()
	testenv.Eventually(t, 30*time.Second, "every ConfigMap reconciled", func() error {
		if _, _, done := deep.counts(); done != 30 {
			return fmt.Errorf("%d of 30 reconciled", done)
		}
		return nil
	})
	if _, busiest, _ := deep.counts(); busiest > maxWorkers {
		t.Fatalf("%d reconciled at once, above the cap %d", busiest, maxWorkers)
	}
	if n, _ := limit(deep.name); n != maxWorkers {
		t.Fatalf("limit %d once the queue is empty, want it held at %d", n, maxWorkers)
	}
}

// While the API server answers the controller's requests with 429 (as Priority and Fairness
// rejects them), its limit falls from the cap to the floor's neighbourhood; once it answers
// again and requests wait, the limit grows back to the cap.
func TestTheLimitFallsOnPushbackAndRecovers(t *testing.T) {
	pushback.reset()
	// First at the cap, with a deep queue and no pushback (it starts there; another test's
	// 429s may have lowered it since: the pushback is the process's).
	pushback.hold.Store(true)
	ns := configMaps(t, pushback, 20)
	testenv.Eventually(t, 30*time.Second, "the limit at the cap", limitIs(pushback.name, func(n int) bool { return n == maxWorkers }, "the cap"))
	pushback.unhold()

	throttled.Store(ns)
	defer throttled.Store("")
	touch(t, ns, 1)
	// Halved on each window with a 429; a window whose only reconcile had not sent its request
	// yet may add one back before the next halves it again.
	testenv.Eventually(t, 30*time.Second, "the limit falls under 429s", limitIs(pushback.name, func(n int) bool { return n <= 2 }, "at most 2"))

	throttled.Store("")
	pushback.hold.Store(true)
	touch(t, ns, 2)
	testenv.Eventually(t, 30*time.Second, "the limit grows back to the cap", limitIs(pushback.name, func(n int) bool { return n == maxWorkers }, "the cap"))
	pushback.unhold()
	if _, busiest, _ := pushback.counts(); busiest > maxWorkers {
		t.Fatalf("%d reconciled at once, above the cap %d", busiest, maxWorkers)
	}
}

// The control plane as the binary builds it (controlplane.NewManagers with the default
// options) gates each of the shard's controllers, at the documented start, and records the
// pushback on a copy of the caller's rest.Config, which it leaves as it was.
func TestTheControlPlaneGatesItsControllers(t *testing.T) {
	opts := controlplane.DefaultOptions()
	opts.Controllers = controlplane.Sharded
	cfg := rest.CopyConfig(env.Config)
	base := testenv.ManagerOptions()
	base.Controller.SkipNameValidation = ptr.To(true) // -count: the same controllers again
	mgrs, err := controlplane.NewManagers(cfg, opts, base)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.WrapTransport != nil {
		t.Fatal("NewManagers wrapped the caller's rest.Config")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = controlplane.Start(ctx, mgrs) }()
	for _, c := range []string{"workload", "resourceclaim", "workloadplan"} {
		testenv.Eventually(t, 30*time.Second, c+"'s limit at the start", limitIs(c, func(n int) bool { return n == workers.DefaultStart }, fmt.Sprint(workers.DefaultStart)))
	}
}

// throttledUser is whom the apf controller reads as.
const throttledUser = "workers-throttled"

// The same, with the API server's own Priority and Fairness: a flow schema puts the
// controller's user in a priority level without seats, which rejects each of its requests
// (429, Retry-After, X-Kubernetes-PF-* headers); the limit falls. The flow schema deleted,
// the user's requests go to the default level, and the limit grows back with a deep queue.
func TestTheLimitFallsUnderPriorityAndFairness(t *testing.T) {
	ctx := context.Background()
	apf.reset()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "workers-read-"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}
	testenv.Create(t, env.Client, role)
	testenv.Create(t, env.Client, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "workers-read-"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: throttledUser}}})
	level := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{GenerateName: "workers-no-seats-"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](0), LendablePercent: ptr.To[int32](0),
				BorrowingLimitPercent: ptr.To[int32](0), LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}}}
	testenv.Create(t, env.Client, level)
	schema := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{GenerateName: "workers-throttled-"},
		Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level.Name},
			MatchingPrecedence:  100,
			DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: throttledUser}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}}},
			}}}}
	defer func() { _ = env.Client.Delete(ctx, level) }()

	// First at the cap, with a deep queue and no pushback (other tests' 429s may have
	// lowered it: the pushback is the process's).
	apf.hold.Store(true)
	ns := configMaps(t, apf, 20)
	testenv.Eventually(t, 60*time.Second, "the limit at the cap", limitIs(apf.name, func(n int) bool { return n == maxWorkers }, "the cap"))
	apf.unhold()

	testenv.Create(t, env.Client, schema)
	defer func() { _ = env.Client.Delete(ctx, schema) }()
	round, touched := 0, time.Now()
	falls := limitIs(apf.name, func(n int) bool { return n <= 2 }, "at most 2")
	testenv.Eventually(t, 60*time.Second, "the limit falls under Priority and Fairness's 429s", func() error {
		err := falls()
		// The API server may apply the flow schema after a round's reads (seconds, on a
		// loaded machine): a round a second until the limit falls.
		if err != nil && time.Since(touched) >= time.Second {
			round, touched = round+1, time.Now()
			touch(t, ns, round)
		}
		return err
	})
	if n, err := gathered("score_workers_adjustments_total", apf.name, "throttled"); err != nil || n == 0 {
		t.Fatalf("moves for 429s: %v (%v), want some", n, err)
	}

	if err := env.Client.Delete(ctx, schema); err != nil {
		t.Fatal(err)
	}
	apf.hold.Store(true)
	defer apf.unhold()
	touch(t, ns, round+1)
	testenv.Eventually(t, 60*time.Second, "the limit grows back to the cap", limitIs(apf.name, func(n int) bool { return n == maxWorkers }, "the cap"))
}
