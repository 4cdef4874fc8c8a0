package orchestrator

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/whyask"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// traceKeep is how long the orchestrator keeps an answered WorkloadTrace here (a minute in a
// cluster): the tests see its removal.
const traceKeep = 5 * time.Second

// editor binds a developer to score-workload-editor (the shipped user role) in ns, and only
// there, and returns a client acting as them.
func editor(t *testing.T, ns string) client.WithWatch {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config/rbac/users/workload-editor.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(raw, role); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	testenv.Create(t, env.Client, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dev-edits-workloads"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "dev"}}})
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "dev", Groups: []string{"system:authenticated"}}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A developer bound to score-workload-editor, who may not read the Orchestrator Config or the
// claims, asks why of a Workload whose database the platform shares from another namespace
// (scorectl why does so for them): the control plane answers with the profile, the backends,
// the provisioner and the claim's phase with the Workload's own sentence for it, and nothing of
// the namespace that shares it: not its name, its objects or the provisioner's words about
// them. The request is gone once read; one for a Workload that does not exist is answered so.
func TestATenantAsksWhy(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := testenv.Namespace(t, env.Client)
	dev := editor(t, ns)
	testenv.Create(t, env.Client, workload(ns, "orders", testenv.WithResource("db", "postgres")))
	w := conditionIs(t, ns, "orders", scorev1b1.ConditionClaimsReady, metav1.ConditionFalse, scorev1b1.ReasonClaimPending)
	claim := claimOf(t, w, "db", "postgres")
	// The provisioner's part: the instance lives in the namespace that shares it, with another
	// team's consumer.
	setClaimStatus(t, claim, scorev1b1.ResourceClaimStatus{Phase: scorev1b1.ClaimPhaseBinding, Provisioner: "template://test/postgres", InstanceNamespace: "platform-db",
		Message:   "Waiting for StatefulSet platform-db/pg-main-0a1b, which team-x/billing consumes too.",
		Resources: []scorev1b1.AppliedObject{{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "platform-db", Name: "pg-main-0a1b", Health: "InProgress", Message: "Ready: 0/1"}}})
	seenByOrchestrator(t, claim, func(c *scorev1b1.ResourceClaim) error {
		if c.Status.InstanceNamespace == "" {
			return errors.New("not provisioned yet")
		}
		return nil
	})

	// The control: the developer may read neither the config nor the claim.
	if err := dev.Get(ctx, client.ObjectKey{Namespace: "score-system", Name: "orchestrator-config"}, &corev1.ConfigMap{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the developer reads the config: %v", err)
	}
	if err := dev.Get(ctx, client.ObjectKeyFromObject(claim), &scorev1b1.ResourceClaim{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the developer reads the claim: %v", err)
	}

	start := time.Now()
	tr, err := whyask.Trace(ctx, dev, ns, "orders", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(tr)
	t.Logf("answered in %s (created, answered, deleted), the trace %d bytes", time.Since(start).Round(time.Millisecond), len(raw))
	if tr.Profile.Name != "web-service" || tr.Profile.ChosenBy != "default" || len(tr.Backends) != 2 || tr.Backends[0].Name != "k8s-web" || tr.Backends[0].Verdict != scorev1b1.TraceChosen ||
		tr.Backends[1] != (scorev1b1.TraceCandidate{Name: "k8s-web-gpu", Verdict: scorev1b1.TraceEligible, Why: "rank 2"}) {
		t.Errorf("the decisions: %s", raw)
	}
	if len(tr.Dependencies) != 1 || tr.Dependencies[0] != (scorev1b1.TraceDependency{Key: "db", Type: "postgres", Provisioner: "provisioners[0] template://test/postgres", Claim: "Binding"}) {
		t.Errorf("the dependency: %+v", tr.Dependencies)
	}
	var lines []string
	for _, b := range tr.InTheWay {
		lines = append(lines, b.What+": "+b.Says)
	}
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ResourceClaim "+ns+"/"+claim.Name+" (dependency db): Binding — ") ||
		!strings.HasSuffix(lines[0], "(its instance is shared from another namespace)") || !strings.HasPrefix(lines[1], "1 object(s) outside namespace "+ns) {
		t.Errorf("in the way:\n%s", strings.Join(lines, "\n"))
	}
	for _, other := range []string{"platform-db", "pg-main", "team-x", "billing", "score-system"} {
		if strings.Contains(string(raw), other) {
			t.Errorf("the answer names %q: %s", other, raw)
		}
	}
	var left scorev1b1.WorkloadTraceList
	if err := env.Client.List(ctx, &left, client.InNamespace(ns)); err != nil || len(left.Items) != 0 {
		t.Errorf("the request is left: %v %+v", err, left.Items)
	}

	_, err = whyask.Trace(ctx, dev, ns, "nothing", 30*time.Second)
	if na := (*whyask.NotAnsweredError)(nil); !errors.As(err, &na) || na.Reason != scorev1b1.TraceReasonWorkloadNotFound {
		t.Errorf("a Workload that does not exist: %v", err)
	}
}

// A namespace that asks for twelve traces at once has eight answered, each once, and the other
// four removed unanswered; the answered ones are removed once kept for their asker (traceKeep
// here). No request is left.
func TestWorkloadTracesAreAnsweredOnceAndBounded(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := testenv.Namespace(t, env.Client)
	dev := editor(t, ns)
	testenv.Create(t, env.Client, workload(ns, "orders"))
	conditionIs(t, ns, "orders", scorev1b1.ConditionInputsValid, metav1.ConditionTrue, scorev1b1.ReasonSucceeded)

	watcher, err := client.NewWithWatch(env.Config, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := watcher.Watch(ctx, &scorev1b1.WorkloadTraceList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	const asked = 12
	for range asked {
		testenv.Create(t, dev, &scorev1b1.WorkloadTrace{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "orders-"}, Spec: scorev1b1.WorkloadTraceSpec{Workload: "orders"}})
	}

	// Every event until every request is gone.
	writes, answeredAt, removedAt := map[string]int{}, map[string]time.Time{}, map[string]time.Time{}
	deadline := time.After(traceKeep + 30*time.Second)
	for len(removedAt) < asked {
		select {
		case <-deadline:
			t.Fatalf("%d of %d removed; answered %v", len(removedAt), asked, answeredAt)
		case e := <-w.ResultChan():
			r, ok := e.Object.(*scorev1b1.WorkloadTrace)
			if !ok {
				t.Fatalf("event %v %T", e.Type, e.Object)
			}
			switch e.Type {
			case watch.Modified:
				writes[r.Name]++
				if c := meta.FindStatusCondition(r.Status.Conditions, scorev1b1.TraceConditionAnswered); c != nil && c.Status == metav1.ConditionTrue && r.Status.Trace != nil {
					answeredAt[r.Name] = time.Now()
				}
			case watch.Deleted:
				removedAt[r.Name] = time.Now()
			}
		}
	}
	if len(answeredAt) != scorev1b1.MaxWorkloadTraces {
		t.Errorf("%d answered, want %d", len(answeredAt), scorev1b1.MaxWorkloadTraces)
	}
	for name, n := range writes {
		if _, ok := answeredAt[name]; !ok || n != 1 {
			t.Errorf("%s written %d times, answered %v", name, n, ok)
		}
	}
	for name, at := range answeredAt {
		if kept := removedAt[name].Sub(at); kept < traceKeep-time.Second {
			t.Errorf("%s removed %s after its answer, want %s", name, kept, traceKeep)
		}
	}
}
