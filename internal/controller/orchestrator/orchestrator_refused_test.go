package orchestrator

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/scheme"
)

// A plan the API server refuses as too large ("Request entity too large") is not retried with
// backoff, which would go on for ever with the Workload showing no condition at all. The
// refusal lasts until the Workload changes, so it is the Workload's SpecInvalid, said once,
// and not retried.
func TestAPlanRefusedAsTooLargeIsReported(t *testing.T) {
	store := sampleConfig(t)
	w := &scorev1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", UID: "w-uid", Generation: 1},
		Spec:       scorev1b1.WorkloadSpec{Containers: map[string]scorev1b1.Container{"main": {Image: "nginx"}}},
	}
	c := withWorkloadIndex(fake.NewClientBuilder().WithScheme(scheme.New())).WithObjects(w).WithStatusSubresource(w).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*scorev1b1.WorkloadPlan); ok {
				return apierrors.NewRequestEntityTooLargeError("limit is 3145728")
			}
			return c.Create(ctx, obj, opts...)
		}}).Build()
	r := &Reconciler{Client: c, APIReader: c, Config: store, Recorder: events.NewFakeRecorder(100)}
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)})
	if err != nil || res.RequeueAfter != 0 {
		t.Fatalf("a refusal that lasts until the Workload changes is not retried: %v, %+v", err, res)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	inputs := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionInputsValid)
	if inputs == nil || inputs.Status != metav1.ConditionFalse || inputs.Reason != string(scorev1b1.ReasonSpecInvalid) {
		t.Fatalf("InputsValid: %+v", inputs)
	}
	t.Log(inputs.Message)
}
