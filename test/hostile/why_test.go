package hostile

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/whyask"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// A tenant can run scorectl why on its own Workload, though the trace is made from the
// Orchestrator Config in score-system and the internal kinds, which tenants may not read; and
// it learns nothing of other namespaces, though what why prints for a platform engineer names
// the namespace a shared instance lives in, its objects, its quotas and the provisioner's words
// about them. Mallory, bound to score-workload-editor only, runs it on her Workload in team-b:
// one dependency is the instance team-a shares, which a Workload of team-a consumes too; the
// other a new instance of the same class, which team-a's quota refuses. The control plane
// answers: the profile, the backend, the provisioners and the claims' states, and nothing of
// team-a: not its name, its Workloads, its quota or the instance's objects. The platform's
// trace of the same Workload names team-a's quota (the control). Asked from team-b, team-a's
// Workloads do not exist; asked where she has no role, the API server refuses her.
func TestHostileWhyTellsATenantOfItsOwnWorkloadOnly(t *testing.T) {
	// Another consumer of the instance team-a shares: a Workload of team-a's.
	neighbour := testenv.Workload(teamA, "why-neighbour", testenv.WithPort("http", 80), testenv.WithResource("db", "postgres", testenv.ResourceID("common"), sharedClass))
	if err := admin.Create(ctx, neighbour); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, neighbour) })
	ready(t, teamA, neighbour.Name, 4*time.Minute)
	// The platform's quota in team-a: no StatefulSet more than it runs.
	var sets appsv1.StatefulSetList
	if err := admin.List(ctx, &sets, client.InNamespace(teamA)); err != nil {
		t.Fatal(err)
	}
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "why-statefulsets"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/statefulsets.apps": *resource.NewQuantity(int64(len(sets.Items)), resource.DecimalSI)}}}
	if err := admin.Create(ctx, quota); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, quota) })
	testenv.Eventually(t, 30*time.Second, "the quota computed", func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(quota), quota); err != nil {
			return err
		}
		if len(quota.Status.Hard) == 0 {
			return errors.New("no status yet")
		}
		return nil
	})

	const name = "why-me"
	create(t, testenv.Workload(teamB, name, testenv.WithPort("http", 80),
		testenv.WithResource("db", "postgres", testenv.ResourceID("common"), sharedClass),
		testenv.WithResource("cache", "postgres", testenv.ResourceID("why-me"), sharedClass)))
	refused(t, teamB, name, scorev1b1.ReasonQuotaExceeded)
	if c := claimOf(t, teamB, name, "cache"); c.Status.InstanceNamespace != teamA || c.Status.Reason != scorev1b1.ReasonQuotaExceeded {
		t.Fatalf("the claim is not refused by team-a's quota (%s in %q): this test tries nothing", c.Status.Reason, c.Status.InstanceNamespace)
	}

	// The control: mallory may read neither the config nor her claims, and the platform's
	// trace names what hers must not.
	if err := tenant.Get(ctx, client.ObjectKey{Namespace: "score-system", Name: "orchestrator-config"}, &corev1.ConfigMap{}); !apierrors.IsForbidden(err) {
		t.Fatalf("mallory reads the Orchestrator Config: %v", err)
	}
	if err := tenant.List(ctx, &scorev1b1.ResourceClaimList{}, client.InNamespace(teamB)); !apierrors.IsForbidden(err) {
		t.Fatalf("mallory lists her claims: %v", err)
	}
	platform := scorectl(t, kubeconfig, "why", name, "-n", teamB)
	if !strings.Contains(platform, "ResourceQuota "+teamA+"/"+quota.Name) {
		t.Fatalf("the control: the platform's trace does not name team-a's quota:\n%s", platform)
	}

	// Mallory's, as she runs it.
	out := scorectl(t, malloryKubeconfig(t), "why", name, "-n", teamB)
	t.Logf("mallory's scorectl why:\n%s", out)
	for _, want := range []string{
		"Workload team-b/why-me",
		"Profile: web-service",
		"✓ ",
		"cache (postgres): provisioners[", "db (postgres): provisioners[", // the index is where the platform listed it
		"template://hostile/postgres-shared (class shared); claim Failed",
		"template://hostile/postgres-shared (class shared); claim Bound",
		"Blocking: QuotaExceeded",
		"(dependency cache): Failed",
		"(its instance is shared from another namespace)",
		"Answered by the control plane",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("mallory's trace does not say %q:\n%s", want, out)
		}
	}
	// Her answer, as the control plane writes it.
	tr, err := whyask.Trace(ctx, tenantWatch(t), teamB, name, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(tr)
	for _, secret := range append([]string{teamA, neighbour.Name, quota.Name, "score-system"}, victims...) {
		if strings.Contains(out, secret) || strings.Contains(string(raw), secret) {
			t.Errorf("mallory's trace names %q:\n%s\n%s", secret, out, raw)
		}
	}
	var left scorev1b1.WorkloadTraceList
	if err := admin.List(ctx, &left, client.InNamespace(teamB)); err != nil || len(left.Items) != 0 {
		t.Errorf("requests left in team-b: %v %d", err, len(left.Items))
	}

	// team-a's Workloads, asked from team-b: none of that name there.
	for _, victim := range append([]string{neighbour.Name}, victims...) {
		_, err := whyask.Trace(ctx, tenantWatch(t), teamB, victim, 30*time.Second)
		if na := (*whyask.NotAnsweredError)(nil); !errors.As(err, &na) || na.Reason != scorev1b1.TraceReasonWorkloadNotFound {
			t.Errorf("asking for %s from team-b: %v", victim, err)
		}
	}
	// Where she has no role, she cannot ask.
	if _, err := whyask.Trace(ctx, tenantWatch(t), "score-system", "score-controllers", 30*time.Second); !apierrors.IsForbidden(err) {
		t.Errorf("asking in score-system: %v", err)
	}
	othersUntouched(t)
}

// sharedClass is the postgres class team-a shares with team-b.
func sharedClass(r *scorev1b1.Resource) { r.Class = ptrTo("shared") }

// tenantWatch is a client acting as mallory that can watch.
func tenantWatch(t *testing.T) client.WithWatch {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", malloryKubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(rest.CopyConfig(cfg), client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// malloryKubeconfig is the administrator's kubeconfig acting as mallory (impersonation), so
// that the API server judges every request by her rights.
func malloryKubeconfig(t *testing.T) string {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range kc.AuthInfos {
		user.Impersonate, user.ImpersonateGroups = mallory, []string{"system:authenticated"}
	}
	path := filepath.Join(t.TempDir(), "mallory.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// scorectl runs the scorectl binary (built once, scorectlAs) with a kubeconfig, and returns
// its output.
func scorectl(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	scorectlOnce.Do(func() { scorectlBin, scorectlErr = testenv.BuildCommand(state, "scorectl") })
	if scorectlErr != nil {
		t.Fatal(scorectlErr)
	}
	cmd := exec.Command(scorectlBin, append(args, "--kubeconfig", kubeconfig)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scorectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
