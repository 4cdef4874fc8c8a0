// Package previewpolicy is what the two controllers that act on previews — the orchestrator,
// which admits a preview's Workloads under the platform's limit, and the preview controller,
// which ends previews — read of the admission policy that binds previews to their makers
// (internal/preview): the policy and its bindings, judged by preview.GuardOf, and a watch that
// brings the previews back when either changes. Without the policy in force neither acts on a
// preview: whoever may label namespaces could have written it.
package previewpolicy

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/score-orchestrator/score-orchestrator/internal/preview"
)

// Read reads the policy and its bindings through c (the manager's cache, which Watch fills)
// and judges them.
func Read(ctx context.Context, c client.Reader) (preview.Guard, error) {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	switch err := c.Get(ctx, client.ObjectKey{Name: preview.PolicyName}, p); {
	case apierrors.IsNotFound(err):
		p = nil
	case err != nil:
		return preview.Guard{}, fmt.Errorf("reading the admission policy %s: %w", preview.PolicyName, err)
	}
	var bindings admissionregistrationv1.ValidatingAdmissionPolicyBindingList
	if err := c.List(ctx, &bindings); err != nil {
		return preview.Guard{}, fmt.Errorf("listing the admission policy bindings: %w", err)
	}
	return preview.GuardOf(p, bindings.Items), nil
}

// Watch adds to b the watches of the policy and of the bindings that name it (or named it), each
// change mapped to requests by toRequests: the previews it makes the controller trust or stop
// trusting.
func Watch(b *builder.Builder, toRequests handler.MapFunc) *builder.Builder {
	ours := func(o client.Object) bool {
		switch o := o.(type) {
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			return o.Name == preview.PolicyName
		case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			return o.Spec.PolicyName == preview.PolicyName
		}
		return false
	}
	changed := builder.WithPredicates(predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return ours(e.Object) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return ours(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return ours(e.ObjectOld) || ours(e.ObjectNew) },
		GenericFunc: func(event.GenericEvent) bool { return false },
	})
	return b.
		Watches(&admissionregistrationv1.ValidatingAdmissionPolicy{}, handler.EnqueueRequestsFromMapFunc(toRequests), changed).
		Watches(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, handler.EnqueueRequestsFromMapFunc(toRequests), changed)
}
