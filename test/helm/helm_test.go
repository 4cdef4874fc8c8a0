// Package helm installs the chart (charts/score-orchestrator) with the Helm SDK on a
// simulated cluster of its own, then runs the controllers exactly as the chart's Deployments
// describe them — their arguments, under their ServiceAccounts' tokens — and takes the
// examples to Ready. kwok runs no containers, so each Deployment's container runs here as a
// process of the score-controllers binary; the API server's audit log shows who did what.
package helm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	releasecommon "helm.sh/helm/v4/pkg/release/common"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/simcluster"
	"github.com/score-orchestrator/score-orchestrator/internal/testenv"
)

const (
	// release and namespace are the chart's; not score-system, to show the chart works in
	// any namespace.
	release   = "score"
	namespace = "score-platform"
	// apps is the developers' namespace.
	apps = "apps"
)

var (
	root, state, controllersBin string
	cluster                     *simcluster.Cluster
	kubeconfig                  string
	cfg                         *rest.Config
	c                           client.Client
	ctx                         = context.Background()
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root = testenv.RepoRoot()
	var err error
	if state, err = os.MkdirTemp("", "score-helm-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(state)
	controllersBin = filepath.Join(state, "score-controllers")
	build := exec.Command("go", "build", "-o", controllersBin, "./cmd/score-controllers")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building score-controllers:", err)
		return 1
	}
	cluster = &simcluster.Cluster{Root: root, Name: "score-helm-" + strconv.Itoa(os.Getpid()), Dir: state, Volumes: 16, AuditWrites: true}
	if err := cluster.Up(); err != nil {
		fmt.Fprintln(os.Stderr, "starting the simulated cluster:", err)
		return 1
	}
	defer func() { _ = cluster.Down() }()
	kubeconfig = cluster.Kubeconfig()
	if cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if c, err = client.New(cfg, client.Options{Scheme: testenv.Scheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// TestHelmInstall is issue 7's "done when": the chart, installed with one Deployment per
// controller, brings up controllers that take the examples to Ready under their own service
// accounts, expose their probes and metrics, stay quiet when nothing changes, survive a helm
// upgrade, and shut down gracefully, handing back their leader leases.
func TestHelmInstall(t *testing.T) {
	helmCfg := helmConfiguration(t)
	chrt, err := loader.Load(filepath.Join(root, "charts", "score-orchestrator"))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{"split": true}

	install := action.NewInstall(helmCfg)
	install.ReleaseName, install.Namespace, install.CreateNamespace = release, namespace, true
	install.WaitStrategy, install.Timeout = kube.StatusWatcherStrategy, 3*time.Minute
	start := time.Now()
	rel, err := install.RunWithContext(ctx, chrt, values)
	if err != nil {
		t.Fatalf("helm install: %v", err)
	}
	if r := rel.(*releasev1.Release); r.Info.Status != releasecommon.StatusDeployed {
		t.Fatalf("release status %s", r.Info.Status)
	}
	t.Logf("helm install (waiting for the Deployments to be Available): %.1fs", time.Since(start).Seconds())

	// The chart's Deployments, one per controller, each under a ServiceAccount of its name.
	var deps appsv1.DeploymentList
	if err := c.List(ctx, &deps, client.InNamespace(namespace), client.MatchingLabels{"app.kubernetes.io/instance": release}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range deps.Items {
		names = append(names, d.Name)
		if d.Spec.Template.Spec.ServiceAccountName != d.Name || d.Status.AvailableReplicas != 1 {
			t.Fatalf("Deployment %s: service account %q, %d available", d.Name, d.Spec.Template.Spec.ServiceAccountName, d.Status.AvailableReplicas)
		}
	}
	slices.Sort(names)
	if want := []string{"score-orchestrator", "score-provisioner", "score-runtime"}; !slices.Equal(names, want) {
		t.Fatalf("Deployments %v, want %v", names, want)
	}

	procs := map[string]*controllerProcess{}
	for i := range deps.Items {
		p := startAsDeployment(t, &deps.Items[i])
		procs[p.name] = p
	}
	for _, p := range procs {
		testenv.Eventually(t, time.Minute, p.name+" is ready (/readyz)", func() error {
			_, err := p.get("health", "/readyz")
			return err
		})
	}

	// A developer bound to score-workload-editor in the apps namespace applies the examples.
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: apps}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dev-edit", Namespace: apps},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "score-workload-editor"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "dev"}}}); err != nil {
		t.Fatal(err)
	}
	devCfg := rest.CopyConfig(cfg)
	devCfg.Impersonate = rest.ImpersonationConfig{UserName: "dev"}
	dev, err := client.New(devCfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "examples", "*", "score.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("examples: %v %v", files, err)
	}
	workloads := 0
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		ws, err := devenv.Example(os.DirFS(root), rel, apps)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range ws {
			if err := dev.Create(ctx, w); err != nil {
				t.Fatalf("%s: the developer creates Workload %s: %v", rel, w.Name, err)
			}
			workloads++
		}
	}
	start = time.Now()
	var progress bytes.Buffer
	if err := devenv.WaitReady(ctx, c, apps, 5*time.Minute, &progress); err != nil {
		t.Fatalf("%v\n%s\n%s", err, progress.String(), logTails(procs))
	}
	t.Logf("%d Workloads of %d examples Ready in %.1fs", workloads, len(files), time.Since(start).Seconds())

	// Every controller wrote under its own service account, and nothing wrote as another.
	audit := readAudit(t)
	for _, name := range names {
		user := "system:serviceaccount:" + namespace + ":" + name
		writes := audit.writesBy(user, time.Time{})
		if len(writes) == 0 {
			t.Fatalf("no write by %s", user)
		}
		t.Logf("%s: %d writes, e.g. %s", user, len(writes), writes[0])
	}
	ownWrite := map[string]*regexp.Regexp{
		"score-orchestrator": regexp.MustCompile(`^(workloads|workloads/status|resourceclaims|workloadplans|workloadexposures|events|leases) `),
		"score-provisioner":  regexp.MustCompile(`^(resourceclaims|resourceclaims/status|secrets|services|statefulsets|deployments|jobs|configmaps|persistentvolumeclaims|networkpolicies|events|leases) `),
		"score-runtime":      regexp.MustCompile(`^(workloadplans|workloadplans/status|workloadexposures|workloadexposures/status|deployments|statefulsets|jobs|services|configmaps|secrets|ingresses|networkpolicies|persistentvolumeclaims|events|leases) `),
	}
	for name, allowed := range ownWrite {
		for _, w := range audit.writesBy("system:serviceaccount:"+namespace+":"+name, time.Time{}) {
			if !allowed.MatchString(w) {
				t.Errorf("%s wrote %s, which is not its job", name, w)
			}
		}
	}

	checkMetrics(t, procs, workloads)
	checkNoSecrets(t, procs)
	checkTransitionLogs(t, procs)

	// An idle minute: no event and no write but the leader leases' renewals. It starts once
	// the rollout has settled: Ready comes before the last endpoints are published, so the
	// minute begins after five seconds without a write.
	testenv.Eventually(t, time.Minute, "the controllers settle", func() error {
		if last := readAudit(t).lastWrite(namespace); time.Since(last) < 5*time.Second {
			return fmt.Errorf("last write at %s", last.Format(time.RFC3339Nano))
		}
		return nil
	})
	idleStart := time.Now()
	time.Sleep(time.Minute)
	audit = readAudit(t)
	for _, name := range names {
		renewals := 0
		for _, w := range audit.writesBy("system:serviceaccount:"+namespace+":"+name, idleStart) {
			if strings.HasPrefix(w, "leases ") {
				renewals++
			} else {
				t.Errorf("idle minute: %s wrote %s", name, w)
			}
		}
		// The renewals show the audit log covers the minute.
		if renewals == 0 {
			t.Errorf("idle minute: no lease renewal by %s in the audit log", name)
		}
	}

	// helm upgrade with changed values, among them two admission policies: a new revision, a
	// Workload without a team label is refused from then on, and the Workloads that predate
	// the policy (none has the label) stay Ready.
	upgrade := action.NewUpgrade(helmCfg)
	upgrade.Namespace, upgrade.WaitStrategy, upgrade.Timeout = namespace, kube.StatusWatcherStrategy, 3*time.Minute
	values["extraArgs"] = []any{"--concurrency=8"}
	values["admissionPolicies"] = map[string]any{"requiredLabels": map[string]any{"enabled": true}, "allowedProfiles": map[string]any{"enabled": true}}
	rel, err = upgrade.RunWithContext(ctx, release, chrt, values)
	if err != nil {
		t.Fatalf("helm upgrade: %v", err)
	}
	if r := rel.(*releasev1.Release); r.Version != 2 || r.Info.Status != releasecommon.StatusDeployed {
		t.Fatalf("after upgrade: revision %d, %s", r.Version, r.Info.Status)
	}
	unlabelled := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "unlabelled", Namespace: apps},
		Spec: scorev1b1.WorkloadSpec{Containers: map[string]scorev1b1.Container{"main": {Image: "nginx"}}}}
	testenv.Eventually(t, 30*time.Second, "the chart's label policy refuses a Workload without a team label", func() error {
		err := dev.Create(ctx, unlabelled.DeepCopy(), client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "'score-required-labels'") {
			return fmt.Errorf("not refused by the policy: %v", err)
		}
		return nil
	})
	if err := devenv.WaitReady(ctx, c, apps, time.Minute, io.Discard); err != nil {
		t.Fatalf("after the upgrade: %v", err)
	}

	// Graceful shutdown: SIGTERM, exit 0, and the lease handed back at once.
	for _, p := range procs {
		if err := p.stop(30 * time.Second); err != nil {
			t.Errorf("%s: %v\n%s", p.name, err, p.logTail())
		}
	}
	var leases coordinationv1.LeaseList
	if err := c.List(ctx, &leases, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	if len(leases.Items) != 3 {
		t.Fatalf("%d leases in %s, want one per controller", len(leases.Items), namespace)
	}
	for _, l := range leases.Items {
		if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != "" {
			t.Errorf("lease %s still held by %s after a graceful shutdown", l.Name, h)
		}
	}

	// Back to one Deployment (split: false): a helm upgrade replaces the three with
	// score-controllers, one ServiceAccount bound to the three roles. Its one process takes
	// over the Ready Workloads without writing to them, and takes a new one to Ready.
	values["split"] = false
	upgrade = action.NewUpgrade(helmCfg)
	upgrade.Namespace, upgrade.WaitStrategy, upgrade.Timeout = namespace, kube.StatusWatcherStrategy, 3*time.Minute
	if rel, err = upgrade.RunWithContext(ctx, release, chrt, values); err != nil {
		t.Fatalf("helm upgrade to one Deployment: %v", err)
	}
	var one appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "score-controllers"}, &one); err != nil {
		t.Fatal(err)
	}
	takeover := time.Now()
	single := startAsDeployment(t, &one)
	testenv.Eventually(t, time.Minute, "score-controllers is ready (/readyz)", func() error {
		_, err := single.get("health", "/readyz")
		return err
	})
	hello, err := devenv.Example(os.DirFS(root), "examples/hello/score.yaml", apps)
	if err != nil {
		t.Fatal(err)
	}
	again := hello[0]
	again.Name, again.Labels = "hello-again", map[string]string{"team": "web"} // the label policy is on
	if err := dev.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	if err := devenv.WaitReady(ctx, c, apps, 2*time.Minute, io.Discard); err != nil {
		t.Fatalf("under one Deployment: %v\n%s", err, single.logTail())
	}
	writes := readAudit(t).writesBy("system:serviceaccount:"+namespace+":score-controllers", takeover)
	for _, w := range writes {
		// Besides the new Workload's: its Lease, and the Event it records on becoming leader.
		if !strings.HasPrefix(w, "leases ") && !strings.HasPrefix(w, "events create "+namespace+"/") && !strings.Contains(w, "/hello-again") {
			t.Errorf("score-controllers, taking over, wrote %s (not the new Workload's)", w)
		}
	}
	t.Logf("one Deployment: %d writes, all the new Workload's or leader election's", len(writes))
	if err := single.stop(30 * time.Second); err != nil {
		t.Errorf("score-controllers: %v", err)
	}
}

