package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/clusters/members"
	"github.com/score-orchestrator/score-orchestrator/internal/exposure"
)

// publishExposure writes the Workload's endpoints into its WorkloadExposure's status, as
// the exposure rules derive them from what was applied (route and Ingress hosts, load
// balancer addresses, cluster DNS names), and the runtime's conditions (Healthy or
// Provisioning; LBPending and IngressPending while the platform has not given an address)
// for the orchestrator's mirror to normalise.
func (r *Reconciler) publishExposure(ctx context.Context, p *scorev1b1.WorkloadPlan, t members.Target, applied []*unstructured.Unstructured, state runtimeState) error {
	e := &scorev1b1.WorkloadExposure{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.WorkloadRef.Name}, e); err != nil {
		return client.IgnoreNotFound(err) // the orchestrator registers it; its creation brings the plan back
	}
	if e.Spec.WorkloadRef.UID != p.Spec.WorkloadRef.UID {
		return nil
	}
	provisioned, err := r.provisionedRoutes(ctx, p)
	if err != nil {
		return err
	}
	in := exposure.Input{Objects: applied, Provisioned: provisioned, Gateways: r.gateways(ctx, exposure.GatewayKeys(append(applied, provisioned...)))}
	var readErr error
	in.Reachable = func(name string) bool {
		reachable := r.reachable
		if t.Cluster != "" {
			reachable = func(ctx context.Context, namespace, service string) (bool, error) {
				return reachableOn(ctx, t, namespace, service)
			}
		}
		ok, err := reachable(ctx, p.Namespace, name)
		readErr = errors.Join(readErr, err)
		return ok
	}
	res := exposure.Compute(in)
	if readErr != nil {
		return readErr
	}
	next := e.Status.DeepCopy()
	next.ObservedWorkloadGeneration = p.Spec.ObservedWorkloadGeneration
	next.Exposures = res.Exposures
	for typ, on := range map[string]bool{scorev1b1.ExposureConditionHealthy: state == runtimeHealthy, scorev1b1.ExposureConditionProvisioning: state == runtimeProvisioning, scorev1b1.ExposureConditionDegraded: state == runtimeDegraded} {
		status := metav1.ConditionFalse
		if on {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&next.Conditions, metav1.Condition{Type: typ, Status: status, Reason: "Health", Message: runtimeMessages[typ]})
	}
	for _, typ := range []string{scorev1b1.ExposureConditionLBPending, scorev1b1.ExposureConditionIngressPending} {
		cond := metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: "Addressed", Message: "Nothing waits for an address."}
		if msg, ok := res.Pending[typ]; ok {
			cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, "Waiting", msg
		}
		meta.SetStatusCondition(&next.Conditions, cond)
	}
	if equality.Semantic.DeepEqual(&e.Status, next) {
		return nil
	}
	patched := e.DeepCopy()
	patched.Status = *next
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, patched, client.MergeFrom(e)))
}

// runtimeState is what the applied objects' health amounts to.
type runtimeState int

const (
	runtimeProvisioning runtimeState = iota
	runtimeHealthy
	runtimeDegraded
)

// runtimeMessages describe the runtime conditions the exposure carries.
var runtimeMessages = map[string]string{
	scorev1b1.ExposureConditionHealthy:      "Every applied object is healthy.",
	scorev1b1.ExposureConditionProvisioning: "Applied objects are becoming healthy.",
	scorev1b1.ExposureConditionDegraded:     "The workload serves, but not every applied object is healthy.",
}

// routeKinds are the kinds of the routes a dependency may provision for its Workload.
var routeKinds = []schema.GroupVersionKind{
	{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
}

// provisionedRoutes are the HTTPRoutes and Ingresses the plan's claims provisioned (labelled
// with their instances): a Workload's route resource is its public URL. Each kind is watched,
// so a gateway accepting a route brings the plan back; a kind the cluster does not serve has
// none.
func (r *Reconciler) provisionedRoutes(ctx context.Context, p *scorev1b1.WorkloadPlan) ([]*unstructured.Unstructured, error) {
	var instances []string
	for _, c := range p.Spec.Claims {
		if c.Instance != "" {
			instances = append(instances, c.Instance)
		}
	}
	if len(instances) == 0 {
		return nil, nil
	}
	selector, err := labels.NewRequirement(scorev1b1.LabelInstance, selection.In, instances)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, gvk := range routeKinds {
		if _, err := r.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return nil, err
		}
		r.routes.Ensure(ctx, gvk)
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.routes.List(ctx, r.Client, list, client.InNamespace(p.Namespace), client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*selector)}); err != nil {
			return nil, fmt.Errorf("listing the routes of the plan's dependencies: %w", err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// gateways reads the Gateways applied HTTPRoutes attach to, for their listeners' protocols.
// A Gateway that cannot be read (absent, or Gateway API not installed) only means the route
// is published as http.
func (r *Reconciler) gateways(ctx context.Context, keys []string) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, key := range keys {
		ns, name, _ := strings.Cut(key, "/")
		gw := &unstructured.Unstructured{}
		gw.SetGroupVersionKind(schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "Gateway"})
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, gw); err == nil {
			out[key] = gw
		}
	}
	return out
}

// reachable reports whether a Service has at least one ready endpoint.
func (r *Reconciler) reachable(ctx context.Context, namespace, service string) (bool, error) {
	var slices discoveryv1.EndpointSliceList
	if err := r.Client.List(ctx, &slices, client.InNamespace(namespace), client.MatchingLabels{discoveryv1.LabelServiceName: service}); err != nil {
		return false, err
	}
	return anyReady(slices.Items), nil
}

// anyReady reports whether one of the slices has a ready endpoint.
func anyReady(slices []discoveryv1.EndpointSlice) bool {
	for _, s := range slices {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				return true
			}
		}
	}
	return false
}
