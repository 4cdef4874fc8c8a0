package plan

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// publishExposure writes the Workload's endpoints into its WorkloadExposure's status: each
// applied Service port as http://<service>.<namespace>.svc.cluster.local:<port>
// (ClusterLocal), reachable when an EndpointSlice has a ready endpoint; and the runtime's
// condition (Healthy or Provisioning) for the orchestrator's mirror to normalise.
func (r *Reconciler) publishExposure(ctx context.Context, p *scorev1b1.WorkloadPlan, applied []*unstructured.Unstructured, healthy bool) error {
	e := &scorev1b1.WorkloadExposure{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.WorkloadRef.Name}, e); err != nil {
		return client.IgnoreNotFound(err) // the orchestrator registers it; its creation brings the plan back
	}
	if e.Spec.WorkloadRef.UID != p.Spec.WorkloadRef.UID {
		return nil
	}
	var exposures []scorev1b1.Exposure
	for _, o := range applied {
		if o.GetKind() != "Service" || o.GetAPIVersion() != "v1" {
			continue
		}
		svc := &corev1.Service{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, svc); err != nil {
			return fmt.Errorf("reading Service %s: %w", o.GetName(), err)
		}
		reachable, err := r.reachable(ctx, svc)
		if err != nil {
			return err
		}
		for _, port := range svc.Spec.Ports {
			scheme, hint := "http", "HTTP"
			if port.Protocol == corev1.ProtocolUDP {
				scheme, hint = "udp", "OTHER"
			}
			exposures = append(exposures, scorev1b1.Exposure{
				URL:   fmt.Sprintf("%s://%s.%s.svc.cluster.local:%d", scheme, svc.Name, svc.Namespace, port.Port),
				Scope: scorev1b1.ScopeClusterLocal, SchemeHint: hint, Reachable: &reachable,
			})
		}
	}
	next := e.Status.DeepCopy()
	next.ObservedWorkloadGeneration = p.Spec.ObservedWorkloadGeneration
	next.Exposures = exposures
	healthyStatus, provisioning := metav1.ConditionFalse, metav1.ConditionTrue
	if healthy {
		healthyStatus, provisioning = metav1.ConditionTrue, metav1.ConditionFalse
	}
	meta.SetStatusCondition(&next.Conditions, metav1.Condition{Type: "Healthy", Status: healthyStatus, Reason: "Health", Message: "Every applied object is healthy."})
	meta.SetStatusCondition(&next.Conditions, metav1.Condition{Type: "Provisioning", Status: provisioning, Reason: "Health", Message: "Applied objects are becoming healthy."})
	if equality.Semantic.DeepEqual(&e.Status, next) {
		return nil
	}
	patched := e.DeepCopy()
	patched.Status = *next
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, patched, client.MergeFrom(e)))
}

// reachable reports whether a Service has at least one ready endpoint.
func (r *Reconciler) reachable(ctx context.Context, svc *corev1.Service) (bool, error) {
	var slices discoveryv1.EndpointSliceList
	if err := r.Client.List(ctx, &slices, client.InNamespace(svc.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: svc.Name}); err != nil {
		return false, err
	}
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				return true, nil
			}
		}
	}
	return false, nil
}