// helmConfiguration is the Helm SDK's configuration for the test cluster, storing releases
// as Secrets in the release namespace (helm's default).
func helmConfiguration(t *testing.T) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = ptr.To(kubeconfig), ptr.To(namespace)
	helmCfg := action.NewConfiguration()
	if err := helmCfg.Init(flags, namespace, "secret"); err != nil {
		t.Fatal(err)
	}
	return helmCfg
}

// controllerProcess is one chart Deployment's container, run here.
type controllerProcess struct {
	name  string
	cmd   *exec.Cmd
	log   string
	ports map[string]int
	done  chan error
}

// startAsDeployment runs the Deployment's container as a process: its arguments, with a
// kubeconfig holding a token of its ServiceAccount (what the kubelet would mount), and local
// ports for metrics and probes in place of the container's.
func startAsDeployment(t *testing.T, d *appsv1.Deployment) *controllerProcess {
	t.Helper()
	sa := d.Spec.Template.Spec.ServiceAccountName
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := kube.CoreV1().ServiceAccounts(d.Namespace).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token for %s: %v", sa, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cluster"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthority: cfg.CAFile, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts[sa] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: sa, Namespace: d.Namespace}
	kc.CurrentContext = sa
	kcPath := filepath.Join(state, sa+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kcPath); err != nil {
		t.Fatal(err)
	}

	container := d.Spec.Template.Spec.Containers[0]
	p := &controllerProcess{name: d.Name, log: filepath.Join(state, d.Name+".log"), ports: map[string]int{"metrics": freePort(t), "health": freePort(t)}, done: make(chan error, 1)}
	args := append(slices.Clone(container.Args),
		"--kubeconfig="+kcPath,
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(p.ports["metrics"]),
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(p.ports["health"]),
		"--oci-cache-dir="+filepath.Join(state, d.Name+"-oci"))
	logFile, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(controllersBin, args...)
	// Nothing of the test's environment (no KUBECONFIG): the token is its only credential.
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + state}
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait(); _ = logFile.Close() }()
	t.Cleanup(func() { _ = p.stop(10 * time.Second) })
	return p
}

