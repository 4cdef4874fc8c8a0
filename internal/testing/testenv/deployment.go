package testenv

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
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
