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
	"github.com/score-orchestrator/score-orchestrator/internal/controller/previewpolicy"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/preview"
)

// The orchestrator reads the admission policy that binds previews to their makers: a preview
// made without it in force is refused (internal/planning/preview, Untrusted).
//
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=get;list;watch

// previewOf reads the Workload's namespace as a preview environment and the platform's verdict
// on it (internal/planning/preview): nil when the namespace is no preview. The namespaces'
// metadata is cached (the watch SetupWithManager starts), and so are the admission policy and
// its bindings; the previews being deleted do not count against the limit.
func (r *Reconciler) previewOf(ctx context.Context, namespace string, policy orchconfig.Previews) (*preview.Preview, error) {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: namespace}, ns); {
	case apierrors.IsNotFound(err):
		return nil, nil // not cached yet, or gone with the Workload
	case err != nil:
		return nil, fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	if ns.Labels[scorev1b1.LabelPreview] == "" {
		return nil, nil
	}
	all, err := r.previews(ctx)
	if err != nil {
		return nil, err
	}
	guard, err := previewpolicy.Read(ctx, r.Client)
	if err != nil {
		return nil, err
	}
	p, ok := preview.Standing(previewNamespace(ns), all, policy, guard)
	if !ok {
		return nil, nil
	}
	return &p, nil
}

// previews are the preview namespaces that are not being deleted, as cached.
func (r *Reconciler) previews(ctx context.Context) ([]preview.Namespace, error) {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := r.Client.List(ctx, &list, client.HasLabels{scorev1b1.LabelPreview}); err != nil {
		return nil, fmt.Errorf("listing the preview namespaces: %w", err)
	}
	out := make([]preview.Namespace, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp.IsZero() {
			out = append(out, previewNamespace(&list.Items[i]))
		}
	}
	return out, nil
}

func previewNamespace(ns *metav1.PartialObjectMetadata) preview.Namespace {
	return preview.Namespace{Name: ns.Name, Labels: ns.Labels, Annotations: ns.Annotations, Created: ns.CreationTimestamp.Time}
}

// previewChanged holds for a preview namespace created, deleted, relabelled, given another
// maker or being deleted: the limit may admit or refuse another preview then.
var previewChanged = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return isPreview(e.Object) },
	DeleteFunc:  func(e event.DeleteEvent) bool { return isPreview(e.Object) },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		return (isPreview(o) || isPreview(n)) && (!maps.Equal(o.GetLabels(), n.GetLabels()) ||
			o.GetAnnotations()[scorev1b1.AnnotationPreviewMaker] != n.GetAnnotations()[scorev1b1.AnnotationPreviewMaker] ||
			o.GetDeletionTimestamp().IsZero() != n.GetDeletionTimestamp().IsZero())
	},
}

func isPreview(o client.Object) bool { return o.GetLabels()[scorev1b1.LabelPreview] != "" }

// previewWorkloads maps a change of a preview namespace to the Workloads of every preview:
// the limit counts them together. Previews are few; the Workloads are read from the cache.
func (r *Reconciler) previewWorkloads(ctx context.Context, _ client.Object) []reconcile.Request {
	all, err := r.previews(ctx)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the previews after a preview namespace changed")
		return nil
	}
	var reqs []reconcile.Request
	for _, ns := range all {
		var list scorev1b1.WorkloadList
		if err := r.Client.List(ctx, &list, client.InNamespace(ns.Name)); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing a preview's Workloads", "namespace", ns.Name)
			continue
		}
		for _, w := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&w)})
		}
	}
	return reqs
}
