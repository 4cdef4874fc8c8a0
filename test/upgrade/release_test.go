package upgrade

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	releasecommon "helm.sh/helm/v4/pkg/release/common"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv/controllerproc"
)

const (
	// releaseName and namespace are the chart's, as docs/operations.md installs it.
	releaseName = "score"
	namespace   = "score-system"
	// deployment is the chart's one Deployment (split: false, the default).
	deployment = "score-controllers"
)

// release is one version of the control plane, as a platform team installs it: its chart
// (with its CRDs) and the score-controllers binary its Deployment runs.
type release struct {
	name string
	// root is its source tree: the chart, the CRDs, the examples.
	root string
	// controllers is its score-controllers binary.
	controllers string
}

func (r *release) chart() string { return filepath.Join(r.root, "charts", "score-orchestrator") }

// values are the chart's values the platform team installs it with: the defaults, and the
// release's shipped config with the fleet's additions (fleetConfig), the rollout's change
// when changed is set.
func (r *release) values(t *testing.T, changed bool) map[string]any {
	t.Helper()
	shipped, err := os.ReadFile(filepath.Join(r.chart(), "files", "orchestrator-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := fleetConfig(shipped, changed)
	if err != nil {
		t.Fatalf("%s: the fleet's config: %v", r.name, err)
	}
	return map[string]any{"config": map[string]any{"document": string(doc)}}
}

// running is the control plane's process (one replica of the chart's Deployment), whichever
// release it is; runs counts the processes started, so that each has a directory of its own.
var (
	running *controllerproc.Process
	runs    int
)

// startControllers runs the chart's Deployment, as the cluster holds it now, from r's binary
// (a pod of the rolling update: it waits, a standby with its caches warm, until the lease is
// free) and returns it once it answers /readyz.
func startControllers(t *testing.T, r *release) *controllerproc.Process {
	t.Helper()
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: deployment}, &d); err != nil {
		t.Fatal(err)
	}
	runs++
	dir := filepath.Join(state, fmt.Sprintf("controllers-%d", runs))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := controllerproc.Launch(cfg, r.controllers, dir, &d, "")
	if err != nil {
		t.Fatalf("%s's controllers: %v", r.name, err)
	}
	return p
}

// handOver ends the running process (SIGTERM: it hands its lease back) for next, as a rolling
// update ends the old pod once the new one is ready, and returns when next leads.
func handOver(t *testing.T, next *controllerproc.Process) (leads time.Duration) {
	t.Helper()
	start := time.Now()
	if running != nil {
		if err := running.Stop(30 * time.Second); err != nil {
			t.Errorf("the previous controllers' shutdown: %v\n%s", err, running.LogTail())
		}
	}
	running = next
	testenv.Eventually(t, time.Minute, "the new controllers lead", func() error {
		if err := next.Exited(); err != nil {
			t.Fatalf("%v\n%s", err, next.LogTail())
		}
		if !next.Leads() {
			return fmt.Errorf("not leading")
		}
		return nil
	})
	return time.Since(start)
}

// helmConfiguration is the Helm SDK's configuration for the cluster, releases stored as
// Secrets of the release namespace (helm's default).
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

// helmInstall installs r's chart (and with it, from its crds/, r's CRDs), waiting for its
// Deployment.
func helmInstall(t *testing.T, r *release, values map[string]any) {
	t.Helper()
	chrt, err := loader.Load(r.chart())
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(helmConfiguration(t))
	install.ReleaseName, install.Namespace, install.CreateNamespace = releaseName, namespace, true
	install.WaitStrategy, install.Timeout = kube.StatusWatcherStrategy, 3*time.Minute
	rel, err := install.RunWithContext(ctx, chrt, values)
	if err != nil {
		t.Fatalf("helm install %s: %v", r.name, err)
	}
	if r := rel.(*releasev1.Release); r.Info.Status != releasecommon.StatusDeployed {
		t.Fatalf("release status %s", r.Info.Status)
	}
}

