package orchestrator

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// probeHosts reads whether the config admits probes that name a host in a namespace: its
// probeHosts over the namespace's labels, as cached (the namespaces' metadata is watched).
// A namespace not cached yet admits nothing; its creation brings the Workload back.
func (r *Reconciler) probeHosts(ctx context.Context, namespace string, cfg *orchconfig.Config) (bool, error) {
	if !selectsByLabels(cfg) {
		return cfg.ProbeHostsAllowed(namespace, nil), nil
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: namespace}, ns); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	return cfg.ProbeHostsAllowed(namespace, ns.Labels), nil
}

// selectsByLabels reports whether the config's probeHosts selects namespaces by their labels.
func selectsByLabels(cfg *orchconfig.Config) bool {
	s := cfg.ProbeHosts
	return s != nil && len(s.MatchLabels)+len(s.MatchExpressions) > 0
}

// labelsChanged holds for a namespace relabelled, or created: it may now be selected by the
// config's probeHosts, or no longer.
var labelsChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return true },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
	},
}

// relabelledNamespaceWorkloads maps a namespace whose labels changed to the Workloads whose
// decision its labels take part in: all of them when the config's probeHosts selects by
// labels, else those that mount a volume by name (namedVolumes selects namespaces too).
func (r *Reconciler) relabelledNamespaceWorkloads(ctx context.Context, o client.Object) []reconcile.Request {
	if reqs := r.namespaceWorkloads(ctx, o); reqs != nil {
		return reqs
	}
	return r.namedVolumeWorkloads(ctx, o)
}

// namespaceWorkloads maps a namespace whose labels changed to its Workloads, when the config's
// probeHosts selects by labels: whether their probes may name a host may have changed.
func (r *Reconciler) namespaceWorkloads(ctx context.Context, o client.Object) []reconcile.Request {
	loaded, ok := r.Config.Get()
	if !ok || !selectsByLabels(loaded.Config) {
		return nil
	}
	var list scorev1b1.WorkloadList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetName())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing a namespace's Workloads after its labels changed", "namespace", o.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, w := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&w)})
	}
	return reqs
}