// stop sends SIGTERM and waits for the process to exit; an exit other than 0 is an error.
func (p *controllerProcess) stop(grace time.Duration) error {
	if p.cmd.ProcessState != nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			return fmt.Errorf("exit after SIGTERM: %w", err)
		}
		return nil
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("still running %s after SIGTERM", grace)
	}
}

func (p *controllerProcess) get(port, path string) (string, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", p.ports[port], path))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", path, resp.Status)
	}
	return string(body), nil
}

func (p *controllerProcess) logTail() string {
	raw, _ := os.ReadFile(p.log)
	if len(raw) > 4000 {
		raw = raw[len(raw)-4000:]
	}
	return string(raw)
}

func logTails(procs map[string]*controllerProcess) string {
	var b strings.Builder
	for _, p := range procs {
		fmt.Fprintf(&b, "--- %s\n%s\n", p.name, p.logTail())
	}
	return b.String()
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// checkMetrics reads each controller's metrics endpoint for its own series.
func checkMetrics(t *testing.T, procs map[string]*controllerProcess, workloads int) {
	t.Helper()
	want := map[string][]string{
		"score-orchestrator": {
			fmt.Sprintf(`score_orchestrator_workloads{ready="True",reason="Succeeded"} %d`, workloads),
			`score_orchestrator_selection_decisions_total{backend=`,
			`score_orchestrator_generation_to_ready_seconds_count `,
			`score_orchestrator_generation_to_plan_seconds_count `,
			`score_orchestrator_config_reloads_total{result="success",source=`,
			`controller_runtime_reconcile_total{controller="workload"`,
		},
		"score-provisioner": {
			`score_provisioner_claims{phase="Bound"} `,
			`score_provisioner_claim_phase_seconds_count{phase="Binding"} `,
			`controller_runtime_reconcile_total{controller="resourceclaim"`,
		},
		"score-runtime": {
			`score_runtime_template_fetches_total{`,
			`controller_runtime_reconcile_total{controller="workloadplan"`,
		},
	}
	for name, series := range want {
		text, err := procs[name].get("metrics", "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range series {
			if !strings.Contains(text, s) {
				t.Errorf("%s metrics: no %q", name, s)
			}
		}
	}
}

// checkNoSecrets looks for every secret output value in every controller's log and metrics.
func checkNoSecrets(t *testing.T, procs map[string]*controllerProcess) {
	t.Helper()
	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets, client.InNamespace(apps)); err != nil {
		t.Fatal(err)
	}
	var values []string
	for _, s := range secrets.Items {
		for _, v := range s.Data {
			if len(v) >= 12 {
				values = append(values, string(v))
			}
		}
	}
	if len(values) == 0 {
		t.Fatal("no secret outputs to look for")
	}
	for _, p := range procs {
		logs, _ := os.ReadFile(p.log)
		metrics, err := p.get("metrics", "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if bytes.Contains(logs, []byte(v)) || strings.Contains(metrics, v) {
				t.Errorf("%s: a secret value is in its log or metrics", p.name)
			}
		}
	}
	t.Logf("%d secret values absent from %d logs and metrics endpoints", len(values), len(procs))
}

