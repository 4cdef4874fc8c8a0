package apidenial

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

func TestClassify(t *testing.T) {
	gr := schema.GroupResource{Group: "score.dev", Resource: "resourceclaims"}
	cases := []struct {
		name string
		err  error
		want scorev1b1.Reason
		ok   bool
	}{
		{"policy", apierrors.NewForbidden(gr, "x", errors.New(`ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no`)), scorev1b1.ReasonPolicyViolation, true},
		{"policy with reason Invalid", apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "x", field.ErrorList{field.Invalid(field.NewPath("spec"), "x", "ValidatingAdmissionPolicy 'p' with binding 'b' denied request")}), scorev1b1.ReasonPolicyViolation, true},
		{"webhook", apierrors.NewForbidden(gr, "x", errors.New(`admission webhook "v.example.com" denied the request`)), scorev1b1.ReasonPolicyViolation, true},
		{"quota", apierrors.NewForbidden(gr, "x", errors.New(`exceeded quota: q, requested: count/resourceclaims.score.dev=1, used: 1, limited: 1`)), scorev1b1.ReasonQuotaExceeded, true},
		{"rbac", apierrors.NewForbidden(gr, "x", errors.New(`User "system:serviceaccount:a:b" cannot create resource "resourceclaims"`)), scorev1b1.ReasonPermissionDenied, true},
		{"conflict is retried", apierrors.NewConflict(gr, "x", errors.New("changed")), "", false},
		{"plain invalid is not a denial", apierrors.NewInvalid(schema.GroupKind{Group: "score.dev", Kind: "ResourceClaim"}, "x", field.ErrorList{field.Required(field.NewPath("spec"), "")}), "", false},
		{"nil", nil, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Classify(tc.err)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("want %s/%v, got %s/%v", tc.want, tc.ok, got, ok)
			}
		})
	}
}

func TestTransient(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "statefulsets"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"a conflict", apierrors.NewConflict(gr, "x", errors.New("changed")), true},
		{"a timeout", apierrors.NewTimeoutError("slow", 1), true},
		{"the API server unavailable", apierrors.NewServiceUnavailable("restarting"), true},
		{"too many requests", apierrors.NewTooManyRequests("busy", 1), true},
		{"a refused connection", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{"an invalid object", apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, "x", field.ErrorList{field.Required(field.NewPath("spec"), "")}), false},
		{"a refusal", apierrors.NewForbidden(gr, "x", errors.New("no")), false},
		{"nil", nil, false},
	} {
		if got := Transient(tc.err); got != tc.want {
			t.Errorf("%s: Transient = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A create refused because the namespace is being deleted is neither a denial nor transient:
// it is recognised, through wrapping, so nobody reports or retries it.
func TestNamespaceTerminating(t *testing.T) {
	refused := apierrors.NewForbidden(schema.GroupResource{Group: "score.dev", Resource: "resourceclaims"}, "x", errors.New("unable to create new content in namespace team because it is being terminated"))
	refused.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "namespace team is being terminated", Field: "metadata.namespace"}}
	wrapped := fmt.Errorf("creating claim x: %w", refused)
	if !NamespaceTerminating(wrapped) {
		t.Fatal("not recognised through wrapping")
	}
	if _, denied := Classify(wrapped); denied {
		t.Fatal("classified as a denial")
	}
	if NamespaceTerminating(apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New("rbac"))) {
		t.Fatal("a plain refusal taken for a terminating namespace")
	}
}
