package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// WaitTimeout is how long the waits of this package give the controllers to answer on the
// API server of Start: far more than any answer takes, so that only a missing one fails.
const WaitTimeout = 30 * time.Second

// WaitForCondition waits until the Workload's condition typ has the status and reason for
// the Workload's current generation, and returns the Workload as it then was.
func WaitForCondition(t testing.TB, c client.Client, key client.ObjectKey, typ string, status metav1.ConditionStatus, reason scorev1b1.Reason) *scorev1b1.Workload {
	t.Helper()
	w := &scorev1b1.Workload{}
	Eventually(t, WaitTimeout, fmt.Sprintf("%s %s=%s/%s", key, typ, status, reason), func() error {
		if err := c.Get(context.Background(), key, w); err != nil {
			return err
		}
		cond := Condition(w, typ)
		if cond.Status != status || cond.Reason != string(reason) || cond.ObservedGeneration != w.Generation {
			return fmt.Errorf("%s is %s/%s (generation %d of %d): %s; conditions %+v", typ, cond.Status, cond.Reason, cond.ObservedGeneration, w.Generation, cond.Message, w.Status.Conditions)
		}
		return nil
	})
	return w
}

// WaitGone waits until obj, by its namespace and name, no longer exists.
func WaitGone(t testing.TB, c client.Client, obj client.Object) {
	t.Helper()
	Eventually(t, WaitTimeout, fmt.Sprintf("%T %s gone", obj, obj.GetName()), func() error {
		switch err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object)); {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		return fmt.Errorf("still there")
	})
}

// ReadyThroughout reads a watch of Workloads from the version from up to the version to, and
// fails the test for each Workload it delivers whose Ready is not True ("Ready left True while
// " and while), and fatally when the watch does not deliver the version to in WaitTimeout. It
// returns what Ready said at each version it read, in order, for the test's log.
func ReadyThroughout(t testing.TB, workloads watch.Interface, from, to, while string) []string {
	t.Helper()
	var seen []string
	for rv := from; rv != to; {
		select {
		case ev := <-workloads.ResultChan():
			got, ok := ev.Object.(*scorev1b1.Workload)
			if !ok {
				continue
			}
			rv = got.ResourceVersion
			r := meta.FindStatusCondition(got.Status.Conditions, scorev1b1.ConditionReady)
			seen = append(seen, fmt.Sprintf("%s/%s %q", r.Status, r.Reason, r.Message))
			if r.Status != metav1.ConditionTrue {
				t.Errorf("Ready left True while %s: %s/%s %q", while, r.Status, r.Reason, r.Message)
			}
		case <-time.After(WaitTimeout):
			t.Fatalf("the watch did not deliver version %s; it saw %v", to, seen)
		}
	}
	return seen
}

// RequestReconcile asks the orchestrator to process the Workload ns/name again, as scorectl
// reconcile does (a new score.dev/reconcile-requested-at, by a merge patch), and waits for its
// answer: the request echoed in the Workload's status.
func RequestReconcile(t testing.TB, c client.Client, ns, name string) {
	t.Helper()
	w := &scorev1b1.Workload{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
		t.Fatal(err)
	}
	requested := time.Now().UTC().Format(time.RFC3339Nano)
	patch := client.MergeFrom(w.DeepCopy())
	metav1.SetMetaDataAnnotation(&w.ObjectMeta, scorev1b1.AnnotationReconcileRequestedAt, requested)
	if err := c.Patch(context.Background(), w, patch); err != nil {
		t.Fatal(err)
	}
	Eventually(t, time.Minute, "the orchestrator's answer to the reconcile request", func() error {
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
			return err
		}
		if w.Status.LastHandledReconcileAt != requested {
			return fmt.Errorf("lastHandledReconcileAt %q", w.Status.LastHandledReconcileAt)
		}
		return nil
	})
}

// WaitClaimPhase waits until the provisioner has answered the claim's current generation with
// the phase, and returns the claim as it then was.
func WaitClaimPhase(t testing.TB, c client.Client, claim *scorev1b1.ResourceClaim, phase scorev1b1.ClaimPhase) *scorev1b1.ResourceClaim {
	t.Helper()
	return WaitClaim(t, c, claim, string(phase), func(out *scorev1b1.ResourceClaim) bool {
		return out.Status.Phase == phase && out.Status.ObservedGeneration == out.Generation
	})
}

// WaitClaim waits until the claim, as read, is as ok wants it (what says how, in the wait's
// failure), and returns it.
func WaitClaim(t testing.TB, c client.Client, claim *scorev1b1.ResourceClaim, what string, ok func(*scorev1b1.ResourceClaim) bool) *scorev1b1.ResourceClaim {
	t.Helper()
	out := &scorev1b1.ResourceClaim{}
	Eventually(t, WaitTimeout, fmt.Sprintf("claim %s %s", claim.Name, what), func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(claim), out); err != nil {
			return err
		}
		if !ok(out) {
			return fmt.Errorf("%s (%s) for generation %d of %d", out.Status.Phase, out.Status.Message, out.Status.ObservedGeneration, out.Generation)
		}
		return nil
	})
	return out
}
