package runtime

import (
	"fmt"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// progressTemplate is a Deployment with a label of the template's own, for the test to drift.
const progressTemplate = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Workload.Name }}
  labels: {tier: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: progress}}
  template:
    metadata: {labels: {app: progress}}
    spec: {containers: [{name: main, image: nginx}]}
`

// progressRuns numbers the runs of TestPlanCreatedToHealthyInTwoStatusWrites.
var progressRuns atomic.Int64

// Each step's status written once: a plan whose Deployment goes through a step of progress
// before it is available is written twice from creation to healthy — Planning, then
// Projected — not once more for each step of the Deployment's progress. The
// runtime of heldNamespace holds progress for an hour, so the count does not depend on this
// machine's speed. No controller-manager runs here: the test writes the Deployment's status as
// kube-controller-manager would.
func TestPlanCreatedToHealthyInTwoStatusWrites(t *testing.T) {
	// The held runtime's one namespace: the template once, a plan of its own per run (-count).
	if err := env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: heldNamespace, Name: "templates"},
		Data: map[string]string{"web.yaml": progressTemplate}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	run := progressRuns.Add(1)
	p := newPlan(heldNamespace, fmt.Sprintf("progress-%d", run), fmt.Sprintf("u-progress-%d", run), testenv.Digest(progressTemplate), `{}`)
	testenv.Create(t, env.Client, p)
	testenv.Eventually(t, testenv.WaitTimeout, "the plan Planning on its Deployment", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		if p.Status.Phase != scorev1b1.PlanPhasePlanning || len(p.Status.Objects) != 1 {
			return fmt.Errorf("status %s %+v", p.Status.Phase, p.Status.Objects)
		}
		return nil
	})
	key := client.ObjectKey{Namespace: heldNamespace, Name: p.Name}
	// A step of progress, and the positive control that the runtime has judged it.
	d := testenv.DeploymentOneStep(t, env.Client, key, "tier")

	// Available: the plan is Projected.
	available(t, ctx, d, 1)
	testenv.Eventually(t, testenv.WaitTimeout, "the plan Projected", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		if p.Status.Phase != scorev1b1.PlanPhaseProjected {
			return fmt.Errorf("status %s %+v", p.Status.Phase, p.Status.Objects)
		}
		return nil
	})

	n, _ := heldStatusWrites.Load(p.Name)
	writes := n.(*atomic.Int64).Load()
	t.Logf("plan status writes from creation to healthy: %d", writes)
	if writes != 2 {
		t.Errorf("%d plan status writes from creation to healthy, want 2: Planning, then Projected", writes)
	}
}
