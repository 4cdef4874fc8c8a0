// Package dashboard drives scorectl dashboard in headless Chromium against a simulated cluster
// of its own (real kube-apiserver, etcd, kube-controller-manager and kube-scheduler, kwok
// nodes) with the controllers running: a platform engineer and an application developer, each
// with their own kubeconfig, watch a Workload go from Pending to Ready. Screenshots are kept in
// $SCORE_ARTIFACTS_DIR (default .artifacts/ in the repository).
package dashboard

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/dashboard"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/controlplane"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

var (
	adminKubeconfig string
	adminConfig     *rest.Config
	c               client.Client
	ctx             = context.Background()
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if _, err := chromium(); err != nil && os.Getenv("SCORE_BROWSER_REQUIRED") == "" {
		fmt.Fprintln(os.Stderr, "skipping the browser tests:", err)
		return 0
	}
	return testenv.SimulatedMain(m, testenv.Simulated{Name: "score-dashboard", Clusters: map[string]testenv.ClusterSpec{"": {Volumes: 4}}, Install: true},
		func(env *testenv.SimulatedEnv) (func(), error) {
			k := env.Clusters[""]
			adminKubeconfig, adminConfig, c = k.Kubeconfig(), k.Config, k.Client
			mctx, stop := context.WithCancel(ctx)
			opts := controlplane.DefaultOptions()
			opts.Controllers = controlplane.All
			mgr, err := ctrl.NewManager(adminConfig, ctrl.Options{Scheme: testenv.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0", Cache: controlplane.CacheOptions(opts)})
			if err == nil {
				err = controlplane.Setup(mgr, opts)
			}
			if err != nil {
				stop()
				return nil, err
			}
			go func() { _ = mgr.Start(mctx) }()
			return stop, nil
		})
}

// chromium is the browser to drive: $SCORE_CHROMIUM, else Debian's.
func chromium() (string, error) {
	path := os.Getenv("SCORE_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("no Chromium at %s (hack/tools.sh chromium installs Debian's): %w", path, err)
	}
	return path, nil
}

// artifacts is where screenshots go.
func artifacts(t *testing.T) string {
	dir := os.Getenv("SCORE_ARTIFACTS_DIR")
	if dir == "" {
		dir = filepath.Join(testenv.RepoRoot(), ".artifacts")
	}
	dir = filepath.Join(dir, "dashboard")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// served is one dashboard, as scorectl dashboard serves it, with every request it sent to the
// API server and every body it sent to a browser.
type served struct {
	url string

	mu        sync.Mutex
	apiPaths  []string
	responses strings.Builder
}

func (s *served) sent() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.responses.String()
}

// serve starts a dashboard reading the cluster with the kubeconfig at path, listening on
// loopback and answering only to its names, as the command does.
func serve(t *testing.T, kubeconfig string) *served {
	t.Helper()
	return serveWith(t, kubeconfig, nil)
}

// serveWith is serve with the options changed by change, which is given the port.
func serveWith(t *testing.T, kubeconfig string, change func(opts *dashboard.Options, port string)) *served {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	s := &served{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			s.mu.Lock()
			s.apiPaths = append(s.apiPaths, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
			s.mu.Unlock()
			return rt.RoundTrip(r)
		})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ns := raw.Contexts[raw.CurrentContext].Namespace
	dctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	opts := dashboard.Options{Config: cfg, DefaultNamespace: ns, ConfigNamespace: "score-system", ConfigName: "orchestrator-config",
		ConfigKey: "config.yaml", AllowedHosts: dashboard.LoopbackHosts(port)}
	s.url = "http://localhost:" + port
	if change != nil {
		change(&opts, port)
		s.url = "http://127.0.0.1:" + port
	}
	srv, err := dashboard.New(dctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	h := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.ServeHTTP(&recorder{ResponseWriter: w, s: s}, r)
	}))
	h.Listener.Close()
	h.Listener = ln
	h.Start()
	t.Cleanup(h.Close)
	return s
}

// recorder keeps a copy of every body the dashboard sends.
type recorder struct {
	http.ResponseWriter
	s *served
}

func (r *recorder) Write(b []byte) (int, error) {
	r.s.mu.Lock()
	r.s.responses.Write(b)
	r.s.mu.Unlock()
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() { r.ResponseWriter.(http.Flusher).Flush() }

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// developer creates a ServiceAccount in ns bound to the workload-editor role there, and writes
// a kubeconfig with its token whose context's namespace is ns: an application developer's own.
func developer(t *testing.T, ns string) string {
	t.Helper()
	testenv.Create(t, c,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "developer"}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "developer-edits-workloads"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "score-workload-editor"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "developer"}}})
	cs, err := kubernetes.NewForConfig(adminConfig)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "developer",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["sim"] = &clientcmdapi.Cluster{Server: adminConfig.Host, CertificateAuthority: adminConfig.CAFile, CertificateAuthorityData: adminConfig.CAData}
	kc.AuthInfos["developer"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["developer"] = &clientcmdapi.Context{Cluster: "sim", AuthInfo: "developer", Namespace: ns}
	kc.CurrentContext = "developer"
	path := filepath.Join(t.TempDir(), "developer.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// browser starts a headless Chromium for the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := chromium()
	if err != nil {
		t.Fatal(err)
	}
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]), chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true), chromedp.WindowSize(1400, 900))
	actx, cancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancel)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return bctx
}

