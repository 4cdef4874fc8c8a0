// Package previewpolicy is what the two controllers that act on previews — the orchestrator,
// which admits a preview's Workloads under the platform's limit, and the preview controller,
// which ends previews — read of the admission policy that binds previews to their makers
// (internal/planning/preview): the policy and its binding, both named preview.PolicyName, judged by
// preview.GuardOf, and a watch that brings the previews back when either changes. Without the
// policy in force neither acts on a preview: whoever may label namespaces could have written
// it. The caches hold these two objects alone (CacheOptions), no other admission policy.
package previewpolicy

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/score-orchestrator/score-orchestrator/internal/planning/preview"
)

// Read reads the policy and its binding through c (the manager's cache, which Watch fills)
// and judges them.
func Read(ctx context.Context, c client.Reader) (preview.Guard, error) {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	switch err := c.Get(ctx, client.ObjectKey{Name: preview.PolicyName}, p); {
	case apierrors.IsNotFound(err):
		p = nil
	case err != nil:
		return preview.Guard{}, fmt.Errorf("reading the admission policy %s: %w", preview.PolicyName, err)
	}
	var bindings []admissionregistrationv1.ValidatingAdmissionPolicyBinding
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	switch err := c.Get(ctx, client.ObjectKey{Name: preview.PolicyName}, b); {
	case err == nil:
		bindings = append(bindings, *b)
	case !apierrors.IsNotFound(err):
		return preview.Guard{}, fmt.Errorf("reading the admission policy binding %s: %w", preview.PolicyName, err)
	}
	return preview.GuardOf(p, bindings), nil
}

// CacheOptions narrows a manager's cache of admission policies and their bindings to the two
// named preview.PolicyName: the platform's other policies are not the controllers' to hold.
func CacheOptions(o *cache.Options) {
	if o.ByObject == nil {
		o.ByObject = map[client.Object]cache.ByObject{}
	}
	named := cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", preview.PolicyName)}
	o.ByObject[&admissionregistrationv1.ValidatingAdmissionPolicy{}] = named
	o.ByObject[&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}] = named
}

// Watch adds to b the watches of the policy and its binding, each change mapped to requests
// by toRequests: the previews it makes the controller trust or stop trusting.
func Watch(b *builder.Builder, toRequests handler.MapFunc) *builder.Builder {
	ours := builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == preview.PolicyName }))
	return b.
		Watches(&admissionregistrationv1.ValidatingAdmissionPolicy{}, handler.EnqueueRequestsFromMapFunc(toRequests), ours).
		Watches(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, handler.EnqueueRequestsFromMapFunc(toRequests), ours)
}
