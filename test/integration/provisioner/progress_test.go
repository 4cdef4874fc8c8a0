package provisioner

import (
	"fmt"
	"sync/atomic"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// progressRuns numbers the runs of TestClaimCreatedToBoundInTwoStatusWrites.
var progressRuns atomic.Int64

// Each step's status written once: a claim whose Deployment goes through a step of progress
// before it is available is written twice from creation to Bound — Binding, then Bound — not
// once more for each step of the Deployment's progress. The
// controller of heldNamespace holds progress for an hour, so the count does not depend on this
// machine's speed. No controller-manager runs here: the test writes the Deployment's status as
// kube-controller-manager would.
func TestClaimCreatedToBoundInTwoStatusWrites(t *testing.T) {
	// A Workload of its own per run (-count), in the held controller's one namespace: an
	// instance of its own.
	workload := fmt.Sprintf("progress-%d", progressRuns.Add(1))
	c := newClaim(heldNamespace, workload+"-db", workload, "db", "deployed-kv", "", scorev1b1.DeprovisionDelete)
	testenv.Create(t, env.Client, c)
	binding := waitClaim(t, c, "Binding on its Deployment", func(c *scorev1b1.ResourceClaim) bool {
		return c.Status.Phase == scorev1b1.ClaimPhaseBinding && len(c.Status.Resources) == 1 && c.Status.Resources[0].Kind == "Deployment"
	})
	key := client.ObjectKey{Namespace: heldNamespace, Name: binding.Status.Resources[0].Name}
	// A step of progress, and the positive control that the provisioner has judged it.
	d := testenv.DeploymentOneStep(t, env.Client, key, "app")

	// Available: the claim is Bound.
	d.Status = testenv.DeploymentStatus(d, 1)
	if err := env.Client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, c, scorev1b1.ClaimPhaseBound)

	n, _ := heldStatusWrites.Load(c.Name)
	writes := n.(*atomic.Int64).Load()
	t.Logf("claim status writes from creation to Bound: %d", writes)
	if writes != 2 {
		t.Errorf("%d claim status writes from creation to Bound, want 2: Binding, then Bound", writes)
	}
}
