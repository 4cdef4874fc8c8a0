package testenv

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DeploymentStatus is the status the deployment controller writes for d at its generation
// once ready of its replicas are available (0: not available), for a test to write in its
// place on an API server that runs no controller-manager.
func DeploymentStatus(d *appsv1.Deployment, ready int32) appsv1.DeploymentStatus {
	replicas := ptr.Deref(d.Spec.Replicas, 1)
	available, reason := corev1.ConditionTrue, "MinimumReplicasAvailable"
	if ready == 0 {
		available, reason = corev1.ConditionFalse, "MinimumReplicasUnavailable"
	}
	return appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: replicas, UpdatedReplicas: replicas,
		ReadyReplicas: ready, AvailableReplicas: ready, UnavailableReplicas: replicas - ready,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: available, Reason: reason},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}}}
}

// DeploymentOneStep plays the deployment controller taking the Deployment at key one step of
// progress: its pod created, not available yet (kstatus says "Available: 0/1" where it said
// "Replicas: 0/1"). Then the positive control: the Deployment's label drifted after the
// status is corrected by a pass that read the Deployment with that status (one object's watch
// delivers in order), so once it is corrected the controller that applies the Deployment has
// judged the step of progress. It returns the Deployment as it then is.
func DeploymentOneStep(t testing.TB, c client.Client, key client.ObjectKey, label string) *appsv1.Deployment {
	t.Helper()
	ctx := context.Background()
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, key, d); err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1}
	if err := c.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, d); err != nil {
		t.Fatal(err)
	}
	was := d.Labels[label]
	d.Labels[label] = "drifted"
	if err := c.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	Eventually(t, WaitTimeout, "the drifted label corrected", func() error {
		if err := c.Get(ctx, key, d); err != nil {
			return err
		}
		if d.Labels[label] != was {
			return fmt.Errorf("label %s=%s", label, d.Labels[label])
		}
		return nil
	})
	return d
}