// helmUpgrade upgrades the release to r's chart with values; helm leaves the CRDs alone.
func helmUpgrade(t *testing.T, r *release, values map[string]any) int {
	t.Helper()
	chrt, err := loader.Load(r.chart())
	if err != nil {
		t.Fatal(err)
	}
	upgrade := action.NewUpgrade(helmConfiguration(t))
	upgrade.Namespace, upgrade.WaitStrategy, upgrade.Timeout = namespace, kube.StatusWatcherStrategy, 3*time.Minute
	rel, err := upgrade.RunWithContext(ctx, releaseName, chrt, values)
	if err != nil {
		t.Fatalf("helm upgrade to %s: %v", r.name, err)
	}
	got := rel.(*releasev1.Release)
	if got.Info.Status != releasecommon.StatusDeployed {
		t.Fatalf("after helm upgrade to %s: %s", r.name, got.Info.Status)
	}
	return got.Version
}

// tryHelmUpgrade upgrades the release to r's chart with values, and returns helm's error.
func tryHelmUpgrade(t *testing.T, r *release, values map[string]any) error {
	t.Helper()
	chrt, err := loader.Load(r.chart())
	if err != nil {
		t.Fatal(err)
	}
	upgrade := action.NewUpgrade(helmConfiguration(t))
	upgrade.Namespace, upgrade.WaitStrategy, upgrade.Timeout = namespace, kube.StatusWatcherStrategy, time.Minute
	_, err = upgrade.RunWithContext(ctx, releaseName, chrt, values)
	return err
}

// helmRollback rolls the release back to revision, and returns helm's error.
func helmRollback(t *testing.T, revision int) error {
	t.Helper()
	rollback := action.NewRollback(helmConfiguration(t))
	rollback.Version, rollback.WaitStrategy, rollback.Timeout = revision, kube.StatusWatcherStrategy, time.Minute
	return rollback.Run(releaseName)
}

// releaseObjects are the resourceVersions of the release's objects (labelled with its
// instance), by "Kind namespace/name".
func releaseObjects(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	selector := client.MatchingLabels{"app.kubernetes.io/instance": releaseName}
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "ServiceAccount"}, {Version: "v1", Kind: "ConfigMap"}, {Version: "v1", Kind: "Service"},
		{Group: "apps", Version: "v1", Kind: "Deployment"}, {Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}, {Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, {Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicyBinding"},
	} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list, selector); err != nil {
			t.Fatal(err)
		}
		for _, o := range list.Items {
			out[gvk.Kind+" "+o.GetNamespace()+"/"+o.GetName()] = o.GetResourceVersion()
		}
	}
	if len(out) == 0 {
		t.Fatal("the release has no objects")
	}
	return out
}

// changedObjects names what differs between two releaseObjects: changed, made or gone.
func changedObjects(before, after map[string]string) []string {
	var out []string
	for key, rv := range after {
		switch was, ok := before[key]; {
		case !ok:
			out = append(out, key+" made")
		case was != rv:
			out = append(out, key+" changed")
		}
	}
	for key := range before {
		if _, ok := after[key]; !ok {
			out = append(out, key+" gone")
		}
	}
	slices.Sort(out)
	return out
}

// applyCRDs applies r's CRDs as docs/upgrading.md tells a platform team to, before the chart:
// kubectl apply --server-side --force-conflicts of the chart's crds/ (helm install applied
// them under its own field manager, which owns every field a changed CRD changes: without
// --force-conflicts, kubectl refuses the change as a conflict with helm), then waits until each
// is Established (served under its new schema).
func applyCRDs(t *testing.T, r *release) {
	t.Helper()
	dir := filepath.Join(r.chart(), "crds")
	kubectl := exec.Command(filepath.Join(testenv.RepoRoot(), "bin", "kubectl"), "--kubeconfig", kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", dir)
	if out, err := kubectl.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply --server-side --force-conflicts -f %s: %v\n%s", dir, err, out)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var want apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(raw, &want); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		testenv.Eventually(t, time.Minute, "CRD "+want.Name+" Established", func() error {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKey{Name: want.Name}, &crd); err != nil {
				return err
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return nil
				}
			}
			return fmt.Errorf("conditions %v", crd.Status.Conditions)
		})
	}
}
