package helm

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv/controllerproc"
)

// The leader election timing of score-controllers' defaults (controller-runtime's): a
// standby takes a lease nobody renewed for leaseDuration, trying every retryPeriod (with up to
// 20% jitter).
const (
	leaseDuration = 15 * time.Second
	retryPeriod   = 2 * time.Second
)

// TestFailover is the chart with two replicas of each controller, and a node going away in
// the middle of a rollout: the leader of each controller is killed (SIGKILL: no shutdown, no
// lease handed back). Each standby takes over within the lease, every Workload goes Ready, and
// nothing is lost or written twice: no object of the rollout is deleted or created again (same
// UIDs), no credential is generated again, no claim is duplicated. The new leaders then
// delete the rollout, and the release is uninstalled.
func TestFailover(t *testing.T) {
	helmCfg := helmConfiguration(t)
	chrt, err := loader.Load(filepath.Join(root, "charts", "score-orchestrator"))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{"split": true, "replicas": 2}
	// Installed by TestHelmInstall when it ran first; installed here when it runs alone.
	upgrade := action.NewUpgrade(helmCfg)
	upgrade.Namespace, upgrade.WaitStrategy, upgrade.Timeout = namespace, kube.StatusWatcherStrategy, 3*time.Minute
	if _, err := upgrade.RunWithContext(ctx, release, chrt, values); err != nil {
		install := action.NewInstall(helmCfg)
		install.ReleaseName, install.Namespace, install.CreateNamespace = release, namespace, true
		install.WaitStrategy, install.Timeout = kube.StatusWatcherStrategy, 3*time.Minute
		if _, err := install.RunWithContext(ctx, chrt, values); err != nil {
			t.Fatalf("helm install: %v", err)
		}
	}
	// A failure must not leave the release behind for TestHelmInstall: it is uninstalled after
	// the processes stopped (cleanups run last first).
	t.Cleanup(func() {
		if t.Failed() {
			uninstall := action.NewUninstall(helmCfg)
			uninstall.WaitStrategy, uninstall.Timeout = kube.StatusWatcherStrategy, 2*time.Minute
			if _, err := uninstall.Run(release); err != nil {
				t.Logf("helm uninstall after the failure: %v", err)
			}
		}
	})
	var deps appsv1.DeploymentList
	if err := c.List(ctx, &deps, client.InNamespace(namespace), client.MatchingLabels{"app.kubernetes.io/instance": release}); err != nil {
		t.Fatal(err)
	}
	replicas := map[string][]*controllerproc.Process{}
	all := map[string]*controllerproc.Process{}
	for i := range deps.Items {
		d := &deps.Items[i]
		if d.Status.AvailableReplicas != 2 {
			t.Fatalf("Deployment %s: %d available replicas, want 2", d.Name, d.Status.AvailableReplicas)
		}
		for _, r := range []string{"a", "b"} {
			p := startAsDeployment(t, d, r)
			replicas[d.Name] = append(replicas[d.Name], p)
			all[p.Name] = p
		}
	}
	var pdbs policyv1.PodDisruptionBudgetList
	if err := c.List(ctx, &pdbs, client.InNamespace(namespace)); err != nil || len(pdbs.Items) != 4 {
		t.Fatalf("PodDisruptionBudgets: %d, %v; want one per Deployment", len(pdbs.Items), err)
	}
	if len(replicas) != 4 {
		t.Fatalf("Deployments %v, want one per controller", slices.Collect(maps.Keys(replicas)))
	}
	leaders := map[string]*controllerproc.Process{}
	for name, ps := range replicas {
		testenv.Eventually(t, time.Minute, name+" has one leader of its two replicas", func() error {
			var leading []*controllerproc.Process
			for _, p := range ps {
				if p.Leads() {
					leading = append(leading, p)
				}
			}
			if len(leading) != 1 {
				return fmt.Errorf("%d replicas lead", len(leading))
			}
			leaders[name] = leading[0]
			return nil
		})
	}

	// The rollout: twelve Workloads at once, four of them with a database and a cache.
	const ns = "failover"
	testenv.Create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	t.Cleanup(func() {
		if t.Failed() { // while the controllers still run, so that their finalizers go
			deleteRollout(t, ns)
		}
	})
	var workloads []*scorev1b1.Workload
	for _, ex := range []struct {
		file   string
		copies int
	}{{"examples/web-postgres-redis/score.yaml", 4}, {"examples/hello/score.yaml", 8}} {
		ws, err := devenv.Example(os.DirFS(root), ex.file, ns)
		if err != nil {
			t.Fatal(err)
		}
		for i := range ex.copies {
			w := ws[0].DeepCopy()
			w.Name = fmt.Sprintf("%s-%d", w.Name, i)
			workloads = append(workloads, w)
		}
	}
	rolloutStart := time.Now()
	for _, w := range workloads {
		testenv.Create(t, c, w)
	}

	// Mid-rollout: once a claim is Bound and before every Workload is Ready, every leader
	// goes away at once.
	var claims scorev1b1.ResourceClaimList
	testenv.Eventually(t, time.Minute, "a claim is Bound", func() error {
		if err := c.List(ctx, &claims, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, cl := range claims.Items {
			if cl.Status.Phase == scorev1b1.ClaimPhaseBound {
				return nil
			}
		}
		return fmt.Errorf("%d claims, none Bound", len(claims.Items))
	})
	for _, p := range leaders {
		p.Kill()
	}
	killed := time.Now()
	ready := readyCount(t, ns)
	if ready == len(workloads) {
		t.Fatalf("all %d Workloads were Ready before the leaders were killed: not a rollout under way", ready)
	}
	before := snapshot(t, ns)
	t.Logf("leaders killed %.1fs into the rollout: %d of %d Workloads Ready, %d objects of the rollout exist",
		killed.Sub(rolloutStart).Seconds(), ready, len(workloads), len(before))

	// Each standby takes over within the lease: it may take the lease once leaseDuration has
	// passed since the last renewal it saw, and tries every retryPeriod (plus jitter). A
	// standby that has exited fails the test at once, with its output.
	standbys := map[string]*controllerproc.Process{}
	for name, ps := range replicas {
		for _, p := range ps {
			if p != leaders[name] {
				standbys[name] = p
			}
		}
	}
	took := map[string]time.Duration{}
	testenv.Eventually(t, 2*time.Minute, "every standby leads", func() error {
		var waiting []string
		for name, p := range standbys {
			if _, ok := took[name]; ok {
				continue
			}
			if err := p.Exited(); err != nil {
				t.Fatalf("%s: %v\n%s", p.Name, err, p.LogTail())
			}
			if !p.Leads() {
				waiting = append(waiting, p.Name)
				continue
			}
			took[name] = time.Since(killed)
		}
		if len(waiting) > 0 {
			slices.Sort(waiting)
			return fmt.Errorf("%s do not lead yet\n%s", strings.Join(waiting, ", "), controllerproc.LogTails(standbys))
		}
		return nil
	})
	for name, d := range took {
		t.Logf("%s: the standby leads %.1fs after the leader was killed", name, d.Seconds())
		if limit := leaseDuration + 2*retryPeriod*6/5 + 3*time.Second; d > limit {
			t.Errorf("%s: the standby took %s to lead, more than the lease and two retries (%s)", name, d, limit)
		}
	}
	if err := devenv.WaitReady(ctx, c, ns, 5*time.Minute, io.Discard); err != nil {
		t.Fatalf("after the failover: %v\n%s", err, controllerproc.LogTails(all))
	}
	t.Logf("%d Workloads Ready %.1fs after the rollout began", len(workloads), time.Since(rolloutStart).Seconds())

	// Nothing lost, nothing written twice.
	after := snapshot(t, ns)
	for key, was := range before {
		now, ok := after[key]
		switch {
		case !ok:
			t.Errorf("%s: gone after the failover", key)
		case now.uid != was.uid:
			t.Errorf("%s: created again after the failover (uid %s, was %s)", key, now.uid, was.uid)
		case now.data != was.data:
			t.Errorf("%s: its data changed after the failover (a credential generated again)", key)
		}
	}
	for _, w := range readAudit(t) {
		if strings.HasPrefix(w.User.Username, "system:serviceaccount:"+namespace+":") && w.Verb == "delete" && w.ObjectRef.Namespace == ns {
			t.Errorf("%s deleted %s %s/%s during the rollout", w.User.Username, w.ObjectRef.Resource, ns, w.ObjectRef.Name)
		}
	}
	if err := c.List(ctx, &claims, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, cl := range claims.Items {
		dep := cl.Spec.WorkloadRef.Name + "/" + cl.Spec.Key
		if other, ok := seen[dep]; ok {
			t.Errorf("two claims for %s: %s and %s", dep, other, cl.Name)
		}
		seen[dep] = cl.Name
	}
	if want := 4 * 2; len(seen) != want {
		t.Errorf("claims for %d dependencies, want %d", len(seen), want)
	}

	// The new leaders delete what they took over, in order, and the release goes: the
	// cluster is left as TestHelmInstall expects it.
	deleteRollout(t, ns)
	for _, p := range all {
		if err := p.Stop(30 * time.Second); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}
	uninstall := action.NewUninstall(helmCfg)
	uninstall.WaitStrategy, uninstall.Timeout = kube.StatusWatcherStrategy, 2*time.Minute
	if _, err := uninstall.Run(release); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
}

// deleteRollout deletes the Workloads of ns and waits for them and their claims to go.
func deleteRollout(t *testing.T, ns string) {
	t.Helper()
	if err := c.DeleteAllOf(ctx, &scorev1b1.Workload{}, client.InNamespace(ns)); err != nil {
		t.Error(err)
		return
	}
	testenv.Eventually(t, 2*time.Minute, "the rollout's Workloads and claims are deleted", func() error {
		var ws scorev1b1.WorkloadList
		var claims scorev1b1.ResourceClaimList
		if err := c.List(ctx, &ws, client.InNamespace(ns)); err != nil {
			return err
		}
		if err := c.List(ctx, &claims, client.InNamespace(ns)); err != nil {
			return err
		}
		if n := len(ws.Items) + len(claims.Items); n > 0 {
			return fmt.Errorf("%d Workloads and %d claims left", len(ws.Items), len(claims.Items))
		}
		return nil
	})
}

// readyCount is the number of Workloads of ns that are Ready.
func readyCount(t *testing.T, ns string) int {
	t.Helper()
	var ws scorev1b1.WorkloadList
	if err := c.List(ctx, &ws, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, w := range ws.Items {
		if meta.IsStatusConditionTrue(w.Status.Conditions, scorev1b1.ConditionReady) {
			n++
		}
	}
	return n
}

// kept is what the failover must keep of an object: its UID, and a Secret's data.
type kept struct {
	uid  types.UID
	data string
}

// snapshot is every object the controllers made for the rollout in ns, by kind and name.
func snapshot(t *testing.T, ns string) map[string]kept {
	t.Helper()
	out := map[string]kept{}
	lists := map[string]client.ObjectList{
		"ResourceClaim": &scorev1b1.ResourceClaimList{}, "WorkloadPlan": &scorev1b1.WorkloadPlanList{},
		"WorkloadExposure": &scorev1b1.WorkloadExposureList{}, "Secret": &corev1.SecretList{},
		"Service": &corev1.ServiceList{}, "Deployment": &appsv1.DeploymentList{}, "StatefulSet": &appsv1.StatefulSetList{},
	}
	for kind, l := range lists {
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		if err := meta.EachListItem(l, func(o k8sruntime.Object) error {
			obj := o.(client.Object)
			s := kept{uid: obj.GetUID()}
			if sec, ok := obj.(*corev1.Secret); ok {
				s.data = fmt.Sprint(sec.Data)
			}
			out[kind+" "+obj.GetName()] = s
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