// checkTransitionLogs reads the controllers' logs, JSON lines, for one line per state
// transition: for each Workload (its Ready condition), claim and plan (its phase), the lines
// never repeat a state, and the last one is the state the object is in.
func checkTransitionLogs(t *testing.T, procs map[string]*controllerProcess) {
	t.Helper()
	// states reads proc's log lines with message msg (and field filter's value, when set) for
	// objects in apps: by object name, the state each line names (the values of fields).
	states := func(proc, msg string, filter [2]string, fields ...string) map[string][]string {
		raw, err := os.ReadFile(procs[proc].log)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]string{}
		for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
			var entry map[string]any
			if err := json.Unmarshal(line, &entry); err != nil {
				t.Fatalf("%s: a log line that is not JSON: %s", proc, line)
			}
			if entry["msg"] != msg || entry["namespace"] != apps || filter[0] != "" && entry[filter[0]] != filter[1] {
				continue
			}
			var state []string
			for _, f := range fields {
				state = append(state, fmt.Sprint(entry[f]))
			}
			name := fmt.Sprint(entry["name"])
			out[name] = append(out[name], strings.Join(state, "/"))
		}
		return out
	}
	check := func(what string, logged map[string][]string, current map[string]string) {
		for name, now := range current {
			seq := logged[name]
			for i := 1; i < len(seq); i++ {
				if seq[i] == seq[i-1] {
					t.Errorf("%s %s: a log line without a transition: %v", what, name, seq)
				}
			}
			if len(seq) == 0 || seq[len(seq)-1] != now {
				t.Errorf("%s %s is %s; its logged transitions: %v", what, name, now, seq)
			}
		}
	}
	var claims scorev1b1.ResourceClaimList
	var plans scorev1b1.WorkloadPlanList
	var workloads scorev1b1.WorkloadList
	for _, l := range []client.ObjectList{&claims, &plans, &workloads} {
		if err := c.List(ctx, l, client.InNamespace(apps)); err != nil {
			t.Fatal(err)
		}
	}
	current := map[string]string{}
	for _, w := range workloads.Items {
		ready := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
		current[w.Name] = string(ready.Status) + "/" + ready.Reason
	}
	check("Workload", states("score-orchestrator", "Condition changed", [2]string{"type", "Ready"}, "status", "reason"), current)
	current = map[string]string{}
	for _, c := range claims.Items {
		current[c.Name] = string(c.Status.Phase) + "/" + string(c.Status.Reason)
	}
	check("claim", states("score-provisioner", "Phase changed", [2]string{}, "phase", "reason"), current)
	current = map[string]string{}
	for _, p := range plans.Items {
		current[p.Name] = string(p.Status.Phase) + "/" + string(p.Status.Reason)
	}
	check("plan", states("score-runtime", "Phase changed", [2]string{}, "phase", "reason"), current)
}

