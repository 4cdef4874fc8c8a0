package provisioner

import (
	"fmt"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
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
	d := &appsv1.Deployment{}
	key := client.ObjectKey{Namespace: heldNamespace, Name: binding.Status.Resources[0].Name}
	if err := env.Client.Get(ctx, key, d); err != nil {
		t.Fatal(err)
	}

	// A step of progress: the Deployment's pod created, not available yet. kstatus says
	// "Available: 0/1" where it said "Replicas: 0/1".
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1}
	if err := env.Client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	// The positive control: a label drifted after the status is corrected by a pass that read
	// the Deployment with that status (one object's watch delivers in order), so once it is
	// corrected the provisioner has judged the step of progress.
	if err := env.Client.Get(ctx, key, d); err != nil {
		t.Fatal(err)
	}
	app := d.Labels["app"]
	d.Labels["app"] = "drifted"
	if err := env.Client.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, testenv.WaitTimeout, "the drifted label corrected", func() error {
		if err := env.Client.Get(ctx, key, d); err != nil {
			return err
		}
		if d.Labels["app"] != app {
			return fmt.Errorf("label app=%s", d.Labels["app"])
		}
		return nil
	})

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
