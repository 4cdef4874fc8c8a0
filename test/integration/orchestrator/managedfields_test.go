package orchestrator

import (
	"encoding/json"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/statuspatch"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// The claims, plan and exposure are written by our controllers only. The orchestrator's
// writes of them (a new spec, a reconcile request handed on) reset their managed fields, and
// the API server records none from then on: the status writes of the provisioner and the
// runtime that follow store, check and send objects a third to a half smaller. The Workload,
// which users apply, keeps its own.
func TestOwnKindsLoseTheirManagedFieldsOnTheOrchestratorsWrites(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := testenv.Namespace(t, env.Client)
	testenv.Create(t, env.Client, workload(ns, "ledger", testenv.WithResource("db", "postgres"),
		testenv.WithVar("DB_HOST", "${resources.db.host}")))
	w := conditionIs(t, ns, "ledger", scorev1b1.ConditionClaimsReady, metav1.ConditionFalse, scorev1b1.ReasonClaimPending)
	claim := claimOf(t, w, "db", "postgres")
	bind(t, claim, map[string]any{"host": "ledger-db.svc"}, nil)
	planOf(t, ns, "ledger")
	project(t, ns, "ledger", scorev1b1.PlanPhaseProjected, "")
	expose(t, ns, "ledger", w.Generation, []scorev1b1.Exposure{{URL: "http://ledger.ns.svc.cluster.local:80", Scope: scorev1b1.ScopeClusterLocal, Reachable: ptr.To(true)}}, "Healthy")
	conditionIs(t, ns, "ledger", scorev1b1.ConditionReady, metav1.ConditionTrue, scorev1b1.ReasonSucceeded)

	objects := func() []client.Object {
		return []client.Object{
			&scorev1b1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claim.Name}},
			&scorev1b1.WorkloadPlan{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ledger"}},
			&scorev1b1.WorkloadExposure{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ledger"}},
		}
	}
	sizes := map[string]int{}
	for _, o := range objects() {
		read(t, o)
		if len(o.GetManagedFields()) == 0 {
			t.Fatalf("%T %s: no managed fields as created and written: the test proves nothing", o, o.GetName())
		}
		sizes[fmt.Sprintf("%T", o)] = size(t, o)
	}

	// A new spec rewrites the plan and the exposure; a reconcile request is handed on to the
	// claim and the plan.
	changeSpec(t, ns, "ledger")
	requestReconcile(t, ns, "ledger")
	for _, o := range objects() {
		eventually(t, fmt.Sprintf("%T %s without managed fields", o, o.GetName()), func() error {
			read(t, o)
			if n := len(o.GetManagedFields()); n > 0 {
				return fmt.Errorf("%d managed-fields entries", n)
			}
			return nil
		})
		t.Logf("%T: %d bytes as created and written, %d once rewritten", o, sizes[fmt.Sprintf("%T", o)], size(t, o))
	}

	// The status writes of the provisioner and the runtime that follow (statuspatch's merge
	// patches of the status subresource) record none.
	for _, o := range objects() {
		read(t, o)
		patch := statuspatch.Begin(o)
		switch o := o.(type) {
		case *scorev1b1.ResourceClaim:
			o.Status.Message = "Observed again."
		case *scorev1b1.WorkloadPlan:
			o.Status.Message = "Observed again."
		case *scorev1b1.WorkloadExposure:
			o.Status.ObservedWorkloadGeneration++
		}
		if wrote, err := patch.Finish(ctx, env.Client, nil); !wrote || err != nil {
			t.Fatalf("%T status write: wrote %v, %v", o, wrote, err)
		}
		read(t, o)
		if n := len(o.GetManagedFields()); n > 0 {
			t.Errorf("%T %s: a status write recorded %d managed-fields entries again", o, o.GetName(), n)
		}
	}

	if wl := get(t, ns, "ledger"); len(wl.ManagedFields) == 0 {
		t.Error("the Workload lost its managed fields: its appliers' ownership with them")
	}
}

// read reads o from the API server, managed fields included.
func read(t *testing.T, o client.Object) {
	t.Helper()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
		t.Fatal(err)
	}
}

// size is o's size as JSON.
func size(t *testing.T, o client.Object) int {
	t.Helper()
	raw, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return len(raw)
}