// do runs steps in the browser within timeout.
func do(t *testing.T, bctx context.Context, timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	value(t, bctx, timeout, chromedp.Steps(steps...))
}

// value runs one action in the browser within timeout and returns its value.
func value[T any](t *testing.T, bctx context.Context, timeout time.Duration, a chromedp.Action[T]) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(bctx, timeout)
	defer cancel()
	v, err := chromedp.Run(tctx, a)
	if err != nil {
		html, _ := chromedp.Run(bctx, chromedp.OuterHTML("main"))
		t.Fatalf("in the browser: %v\nthe page's main:\n%s", err, html)
	}
	return v
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, bctx context.Context, expr string) T {
	t.Helper()
	return value(t, bctx, 10*time.Second, chromedp.Evaluate[T](expr))
}

func screenshot(t *testing.T, bctx context.Context, name string) {
	t.Helper()
	png := value(t, bctx, 30*time.Second, chromedp.FullScreenshot(100))
	path := filepath.Join(artifacts(t), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// waitJS waits until the expression is true in the page (the test polls the page; the page
// itself only listens to its stream).
func waitJS(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(100*time.Millisecond))
}

func TestDashboard(t *testing.T) {
	for _, ns := range []string{"team-a", "team-b"} {
		testenv.Create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	platform := serve(t, adminKubeconfig)
	dev := serve(t, developer(t, "team-a"))
	bctx := browser(t)

	// The platform engineer opens the fleet before the Workload exists.
	do(t, bctx, time.Minute, chromedp.Navigate(platform.url+"/"), chromedp.WaitVisible("#filter"),
		waitJS(`document.getElementById("live-state").dataset.state === "live"`),
		chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`))

	web := testenv.Workload("team-a", "web", testenv.WithPort("http", 80), testenv.WithResource("db", "postgres"))
	testenv.Create(t, c, web, testenv.Workload("team-b", "other", testenv.WithPort("http", 80)))
	row := `document.querySelector('tr[data-workload="team-a/web"]')`

	t.Run("a Workload going from Pending to Ready updates the fleet without a reload", func(t *testing.T) {
		do(t, bctx, time.Minute, waitJS(row+` !== null`))
		first := eval[string](t, bctx, row+`.dataset.ready`)
		if first == "True" {
			t.Fatalf("the Workload was Ready when it first appeared: the page did not see it pending")
		}
		do(t, bctx, 4*time.Minute, waitJS(row+`.dataset.ready === "True"`))
		if !eval[bool](t, bctx, `window.notReloaded === true`) {
			t.Fatal("the page was reloaded")
		}
		t.Logf("first seen Ready=%s, then True after %s updates pushed", first, eval[string](t, bctx, `document.getElementById("live").dataset.updates`))
		endpoint := eval[string](t, bctx, row+`.children[4].textContent`)
		backend := eval[string](t, bctx, row+`.children[6].textContent`)
		if !strings.HasPrefix(endpoint, "http://") || backend == "—" {
			t.Fatalf("the row shows endpoint %q and backend %q", endpoint, backend)
		}
		// The filter keeps working across updates.
		do(t, bctx, 10*time.Second, chromedp.SendKeys("#filter", "team-b"),
			waitJS(row+`.hidden === true && !document.querySelector('tr[data-workload="team-b/other"]').hidden`))
		screenshot(t, bctx, "fleet-platform")
		eval[bool](t, bctx, `(f => { f.value = ""; return f.dispatchEvent(new Event("input")) })(document.getElementById("filter"))`)
	})

	t.Run("the graph shows the objects the cluster holds for the Workload", func(t *testing.T) {
		do(t, bctx, time.Minute, chromedp.Navigate(platform.url+"/workloads/team-a/web"), waitJS(`document.getElementById("workload")?.dataset.ready === "True"`),
			waitJS(`document.querySelectorAll('g.node[data-kind="Endpoint"]').length > 0`))
		// The page follows the cluster within a moment: compare until they agree or time runs out.
		var shown, want []string
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(250 * time.Millisecond) {
			shown = eval[[]string](t, bctx, `Array.from(document.querySelectorAll("g.node")).map(n => n.dataset.kind + " " + n.dataset.name + " " + n.dataset.health)`)
			want = clusterGraph(t, "team-a", "web")
			slices.Sort(shown)
			if slices.Equal(shown, want) || time.Now().After(deadline) {
				break
			}
		}
		if !slices.Equal(shown, want) {
			t.Fatalf("the graph shows\n %q\nthe cluster holds\n %q", shown, want)
		}
		why := value(t, bctx, 10*time.Second, chromedp.Text("#why"))
		if !strings.Contains(why, "Profile: web-service") || !strings.Contains(why, "db (postgres)") {
			t.Fatalf("the decision trace reads:\n%s", why)
		}
		screenshot(t, bctx, "workload-platform")
	})

	t.Run("a developer sees only their own Workloads and what their rights hide", func(t *testing.T) {
		dctx := browser(t)
		do(t, dctx, time.Minute, chromedp.Navigate(dev.url+"/"), waitJS(row+`?.dataset.ready === "True"`))
		rows := eval[[]string](t, dctx, `Array.from(document.querySelectorAll("tr[data-workload]")).map(r => r.dataset.workload)`)
		notices := value(t, dctx, 10*time.Second, chromedp.Text("#live"))
		if !slices.Equal(rows, []string{"team-a/web"}) {
			t.Fatalf("the developer's fleet lists %q", rows)
		}
		if !strings.Contains(notices, "Your rights do not let you list Workloads in every namespace") || !strings.Contains(notices, "profile and backend") {
			t.Fatalf("the fleet does not say what the developer's rights hide:\n%s", notices)
		}
		screenshot(t, dctx, "fleet-developer")

		do(t, dctx, time.Minute, chromedp.Navigate(dev.url+"/workloads/team-a/web"), waitJS(`document.getElementById("workload")?.dataset.ready === "True"`))
		shown := eval[[]string](t, dctx, `Array.from(document.querySelectorAll("g.node")).map(n => n.dataset.kind + " " + n.dataset.health)`)
		page := value(t, dctx, 10*time.Second, chromedp.Text("main"))
		slices.Sort(shown)
		if want := []string{"Dependency Current", "Endpoint Current", "Workload Current", "WorkloadPlan Hidden"}; !slices.Equal(shown, want) {
			t.Fatalf("the developer's graph shows %q, want %q", shown, want)
		}
		for _, says := range []string{"Your rights do not show its resource claims", "its plan and the objects applied for it", "decision trace needs read access"} {
			if !strings.Contains(page, says) {
				t.Fatalf("the page does not say %q:\n%s", says, page)
			}
		}
		screenshot(t, dctx, "workload-developer")

		// Another team's Workload is not shown, even by its address.
		do(t, dctx, time.Minute, chromedp.Navigate(dev.url+"/workloads/team-b/other"), chromedp.WaitVisible("#missing"))
	})

	t.Run("pages render from one watch per kind, not a read per change", func(t *testing.T) {
		// The platform engineer's pages rendered the fleet and the Workload many times; every
		// one of the project's objects came from the shared cache's watches, never from a list
		// or a get per render.
		platform.mu.Lock()
		defer platform.mu.Unlock()
		watched := map[string]bool{}
		for _, p := range platform.apiPaths {
			method, rest, _ := strings.Cut(p, " ")
			path, query, _ := strings.Cut(rest, "?")
			if method != http.MethodGet || !strings.Contains(path, "/score.dev/") {
				continue
			}
			if !strings.Contains(query, "watch=true") {
				t.Fatalf("a page read %s from the API server", path)
			}
			watched[path[strings.LastIndex(path, "/")+1:]] = true
		}
		if len(watched) != 4 {
			t.Fatalf("the shared cache watches %v; want workloads, plans, claims and exposures", watched)
		}
	})

	t.Run("the dashboard answers only to localhost's names", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, platform.url+"/", nil)
		req.Host = "attacker.example:80"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("a request for host %s got %s", req.Host, resp.Status)
		}
	})

	t.Run("off loopback, the printed address lets the browser in and its live pages carry the token", func(t *testing.T) {
		// As scorectl dashboard --address ... --accept-hosts serves: the host names given, a
		// token drawn at start. The browser reaches it by its address, 127.0.0.1.
		token := dashboard.NewToken()
		hosts, err := dashboard.HostPatterns([]string{`127\.0\.0\.1`})
		if err != nil {
			t.Fatal(err)
		}
		off := serveWith(t, adminKubeconfig, func(opts *dashboard.Options, _ string) {
			opts.AllowedHosts, opts.AcceptHosts, opts.Token = nil, hosts, token
		})
		resp, err := http.Get(off.url + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a request without the token got %s", resp.Status)
		}
		octx := browser(t)
		// "live" means the stream's request carried the cookie: a refused stream is not opened again
		do(t, octx, time.Minute, chromedp.Navigate(off.url+"/?token="+token), waitJS(row+`?.dataset.ready === "True"`),
			waitJS(`document.getElementById("live-state").dataset.state === "live"`))
		if href := eval[string](t, octx, `location.href`); href != off.url+"/" {
			t.Fatalf("the address bar shows %s: the token stayed in it", href)
		}
		if cookies := eval[string](t, octx, `document.cookie`); cookies != "" {
			t.Fatalf("a script can read the cookie: %q", cookies)
		}
		do(t, octx, time.Minute, chromedp.Navigate(off.url+"/workloads/team-a/web"), waitJS(`document.getElementById("workload")?.dataset.ready === "True"`),
			waitJS(`document.getElementById("live-state").dataset.state === "live"`))
	})

	t.Run("no Secret value is ever sent and no Secret is read", func(t *testing.T) {
		// Every page and the first event of every stream, for both identities, on top of what
		// the browser already received.
		for _, s := range []*served{platform, dev} {
			for _, path := range []string{"/", "/workloads/team-a/web", "/workloads/team-b/other"} {
				get(t, s.url+path)
			}
			for _, path := range []string{"/stream/fleet", "/stream/workloads/team-a/web"} {
				firstEvent(t, s.url+path)
			}
		}
		var values []string
		var secrets corev1.SecretList
		if err := c.List(ctx, &secrets); err != nil {
			t.Fatal(err)
		}
		for _, sec := range secrets.Items {
			for _, v := range sec.Data {
				if len(v) >= 12 { // generated credentials; short values (ports, "postgres") are not secrets alone
					values = append(values, string(v))
				}
			}
		}
		if len(values) == 0 {
			t.Fatal("no secret values to look for: the test would pass vacuously")
		}
		for _, s := range []*served{platform, dev} {
			body := s.sent()
			for _, v := range values {
				if strings.Contains(body, v) {
					t.Fatalf("a secret value was sent to the browser by %s", s.url)
				}
			}
			for _, p := range s.apiPaths {
				if strings.Contains(p, "/secrets") {
					t.Fatalf("the dashboard read a Secret: %s", p)
				}
			}
			t.Logf("%s: %d secret values checked against %d bytes sent; %d API requests, none for a Secret", s.url, len(values), len(body), len(s.apiPaths))
		}
	})
}

// clusterGraph is what the graph of a Ready Workload should show, as the cluster holds it: each
// object's kind, name and health, sorted.
func clusterGraph(t *testing.T, ns, name string) []string {
	t.Helper()
	want := []string{"Workload " + name + " Current"}
	var claims scorev1b1.ResourceClaimList
	if err := c.List(ctx, &claims, client.InNamespace(ns), client.MatchingLabels{scorev1b1.LabelWorkload: name}); err != nil {
		t.Fatal(err)
	}
	for _, cl := range claims.Items {
		want = append(want, "ResourceClaim "+cl.Name+" Current")
		for _, o := range cl.Status.Resources {
			want = append(want, o.Kind+" "+o.Name+" "+cmp.Or(o.Health, scorev1b1.HealthUnknown))
		}
	}
	plan := &scorev1b1.WorkloadPlan{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, plan); err != nil {
		t.Fatal(err)
	}
	want = append(want, "WorkloadPlan "+name+" Current")
	for _, o := range plan.Status.Objects {
		want = append(want, o.Kind+" "+o.Name+" "+cmp.Or(o.Health, scorev1b1.HealthUnknown))
	}
	exposure := &scorev1b1.WorkloadExposure{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, exposure); err != nil {
		t.Fatal(err)
	}
	want = append(want, "WorkloadExposure "+name+" Current")
	for _, e := range exposure.Status.Exposures {
		health := scorev1b1.HealthCurrent
		if e.Reachable != nil && !*e.Reachable {
			health = scorev1b1.HealthFailed
		}
		want = append(want, "Endpoint "+e.URL+" "+health)
	}
	if len(claims.Items) != 1 || len(claims.Items[0].Status.Resources) == 0 || len(plan.Status.Objects) == 0 || len(exposure.Status.Exposures) == 0 {
		t.Fatalf("the cluster holds %d claims, %d applied objects and %d endpoints: nothing to compare", len(claims.Items), len(plan.Status.Objects), len(exposure.Status.Exposures))
	}
	slices.Sort(want)
	return want
}

func get(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
}

// firstEvent reads a stream until its first event ends.
func firstEvent(t *testing.T, url string) {
	t.Helper()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("GET %s: %s, %s", url, resp.Status, ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	data := false
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			data = true
		}
		if sc.Text() == "" && data {
			return
		}
	}
	t.Fatalf("the stream %s ended without an event: %v", url, sc.Err())
}
