// Package helm installs the chart (charts/score-orchestrator) with the Helm SDK on a
// simulated cluster of its own, then runs the controllers exactly as the chart's Deployments
// describe them — their arguments, under their ServiceAccounts' tokens — and takes the
// examples to Ready. kwok runs no containers, so each Deployment's container runs here as a
// process of the score-controllers binary; the API server's audit log shows who did what.
package helm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	releasecommon "helm.sh/helm/v4/pkg/release/common"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/metricnames"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/simcluster"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv/controllerproc"
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
	return testenv.SimulatedMain(m, testenv.Simulated{Name: "score-helm", Clusters: map[string]testenv.ClusterSpec{"": {Volumes: 32, AuditWrites: true}}},
		func(env *testenv.SimulatedEnv) (func(), error) {
			k := env.Clusters[""]
			root, state, cluster, kubeconfig, cfg, c = env.Root, env.State, k.Cluster, k.Kubeconfig(), k.Config, k.Client
			controllersBin = filepath.Join(state, "score-controllers")
			build := exec.Command("go", "build", "-o", controllersBin, "./cmd/score-controllers")
			build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
			if err := build.Run(); err != nil {
				return nil, fmt.Errorf("building score-controllers: %w", err)
			}
			return nil, nil
		})
}

// TestHelmInstall: the chart, installed with one Deployment per
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
	if want := []string{"score-orchestrator", "score-provisioner", "score-rollout", "score-runtime"}; !slices.Equal(names, want) {
		t.Fatalf("Deployments %v, want %v", names, want)
	}

	procs := map[string]*controllerproc.Process{}
	for i := range deps.Items {
		p := startAsDeployment(t, &deps.Items[i], "")
		procs[p.Name] = p
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
		t.Fatalf("%v\n%s\n%s", err, progress.String(), controllerproc.LogTails(procs))
	}
	t.Logf("%d Workloads of %d examples Ready in %.1fs", workloads, len(files), time.Since(start).Seconds())

	// Every controller wrote under its own service account, and nothing wrote as another.
	audit := readAudit(t)
	for _, name := range names {
		user := "system:serviceaccount:" + namespace + ":" + name
		writes := audit.WritesBy(user, time.Time{})
		if len(writes) == 0 {
			t.Fatalf("no write by %s", user)
		}
		t.Logf("%s: %d writes, e.g. %s", user, len(writes), writes[0])
	}
	ownWrite := map[string]*regexp.Regexp{
		"score-orchestrator": regexp.MustCompile(`^(workloads|workloads/status|resourceclaims|workloadplans|workloadexposures|events|leases) `),
		"score-provisioner":  regexp.MustCompile(`^(resourceclaims|resourceclaims/status|secrets|services|statefulsets|deployments|jobs|configmaps|persistentvolumeclaims|networkpolicies|events|leases) `),
		"score-runtime":      regexp.MustCompile(`^(workloadplans|workloadplans/status|workloadexposures|workloadexposures/status|deployments|statefulsets|jobs|services|configmaps|secrets|ingresses|networkpolicies|persistentvolumeclaims|events|leases) `),
		// The rollout keeps the admitted config revisions, and nothing else, in ConfigMaps.
		"score-rollout": regexp.MustCompile(`^(configrollouts|configrollouts/status|events|leases) |^configmaps (create|delete) [^/]+/score-config-[0-9a-f]{12}$`),
	}
	for name, allowed := range ownWrite {
		for _, w := range audit.WritesBy("system:serviceaccount:"+namespace+":"+name, time.Time{}) {
			if !allowed.MatchString(w) {
				t.Errorf("%s wrote %s, which is not its job", name, w)
			}
		}
	}

	checkMetrics(t, procs, workloads)
	checkDashboardMetrics(t, procs)
	checkNoSecrets(t, procs)
	checkTransitionLogs(t, procs)

	// An idle minute: no event and no write but the leader leases' renewals. It starts once
	// the rollout has settled: Ready comes before the last endpoints are published, so the
	// minute begins after five seconds without a write.
	testenv.Eventually(t, time.Minute, "the controllers settle", func() error {
		if last := readAudit(t).LastWrite(namespace); time.Since(last) < 5*time.Second {
			return fmt.Errorf("last write at %s", last.Format(time.RFC3339Nano))
		}
		return nil
	})
	idleStart := time.Now()
	time.Sleep(time.Minute)
	audit = readAudit(t)
	for _, name := range names {
		renewals := 0
		for _, w := range audit.WritesBy("system:serviceaccount:"+namespace+":"+name, idleStart) {
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
		if err := p.Stop(30 * time.Second); err != nil {
			t.Errorf("%s: %v\n%s", p.Name, err, p.LogTail())
		}
	}
	var leases coordinationv1.LeaseList
	if err := c.List(ctx, &leases, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	if len(leases.Items) != len(names) {
		t.Fatalf("%d leases in %s, want one per controller", len(leases.Items), namespace)
	}
	for _, l := range leases.Items {
		if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != "" {
			t.Errorf("lease %s still held by %s after a graceful shutdown", l.Name, h)
		}
	}

	// Back to one Deployment (split: false): a helm upgrade replaces the four with
	// score-controllers, one ServiceAccount bound to the four roles. Its one process takes
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
	single := startAsDeployment(t, &one, "")
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
		t.Fatalf("under one Deployment: %v\n%s", err, single.LogTail())
	}
	writes := readAudit(t).WritesBy("system:serviceaccount:"+namespace+":score-controllers", takeover)
	for _, w := range writes {
		// Besides the new Workload's: its Leases, and the Events it records on becoming leader.
		if !strings.HasPrefix(w, "leases ") && !strings.HasPrefix(w, "events create "+namespace+"/") && !strings.Contains(w, "/hello-again") {
			t.Errorf("score-controllers, taking over, wrote %s (not the new Workload's)", w)
		}
	}
	t.Logf("one Deployment: %d writes, all the new Workload's or leader election's", len(writes))
	if err := single.Stop(30 * time.Second); err != nil {
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

// checkMetrics reads each controller's metrics endpoint for its own series.
func checkMetrics(t *testing.T, procs map[string]*controllerproc.Process, workloads int) {
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
		"score-rollout": {
			`score_orchestrator_rollout_halts_total 0`,
			`controller_runtime_reconcile_total{controller="configrollout"`,
		},
	}
	for name, series := range want {
		text, err := procs[name].Get("metrics", "/metrics")
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

// checkDashboardMetrics checks that every metric the Grafana dashboard and the sample alerts
// query is one the running controllers expose (a histogram's series by their own names).
func checkDashboardMetrics(t *testing.T, procs map[string]*controllerproc.Process) {
	t.Helper()
	exposed := map[string]bool{}
	for _, p := range procs {
		text, err := p.Get("metrics", "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(text, "\n") {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			exposed[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
		}
	}
	var exprs []string
	raw, err := os.ReadFile(filepath.Join(root, "config", "grafana", "score-orchestrator.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		Panels []struct {
			Targets []struct{ Expr string } `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dashboard); err != nil {
		t.Fatal(err)
	}
	for _, p := range dashboard.Panels {
		for _, target := range p.Targets {
			exprs = append(exprs, target.Expr)
		}
	}
	raw, err = os.ReadFile(filepath.Join(root, "config", "prometheus", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var alerts struct {
		Spec struct {
			Groups []struct {
				Rules []struct{ Expr string } `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &alerts); err != nil {
		t.Fatal(err)
	}
	for _, g := range alerts.Spec.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	names := map[string]bool{}
	for _, e := range exprs {
		for _, name := range metricnames.Referenced(e) {
			names[name] = true
			if !exposed[name] {
				t.Errorf("%s queries %s, which no controller exposes", e, name)
			}
		}
	}
	t.Logf("the %d metrics of %d dashboard and alert queries are exposed", len(names), len(exprs))
}

// checkNoSecrets looks for every secret output value in every controller's log and metrics.
func checkNoSecrets(t *testing.T, procs map[string]*controllerproc.Process) {
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
		logs, _ := os.ReadFile(p.Log)
		metrics, err := p.Get("metrics", "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if bytes.Contains(logs, []byte(v)) || strings.Contains(metrics, v) {
				t.Errorf("%s: a secret value is in its log or metrics", p.Name)
			}
		}
	}
	t.Logf("%d secret values absent from %d logs and metrics endpoints", len(values), len(procs))
}

// checkTransitionLogs reads the controllers' logs, JSON lines, for one line per state
// transition: for each Workload (its Ready condition), claim and plan (its phase), the lines
// never repeat a state, and the last one is the state the object is in.
func checkTransitionLogs(t *testing.T, procs map[string]*controllerproc.Process) {
	t.Helper()
	// states reads proc's log lines with message msg (and field filter's value, when set) for
	// objects in apps: by object name, the state each line names (the values of fields).
	states := func(proc, msg string, filter [2]string, fields ...string) map[string][]string {
		raw, err := os.ReadFile(procs[proc].Log)
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

// readAudit reads the cluster's audit log.
func readAudit(t *testing.T) controllerproc.Audit {
	t.Helper()
	path, err := cluster.AuditLog()
	if err != nil {
		t.Fatal(err)
	}
	return controllerproc.ReadAudit(t, path)
}

// startAsDeployment runs the Deployment's container (replica "" of one) as a process.
func startAsDeployment(t *testing.T, d *appsv1.Deployment, replica string) *controllerproc.Process {
	t.Helper()
	return controllerproc.Start(t, cfg, controllersBin, state, d, replica)
}
