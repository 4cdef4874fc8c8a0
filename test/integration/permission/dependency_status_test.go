package permission

import (
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// The dependency-update rule keeps a Workload Ready while a dependency that was ready is
// provisioned again with its outputs still published, and it reads "was ready" from the
// Workload's own status.claims (internal/status/workloaddecision, WasReady). A tenant who could
// write that summary could have a dependency that is being provisioned for the first time
// counted as ready (workloadstatus: TestAForgedSummaryIsTrustedOnlyForAnUpdate). They cannot:
// the status is a subresource, which score-workload-editor does not grant, and what a write of
// the Workload itself carries in its status the API server drops. Every way the editor has of
// writing it, on a real API server with the installed roles, leaves the orchestrator's summary
// as it wrote it.
func TestEditorCannotWriteWhatTheDependencyRuleReads(t *testing.T) {
	env := testenv.StartForTest(t)
	ctx := context.Background()
	c := env.Client
	if _, err := devenv.Install(ctx, c, os.DirFS(testenv.RepoRoot())); err != nil {
		t.Fatal(err)
	}
	testenv.Create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: teamNamespace}}, userBinding("alice", "score-workload-editor"))
	w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: teamNamespace},
		Spec: scorev1b1.WorkloadSpec{Containers: map[string]scorev1b1.Container{"main": {Image: "nginx"}},
			Resources: map[string]scorev1b1.Resource{"db": {Type: "postgres"}}}}
	if err := actingAs(t, env, editor).Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	// The orchestrator's summary: the dependency is being provisioned, not ready.
	pending := scorev1b1.ClaimSummary{Key: "db", Phase: scorev1b1.ClaimPhaseBinding, Reason: scorev1b1.ReasonClaimPending, OutputsAvailable: true}
	w.Status.Claims = []scorev1b1.ClaimSummary{pending}
	if err := actingAs(t, env, orchestratorSA).Status().Update(ctx, w); err != nil {
		t.Fatal(err)
	}

	forged := func() *scorev1b1.Workload {
		f := &scorev1b1.Workload{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(w), f); err != nil {
			t.Fatal(err)
		}
		f.Status.Claims = []scorev1b1.ClaimSummary{{Key: "db", Phase: scorev1b1.ClaimPhaseBound, Reason: scorev1b1.ReasonSucceeded, OutputsAvailable: true}}
		return f
	}
	forgedStatus := []byte(`{"status":{"claims":[{"key":"db","phase":"Bound","reason":"Succeeded","outputsAvailable":true}]}}`)
	editorClient := actingAs(t, env, editor)
	for _, tc := range []struct {
		name      string
		write     func() error
		forbidden bool
	}{
		{"update the status subresource", func() error { return editorClient.Status().Update(ctx, forged()) }, true},
		{"merge-patch the status subresource", func() error {
			return editorClient.Status().Patch(ctx, forged(), client.RawPatch(types.MergePatchType, forgedStatus))
		}, true},
		{"JSON-patch the status subresource", func() error {
			return editorClient.Status().Patch(ctx, forged(), client.RawPatch(types.JSONPatchType,
				[]byte(`[{"op":"replace","path":"/status/claims/0/reason","value":"Succeeded"}]`)))
		}, true},
		{"update the Workload with a status", func() error { return editorClient.Update(ctx, forged()) }, false},
		{"merge-patch the Workload with a status", func() error {
			return editorClient.Patch(ctx, forged(), client.RawPatch(types.MergePatchType, forgedStatus))
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.write()
			if tc.forbidden != apierrors.IsForbidden(err) || (!tc.forbidden && err != nil) {
				t.Fatalf("forbidden=%v, got %v", tc.forbidden, err)
			}
			got := &scorev1b1.Workload{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
				t.Fatal(err)
			}
			if len(got.Status.Claims) != 1 || got.Status.Claims[0] != pending {
				t.Fatalf("status.claims is now %+v", got.Status.Claims)
			}
		})
	}
}