// auditEvents are the API server's audit records of writes.
type auditEvents []auditEvent

type auditEvent struct {
	Verb  string `json:"verb"`
	Stage string `json:"stage"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	StageTimestamp metav1.MicroTime `json:"stageTimestamp"`
}

func readAudit(t *testing.T) auditEvents {
	t.Helper()
	path, err := cluster.AuditLog()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out auditEvents
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.Stage == "ResponseComplete" && e.ObjectRef != nil {
			out = append(out, e)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// lastWrite is when a service account of ns last wrote anything but a Lease.
func (a auditEvents) lastWrite(ns string) time.Time {
	var last time.Time
	for _, e := range a {
		if strings.HasPrefix(e.User.Username, "system:serviceaccount:"+ns+":") && e.ObjectRef.Resource != "leases" && e.StageTimestamp.After(last) {
			last = e.StageTimestamp.Time
		}
	}
	return last
}

// writesBy lists the writes user made after since, as "resource[/subresource] verb
// namespace/name".
func (a auditEvents) writesBy(user string, since time.Time) []string {
	var out []string
	for _, e := range a {
		if e.User.Username != user || e.StageTimestamp.Time.Before(since) {
			continue
		}
		res := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			res += "/" + e.ObjectRef.Subresource
		}
		out = append(out, fmt.Sprintf("%s %s %s/%s", res, e.Verb, e.ObjectRef.Namespace, e.ObjectRef.Name))
	}
	return out
}
