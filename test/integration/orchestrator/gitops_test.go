package orchestrator

import (
	"os"
	"strings"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	lua "github.com/yuin/gopher-lua"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// gitOpsJudges is what the GitOps tools say of a Workload: Argo CD's health (the shipped Lua
// check, run as Argo CD runs it: the object as the global obj, the returned table's status)
// and Flux's kstatus (status.Compute, what its health checks and `flux ... --wait` read).
func gitOpsJudges(t *testing.T, w *scorev1b1.Workload) (argo, argoMessage string, kstatus status.Status) {
	t.Helper()
	script, err := os.ReadFile("../../../config/argocd/workload-health.lua")
	if err != nil {
		t.Fatal(err)
	}
	w = w.DeepCopy()
	w.APIVersion, w.Kind = scorev1b1.GroupVersion.String(), "Workload"
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w)
	if err != nil {
		t.Fatal(err)
	}
	L := lua.NewState(lua.Options{SkipOpenLibs: false})
	defer L.Close()
	L.SetGlobal("obj", toLua(L, raw))
	if err := L.DoString(string(script)); err != nil {
		t.Fatalf("the health check fails: %v", err)
	}
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("the health check returns %v, not a table", L.Get(-1))
	}
	res, err := status.Compute(&unstructured.Unstructured{Object: raw})
	if err != nil {
		t.Fatal(err)
	}
	return hs.RawGetString("status").String(), hs.RawGetString("message").String(), res.Status
}

// toLua converts a JSON-like value as Argo CD hands objects to its Lua checks.
func toLua(L *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, e := range x {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, e := range x {
			t.Append(toLua(L, e))
		}
		return t
	case string:
		return lua.LString(x)
	case bool:
		return lua.LBool(x)
	case int64:
		return lua.LNumber(x)
	case float64:
		return lua.LNumber(x)
	case nil:
		return lua.LNil
	}
	return lua.LString("")
}

