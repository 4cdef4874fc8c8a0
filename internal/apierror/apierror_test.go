package apierror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// One table for every error the controllers meet: its class, and for a denial its reason.
func TestClassify(t *testing.T) {
	gr := schema.GroupResource{Group: "score.dev", Resource: "resourceclaims"}
	terminating := apierrors.NewForbidden(gr, "x", errors.New("unable to create new content in namespace team because it is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "namespace team is being terminated", Field: "metadata.namespace"}}
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "score.dev", Kind: "ResourceClaim"}, "x", field.ErrorList{field.Required(field.NewPath("spec"), "")})
	for _, tc := range []struct {
		name   string
		err    error
		class  Class
		reason scorev1b1.Reason
	}{
		{"an admission policy", apierrors.NewForbidden(gr, "x", errors.New(`ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no`)), Denied, scorev1b1.ReasonPolicyViolation},
		{"an admission policy with reason Invalid", apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "x", field.ErrorList{field.Invalid(field.NewPath("spec"), "x", "ValidatingAdmissionPolicy 'p' with binding 'b' denied request")}), Denied, scorev1b1.ReasonPolicyViolation},
		{"a webhook", apierrors.NewForbidden(gr, "x", errors.New(`admission webhook "v.example.com" denied the request`)), Denied, scorev1b1.ReasonPolicyViolation},
		{"a quota", apierrors.NewForbidden(gr, "x", errors.New(`exceeded quota: q, requested: count/resourceclaims.score.dev=1, used: 1, limited: 1`)), Denied, scorev1b1.ReasonQuotaExceeded},
		{"RBAC", apierrors.NewForbidden(gr, "x", errors.New(`User "system:serviceaccount:a:b" cannot create resource "resourceclaims"`)), Denied, scorev1b1.ReasonPermissionDenied},
		{"a conflict", apierrors.NewConflict(gr, "x", errors.New("changed")), Transient, ""},
		{"too many requests", apierrors.NewTooManyRequests("busy", 1), Transient, ""},
		{"an internal error", apierrors.NewInternalError(errors.New("etcd")), Transient, ""},
		{"a server timeout", apierrors.NewServerTimeout(gr, "create", 1), Transient, ""},
		{"the API server unavailable", apierrors.NewServiceUnavailable("restarting"), Unreachable, ""},
		{"a gateway timeout", apierrors.NewTimeoutError("slow", 1), Unreachable, ""},
		{"a 504 from a proxy", apierrors.NewGenericServerResponse(http.StatusGatewayTimeout, "get", gr, "web", "", 0, true), Unreachable, ""},
		{"a refused connection", &url.Error{Op: "Get", URL: "https://127.0.0.1:1/api", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}, Unreachable, ""},
		{"a reset connection", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, Unreachable, ""},
		{"an answer cut off, wrapped", fmt.Errorf("applying Deployment web: %w", &url.Error{Op: "Patch", URL: "https://m", Err: io.EOF}), Unreachable, ""},
		{"a deadline", fmt.Errorf("reading: %w", context.DeadlineExceeded), Unreachable, ""},
		{"not found", apierrors.NewNotFound(gr, "web"), Gone, ""},
		{"a namespace being deleted, wrapped", fmt.Errorf("creating claim x: %w", terminating), Gone, ""},
		{"too large", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), TooLarge, ""},
		{"an invalid object", invalid, Failed, ""},
		{"a refusal of our own making", errors.New("Deployment web targets namespace other; only objects in team may be created"), Failed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.err); got != tc.class {
				t.Fatalf("class %s, want %s", got, tc.class)
			}
			reason, denied := Reason(tc.err)
			if reason != tc.reason || denied != (tc.class == Denied) {
				t.Fatalf("reason %q (%v), want %q", reason, denied, tc.reason)
			}
			if Passing(tc.err) != (tc.class == Transient || tc.class == Unreachable) || Unanswered(tc.err) != (tc.class == Unreachable) {
				t.Fatalf("Passing %v, Unanswered %v for class %s", Passing(tc.err), Unanswered(tc.err), tc.class)
			}
		})
	}
	if Passing(nil) || Unanswered(nil) || NamespaceTerminating(nil) {
		t.Fatal("nil is no error")
	}
}
