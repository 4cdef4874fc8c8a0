package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/statuspatch"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/apply"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/exposure"
	"github.com/score-orchestrator/score-orchestrator/internal/status/plandecision"
)

// readExposure reads the Workload's exposure (the plan's name: a copy on several clusters has
// its own) and derives its endpoints from what the pass applied, as the exposure rules do (route and Ingress hosts, load balancer addresses, cluster
// DNS names, whether a Service has a ready endpoint). An exposure not registered yet (the
// orchestrator registers it; its creation brings the plan back) or another Workload's is left
// alone.
func (r *Reconciler) readExposure(ctx context.Context, ps *pass) {
	p := ps.Plan
	e := &scorev1b1.WorkloadExposure{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Name}, e); err != nil {
		ps.ExposureErr = client.IgnoreNotFound(err)
		return
	}
	if e.Spec.WorkloadRef.UID != p.Spec.WorkloadRef.UID {
		return
	}
	// On a member the routes are the provisioner's objects there, and the Gateways they
	// attach to are the member's.
	where, routes := client.Reader(r.Client), r.routes
	mapper := r.Client.RESTMapper()
	if ps.tgt.Member != nil {
		where, routes, mapper = ps.tgt.Member.Client, ps.tgt.Routes, ps.tgt.Member.Client.RESTMapper()
	}
	provisioned, err := provisionedRoutes(ctx, p, where, mapper, routes)
	if err != nil {
		r.memberFailed(ps, err)
		ps.ExposureErr = err
		return
	}
	in := exposure.Input{Objects: ps.Live, Provisioned: provisioned, Gateways: gateways(ctx, where, exposure.GatewayKeys(append(slices.Clone(ps.Live), provisioned...)))}
	reachable := r.reachable
	if ps.tgt.Member != nil {
		reachable = func(ctx context.Context, namespace, service string) (bool, error) {
			return reachableOn(ctx, ps.tgt, namespace, service)
		}
	}
	var readErr error
	in.Reachable = func(name string) bool {
		ok, err := reachable(ctx, p.Namespace, name)
		readErr = errors.Join(readErr, err)
		return ok
	}
	endpoints := exposure.Compute(in)
	if readErr != nil {
		ps.ExposureErr = readErr
		return
	}
	ps.exposure = e
	ps.Exposure = &plandecision.Exposure{Status: e.Status, Endpoints: endpoints}
}

// writeExposure writes the exposure's status, through statuspatch: only when it changed.
func (r *Reconciler) writeExposure(ctx context.Context, e *scorev1b1.WorkloadExposure, status scorev1b1.WorkloadExposureStatus) error {
	patch := statuspatch.Begin(e)
	e.Status = status
	// No record of the write: the exposure is read afresh each pass and compared with what
	// the pass decides, so a copy older than the write costs at most a write that changes
	// nothing.
	_, err := patch.Finish(ctx, r.Client, nil)
	return err
}

// routeKinds are the kinds of the routes a dependency may provision for its Workload.
var routeKinds = []schema.GroupVersionKind{
	{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
}

// provisionedRoutes are the HTTPRoutes and Ingresses the plan's claims provisioned (labelled
// with their instances) on the cluster where reads, through routes' watches: a Workload's route
// resource is its public URL. Each kind is watched, so a gateway accepting a route (or an
// ingress controller giving an Ingress its address) brings the plan back; a kind the cluster
// does not serve has none. The instances are the ones on the plan's cluster: an instance's
// identity includes its cluster.
func provisionedRoutes(ctx context.Context, p *scorev1b1.WorkloadPlan, where client.Reader, mapper meta.RESTMapper, routes *apply.Watcher) ([]*unstructured.Unstructured, error) {
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
		if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return nil, err
		}
		routes.Ensure(ctx, gvk)
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := routes.List(ctx, where, list, client.InNamespace(p.Namespace), client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*selector)}); err != nil {
			return nil, fmt.Errorf("listing the routes of the plan's dependencies: %w", err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// gateways reads the Gateways applied HTTPRoutes attach to, for their listeners' protocols,
// on the cluster where reads. A Gateway that cannot be read (absent, Gateway API not
// installed, or outside the namespaces the identity reaches on a member) only means the
// route is published as http.
func gateways(ctx context.Context, where client.Reader, keys []string) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, key := range keys {
		ns, name, _ := strings.Cut(key, "/")
		gw := &unstructured.Unstructured{}
		gw.SetGroupVersionKind(schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "Gateway"})
		if err := where.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, gw); err == nil {
			out[key] = gw
		}
	}
	return out
}

// reachable reports whether a Service has at least one ready endpoint.
func (r *Reconciler) reachable(ctx context.Context, namespace, service string) (bool, error) {
	var slices discoveryv1.EndpointSliceList
	if err := r.Client.List(ctx, &slices, client.InNamespace(namespace), client.MatchingFields{indexService: service}); err != nil {
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
