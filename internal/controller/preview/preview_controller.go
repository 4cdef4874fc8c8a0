// Package preview is the controller that ends preview environments (internal/planning/preview).
// When a preview namespace expires (or scorectl preview down sets its expiry to now), it
// deletes the namespace's Workloads — each released as any deleted Workload is, its
// dependencies per the preview's deprovision policy — and, once none is left, the namespace. It
// runs once for the fleet, beside the rollout, under the fleet's lease; its only timer is the
// next expiry.
//
// It deletes with its own rights what a namespace's metadata asks for, so it acts only on a
// preview that metadata can be trusted for: one created, naming its maker, while the admission
// policy that binds previews to their makers was in force (preview.Untrusted). Any other it
// leaves as it is — no expiry written, nothing deleted — and says why in a Warning event when
// it would have ended it: once, and again only when what it says changes (notEndedWarnings).
package preview

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/previewpolicy"
	core "github.com/score-orchestrator/score-orchestrator/internal/planning/preview"
)

// The preview controller's permissions: it deletes the Workloads of an expired preview, then
// its namespace (only a namespace named preview-<its score.dev/preview label>), and reads the
// admission policy that binds previews to their makers.
//
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=score.dev,resources=workloads,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler ends expired preview environments.
type Reconciler struct {
	Client   client.Client
	Config   *configsource.Store
	Recorder recorder.EventRecorder
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	// notEnded is what was last said of each expired preview left as it is (events only on
	// transitions).
	notEnded notEndedWarnings
}

// Setup adds the preview controller to mgr; store is the process's config.
func Setup(mgr ctrl.Manager, store *configsource.Store) error {
	r := &Reconciler{Client: mgr.GetClient(), Config: store, Recorder: mgr.GetEventRecorder("score-preview")}
	return r.SetupWithManager(mgr)
}

// SetupWithManager watches the preview namespaces (their metadata), the deletion of their
// Workloads (the last one gone lets the namespace go), the config store (a new lifetime
// applies to every preview) and the admission policy that binds previews to their makers (it
// makes previews trusted or not).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	isPreview := func(o client.Object) bool { return o.GetLabels()[scorev1b1.LabelPreview] != "" }
	// A namespace that loses the label comes back once more, so that what was said of it goes.
	labelled := predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return isPreview(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return isPreview(e.ObjectOld) || isPreview(e.ObjectNew) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return isPreview(e.Object) },
		GenericFunc: func(e event.GenericEvent) bool { return isPreview(e.Object) },
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("preview").
		For(&corev1.Namespace{}, builder.OnlyMetadata, builder.WithPredicates(labelled)).
		Watches(&scorev1b1.Workload{}, handler.EnqueueRequestsFromMapFunc(namespaceOf), builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false },
			UpdateFunc: func(event.UpdateEvent) bool { return false },
		})).
		WatchesRawSource(source.Channel(r.Config.Subscribe(), handler.EnqueueRequestsFromMapFunc(r.allPreviews)))
	return previewpolicy.Watch(b, r.allPreviews).Complete(r)
}

// namespaceOf maps a Workload to its namespace.
func namespaceOf(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetNamespace()}}}
}

// allPreviews lists every preview namespace.
func (r *Reconciler) allPreviews(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := r.Client.List(ctx, list, client.HasLabels{scorev1b1.LabelPreview}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the preview namespaces after a config change")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, ns := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: ns.Name}})
	}
	return reqs
}