// GitOps tools judge a Workload right. Real Workload statuses, written by the
// orchestrator as a Workload goes through every reason: Argo CD's health check says Healthy
// when it is Ready, Progressing while it converges by itself, Degraded when it waits for a
// person; Flux's kstatus says Current, InProgress and Failed.
func TestArgoCDHealthAndKstatus(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := testenv.Namespace(t, env.Client)
	judge := func(t *testing.T, name string, reason scorev1b1.Reason, argo string, kstatus status.Status) {
		t.Helper()
		ready := metav1.ConditionFalse
		if reason == scorev1b1.ReasonSucceeded || reason == scorev1b1.ReasonRuntimeDegraded {
			ready = metav1.ConditionTrue
		}
		w := conditionIs(t, ns, name, scorev1b1.ConditionReady, ready, reason)
		gotArgo, message, gotK := gitOpsJudges(t, w)
		if gotArgo != argo || gotK != kstatus {
			t.Fatalf("%s: Argo CD says %s (%s), kstatus %s; want %s and %s", reason, gotArgo, message, gotK, argo, kstatus)
		}
		if !strings.Contains(message, testenv.Condition(w, scorev1b1.ConditionReady).Message) {
			t.Fatalf("Argo CD's message %q does not carry the Workload's", message)
		}
	}

	testenv.Create(t, env.Client, workload(ns, "web", testenv.WithResource("db", "postgres")))
	t.Run("a dependency being provisioned", func(t *testing.T) {
		judge(t, "web", scorev1b1.ReasonClaimPending, "Progressing", status.InProgressStatus)
	})
	claim := claimOf(t, get(t, ns, "web"), "db", "postgres")
	for _, reason := range []scorev1b1.Reason{scorev1b1.ReasonClaimFailed, scorev1b1.ReasonQuotaExceeded, scorev1b1.ReasonPermissionDenied, scorev1b1.ReasonPolicyViolation} {
		t.Run("a dependency failed: "+string(reason), func(t *testing.T) {
			setClaimStatus(t, claim, scorev1b1.ResourceClaimStatus{Phase: scorev1b1.ClaimPhaseFailed, Reason: reason, Message: "refused"})
			judge(t, "web", reason, "Degraded", status.FailedStatus)
		})
	}
	bind(t, claim, map[string]any{"host": "db"}, nil)
	t.Run("being deployed", func(t *testing.T) {
		planOf(t, ns, "web")
		judge(t, "web", scorev1b1.ReasonRuntimeProvisioning, "Progressing", status.InProgressStatus)
	})
	t.Run("ready", func(t *testing.T) {
		project(t, ns, "web", scorev1b1.PlanPhaseProjected, "")
		judge(t, "web", scorev1b1.ReasonSucceeded, "Healthy", status.CurrentStatus)
	})
	gen := get(t, ns, "web").Generation
	t.Run("an endpoint not reachable yet", func(t *testing.T) {
		expose(t, ns, "web", gen, []scorev1b1.Exposure{{URL: "https://web.example.com"}}, "LBPending")
		judge(t, "web", scorev1b1.ReasonNetworkUnavailable, "Progressing", status.InProgressStatus)
	})
	t.Run("ready with reduced capacity", func(t *testing.T) {
		expose(t, ns, "web", gen, []scorev1b1.Exposure{{URL: "https://web.example.com"}}, "Degraded", "Healthy")
		judge(t, "web", scorev1b1.ReasonRuntimeDegraded, "Healthy", status.CurrentStatus)
	})
	t.Run("a deployment refused", func(t *testing.T) {
		project(t, ns, "web", scorev1b1.PlanPhaseFailed, scorev1b1.ReasonPolicyViolation)
		judge(t, "web", scorev1b1.ReasonPolicyViolation, "Degraded", status.FailedStatus)
	})
	t.Run("an invalid specification", func(t *testing.T) {
		testenv.Create(t, env.Client, workload(ns, "invalid", testenv.WithVar("DB", "${resources.db.host}")))
		judge(t, "invalid", scorev1b1.ReasonSpecInvalid, "Degraded", status.FailedStatus)
	})
	t.Run("outputs to come", func(t *testing.T) {
		testenv.Create(t, env.Client, workload(ns, "waits", testenv.WithVar("DB", "${resources.db.port}"), testenv.WithResource("db", "redis")))
		bind(t, claimOf(t, get(t, ns, "waits"), "db", "redis"), map[string]any{"host": "db"}, nil)
		judge(t, "waits", scorev1b1.ReasonProjectionError, "Progressing", status.InProgressStatus)
	})
	t.Run("no runtime selected yet", func(t *testing.T) {
		testenv.Create(t, env.Client, workload(ns, "gpu", testenv.WithAnnotation(scorev1b1.AnnotationRequirements, `["tpu"]`)))
		judge(t, "gpu", scorev1b1.ReasonRuntimeSelecting, "Progressing", status.InProgressStatus)
	})
}

// The check docs/operations.md gives to paste is the shipped one.
func TestArgoCDHealthCheckInTheDocsIsTheShippedOne(t *testing.T) {
	script, err := os.ReadFile("../../../config/argocd/workload-health.lua")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := os.ReadFile("../../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	var indented strings.Builder
	for _, line := range strings.SplitAfter(string(script), "\n") {
		if strings.TrimSpace(line) != "" {
			indented.WriteString("    ")
		}
		indented.WriteString(line)
	}
	if !strings.Contains(string(docs), "resource.customizations.health.score.dev_Workload: |\n"+indented.String()) {
		t.Fatal("docs/operations.md does not carry config/argocd/workload-health.lua as it is")
	}
}

// The check's own rules, on objects no orchestrator has written yet.
func TestArgoCDHealthBeforeAStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    *scorev1b1.Workload
		want string
	}{
		{"no status", &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 1}}, "Progressing"},
		{"a change not processed yet", &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 2}, Status: scorev1b1.WorkloadStatus{ObservedGeneration: 1,
			Conditions: []metav1.Condition{{Type: scorev1b1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "The workload is ready."}}}}, "Progressing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, _, _ := gitOpsJudges(t, tc.w); got != tc.want {
				t.Fatalf("Argo CD says %s, want %s", got, tc.want)
			}
		})
	}
}
