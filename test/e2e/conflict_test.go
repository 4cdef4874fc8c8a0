package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// Two Workloads whose templates render the same object: the stateful-service "db" renders
// its pods' headless Service "db-pods", and a web service named "db-pods" renders a Service
// of that name too. The first keeps its object and stays Ready, and is told by an event; the
// second is refused, applies nothing, and its status says why.
func TestTwoWorkloadsRenderingOneObject(t *testing.T) {
	ns := "e2e-conflict"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	port := &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"http": {Port: 80, TargetPort: ptr.To(int32(8080))}}}
	first := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db", Annotations: map[string]string{scorev1b1.AnnotationProfile: "stateful-service"}},
		Spec: scorev1b1.WorkloadSpec{Containers: map[string]scorev1b1.Container{"main": {Image: "postgres:17"}}, Service: port.DeepCopy()}}
	if err := c.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	waitWorkload(t, client.ObjectKeyFromObject(first), "the first Ready", nil)
	if err := c.Get(ctx, client.ObjectKeyFromObject(first), first); err != nil {
		t.Fatal(err)
	}
	contested := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-pods"}, contested); err != nil {
		t.Fatalf("the stateful template renders the Service db-pods: %v", err)
	}

	second := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-pods"},
		Spec: scorev1b1.WorkloadSpec{Containers: map[string]scorev1b1.Container{"main": {Image: "nginx:1.27"}}, Service: port.DeepCopy()}}
	if err := c.Create(ctx, second); err != nil {
		t.Fatal(err)
	}

	t.Run("the second is refused and says why", func(t *testing.T) {
		testenv.Eventually(t, time.Minute, "the second refused", func() error {
			w := &scorev1b1.Workload{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(second), w); err != nil {
				return err
			}
			for _, typ := range []string{scorev1b1.ConditionRuntimeReady, scorev1b1.ConditionReady} {
				cond := meta.FindStatusCondition(w.Status.Conditions, typ)
				if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != string(scorev1b1.ReasonPermissionDenied) ||
					cond.Message != "Another workload owns an object this workload would create; it is not taken over." {
					return fmt.Errorf("%s: %+v", typ, cond)
				}
			}
			return nil
		})
		p := &scorev1b1.WorkloadPlan{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(second), p); err != nil {
			t.Fatal(err)
		}
		applied := meta.FindStatusCondition(p.Status.Conditions, scorev1b1.PlanConditionApplied)
		if p.Status.Phase != scorev1b1.PlanPhaseFailed || p.Status.Message != "Service db-pods exists and belongs to workload db" ||
			applied == nil || applied.Reason != scorev1b1.PlanReasonObjectConflict {
			t.Fatalf("the plan: %s %q %+v", p.Status.Phase, p.Status.Message, applied)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(second), &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			t.Fatalf("nothing of a refused render is applied: %v", err)
		}
	})

	t.Run("the first keeps its object, stays Ready and is told", func(t *testing.T) {
		testenv.Eventually(t, 30*time.Second, "a warning on the first", func() error {
			var events eventsv1.EventList
			if err := c.List(ctx, &events, client.InNamespace(ns)); err != nil {
				return err
			}
			for _, e := range events.Items {
				if e.Regarding.Kind == "Workload" && e.Regarding.Name == "db" && e.Reason == scorev1b1.PlanReasonObjectConflict && e.Type == corev1.EventTypeWarning &&
					strings.Contains(e.Note, `"db-pods"`) {
					return nil
				}
			}
			return fmt.Errorf("no %s event on the first among %d", scorev1b1.PlanReasonObjectConflict, len(events.Items))
		})
		// The positive control: the second, changed, is rendered and refused again, a pass of
		// the runtime over the contested object after the first refusal.
		update(t, client.ObjectKeyFromObject(second), func(w *scorev1b1.Workload) {
			w.Spec.Containers["main"] = scorev1b1.Container{Image: "nginx:1.27", Variables: map[string]string{"CHANGED": "after the refusal"}}
		})
		testenv.Eventually(t, time.Minute, "the changed second refused again", func() error {
			p := &scorev1b1.WorkloadPlan{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(second), p); err != nil {
				return err
			}
			if p.Status.ObservedGeneration != p.Generation || p.Generation < 2 {
				return fmt.Errorf("the plan's generation %d observed: %d", p.Generation, p.Status.ObservedGeneration)
			}
			if applied := meta.FindStatusCondition(p.Status.Conditions, scorev1b1.PlanConditionApplied); p.Status.Phase != scorev1b1.PlanPhaseFailed || applied == nil || applied.Reason != scorev1b1.PlanReasonObjectConflict {
				t.Fatalf("the changed second's plan: %s %q %+v", p.Status.Phase, p.Status.Message, applied)
			}
			return nil
		})
		if err := c.Get(ctx, client.ObjectKeyFromObject(second), &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			t.Fatalf("nothing of a refused render is applied: %v", err)
		}
		now := &corev1.Service{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(contested), now); err != nil {
			t.Fatal(err)
		}
		if now.UID != contested.UID || now.ResourceVersion != contested.ResourceVersion || now.Annotations[scorev1b1.AnnotationWorkloadUID] != string(first.UID) {
			t.Fatalf("the first's Service was touched: rv %s→%s, owner %s", contested.ResourceVersion, now.ResourceVersion, now.Annotations[scorev1b1.AnnotationWorkloadUID])
		}
		w := &scorev1b1.Workload{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(first), w); err != nil {
			t.Fatal(err)
		}
		if r := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue || r.ObservedGeneration != w.Generation {
			t.Fatalf("the first is no longer Ready: %+v", r)
		}
	})

	t.Run("once the first is gone, the second proceeds", func(t *testing.T) {
		if err := c.Delete(ctx, first); err != nil {
			t.Fatal(err)
		}
		waitWorkload(t, client.ObjectKeyFromObject(second), "the second Ready", nil)
	})
}