// Reconcile waits for a preview namespace's expiry, then deletes its Workloads and, when none
// is left, the namespace.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Client.Get(ctx, req.NamespacedName, ns); err != nil {
		if apierrors.IsNotFound(err) {
			r.notEnded.forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var policy orchconfig.Previews
	if loaded, ok := r.Config.Get(); ok {
		policy = loaded.Config.Previews
	}
	n := core.Namespace{Name: ns.Name, Labels: ns.Labels, Annotations: ns.Annotations, Created: ns.CreationTimestamp.Time}
	p, ok := core.Read(n, policy)
	if !ok || !ns.DeletionTimestamp.IsZero() {
		r.notEnded.forget(ns.Name)
		return ctrl.Result{}, nil // not a preview, or already going
	}
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	// Only a preview whose metadata its maker (or the platform) wrote is ended: the
	// controller's rights must not serve whoever labelled or annotated a namespace.
	guard, err := previewpolicy.Read(ctx, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	if why := core.Untrusted(n, guard); why != "" {
		return r.notEnding(ctx, ns, p, why, now), nil
	}
	r.notEnded.forget(ns.Name)
	if err := r.recordExpiry(ctx, ns, p); err != nil {
		return ctrl.Result{}, err
	}
	if !p.Expired(now) {
		return ctrl.Result{RequeueAfter: p.Expires.Sub(now) + time.Second}, nil
	}
	return ctrl.Result{}, r.end(ctx, ns, p)
}

// notEnding is a preview not bound to its maker (why): it is not ended, and once expired, that
// is said, with a Warning.
func (r *Reconciler) notEnding(ctx context.Context, ns *metav1.PartialObjectMetadata, p core.Preview, why string, now time.Time) ctrl.Result {
	if !p.Expired(now) {
		r.notEnded.forget(ns.Name)
		return ctrl.Result{RequeueAfter: p.Expires.Sub(now) + time.Second} // to say so when it would end
	}
	// Said once per transition: the config and policy watches bring it back unchanged.
	note := fmt.Sprintf("Preview %s expired at %s and is not ended: %s", p.Name, p.Expires.UTC().Format(time.RFC3339), why)
	if r.notEnded.news(ns.Name, ns.UID, note) {
		ctrl.LoggerFrom(ctx).Info("Not ending a preview that is not bound to its maker", "namespace", ns.Name, "why", why)
		r.Recorder.Eventf(ns, nil, corev1.EventTypeWarning, "PreviewNotEnded", "Delete", "%s", note)
	}
	return ctrl.Result{}
}

// recordExpiry writes on the namespace the expiry that holds: the default when the preview
// named none, the longest lifetime when it named a later one.
func (r *Reconciler) recordExpiry(ctx context.Context, ns *metav1.PartialObjectMetadata, p core.Preview) error {
	at := p.Expires.UTC().Format(time.RFC3339)
	if ns.Annotations[scorev1b1.AnnotationPreviewExpires] == at {
		return nil
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, scorev1b1.AnnotationPreviewExpires, at)
	if err := r.Client.Patch(ctx, ns, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("recording the expiry of preview %s: %w", p.Name, err)
	}
	return nil
}

// end ends an expired preview: its Workloads deleted, then, once none is left, its namespace.
func (r *Reconciler) end(ctx context.Context, ns *metav1.PartialObjectMetadata, p core.Preview) error {
	var workloads scorev1b1.WorkloadList
	if err := r.Client.List(ctx, &workloads, client.InNamespace(ns.Name)); err != nil {
		return fmt.Errorf("listing the Workloads of preview %s: %w", p.Name, err)
	}
	if len(workloads.Items) > 0 {
		return r.deleteWorkloads(ctx, ns, p, workloads.Items) // each Workload's deletion brings the namespace back
	}
	if err := r.Client.Delete(ctx, ns, client.Preconditions{UID: &ns.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting the namespace of preview %s: %w", p.Name, err)
	}
	r.Recorder.Eventf(ns, nil, corev1.EventTypeNormal, "PreviewDeleted", "Delete", "Preview %s: its Workloads are gone; deleting namespace %s.", p.Name, ns.Name)
	return nil
}

// deleteWorkloads deletes the Workloads of an expired preview not already going, said once
// with an event when it deleted any.
func (r *Reconciler) deleteWorkloads(ctx context.Context, ns *metav1.PartialObjectMetadata, p core.Preview, workloads []scorev1b1.Workload) error {
	deleted := 0
	for i := range workloads {
		w := &workloads[i]
		if !w.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Client.Delete(ctx, w, client.Preconditions{UID: &w.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting Workload %s of preview %s: %w", w.Name, p.Name, err)
		}
		deleted++
	}
	if deleted > 0 {
		r.Recorder.Eventf(ns, nil, corev1.EventTypeNormal, "PreviewExpired", "Delete",
			"Preview %s expired at %s: deleting its %d Workload(s) with their dependencies (%s), then the namespace.", p.Name, p.Expires.UTC().Format(time.RFC3339), deleted, p.Policy)
	}
	return nil
}
