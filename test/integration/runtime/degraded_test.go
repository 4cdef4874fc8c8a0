package runtime

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// A workload that was healthy and loses a replica but still serves is degraded, not
// provisioning: the exposure says Degraded (the mirror's RuntimeDegraded, Ready kept), and
// healthy again once the replica is back. No controller-manager runs here: the test writes
// the Deployment's status as it would.
func TestDegradedButServing(t *testing.T) {
	text := templateText(t)
	ns := setup(t, text)
	exp := newExposure(ns, "web", "u7")
	testenv.Create(t, env.Client, exp)
	p := newPlan(ns, "web", "u7", testenv.Digest(text), `{"replicas":2,"containers":{"main":{"image":"nginx"}}}`)
	testenv.Create(t, env.Client, p)
	dep := &appsv1.Deployment{}
	testenv.Eventually(t, 20*time.Second, "applied", func() error { return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, dep) })
	setAvailable := func(n int32) {
		t.Helper()
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
			t.Fatal(err)
		}
		available(t, ctx, dep, n)
	}
	condition := func(typ string) func() error {
		return func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(exp), exp); err != nil {
				return err
			}
			for _, other := range []string{"Healthy", "Degraded", "Provisioning"} {
				want := metav1.ConditionFalse
				if other == typ {
					want = metav1.ConditionTrue
				}
				if c := meta.FindStatusCondition(exp.Status.Conditions, other); c == nil || c.Status != want {
					return fmt.Errorf("%s: %+v", other, c)
				}
			}
			return nil
		}
	}
	testenv.Eventually(t, 20*time.Second, "provisioning before the replicas exist", condition("Provisioning"))
	setAvailable(2)
	testenv.Eventually(t, 20*time.Second, "healthy", condition("Healthy"))
	setAvailable(1)
	testenv.Eventually(t, 20*time.Second, "degraded with one replica of two", condition("Degraded"))
	setAvailable(2)
	testenv.Eventually(t, 20*time.Second, "healthy again", condition("Healthy"))
}
