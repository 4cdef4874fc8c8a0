// Package apierror is the one classification of the API errors the controllers meet when they
// read and write: every controller decides what an error means through it, so that the same
// error is answered the same way by each (a claim and a plan keep their state through a
// transient error alike; a member that gives no answer is unreachable for the provisioner and
// the runtime alike). It reads errors only, with no client.
package apierror

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// Class is what an API error means for the write (or read) that met it.
type Class int

const (
	// Failed is none of the others: the request was answered and refused for what it asked
	// (an invalid object, a kind not served). Reported, and retried with backoff: what lifts
	// it is not something the controller watches.
	Failed Class = iota
	// Transient is an answer that asks to try again: a conflict, the API server busy, timing
	// out or failing. It clears by itself; what the object already has stays.
	Transient
	// Unreachable is no answer at all: a connection refused or reset, a timeout on the way, a
	// proxy or a member's API server that does not answer (503, 504). For a member cluster it
	// marks the member unreachable until its probe says otherwise.
	Unreachable
	// Denied is a refusal by an admission policy, a quota or RBAC: Reason names which, as the
	// abstract reason the object reports.
	Denied
	// Gone is an object that does not exist, or a create refused because its namespace is
	// being deleted (and everything in it with it): nothing to report or retry.
	Gone
	// TooLarge is an object the API server refuses for its size: refused until what it is
	// derived from changes.
	TooLarge
)

func (c Class) String() string {
	return [...]string{"failed", "transient", "unreachable", "denied", "gone", "too large"}[c]
}

// Classify says what err means; nil is Failed (callers ask only about errors).
func Classify(err error) Class {
	switch {
	case err == nil:
		return Failed
	case NamespaceTerminating(err) || apierrors.IsNotFound(err):
		return Gone
	case apierrors.IsRequestEntityTooLargeError(err):
		return TooLarge
	}
	if _, denied := Reason(err); denied {
		return Denied
	}
	if unreachable(err) {
		return Unreachable
	}
	switch {
	case apierrors.IsConflict(err), apierrors.IsServerTimeout(err), apierrors.IsTooManyRequests(err),
		apierrors.IsInternalError(err), apierrors.IsUnexpectedServerError(err):
		return Transient
	}
	return Failed
}

// Passing reports whether err clears by itself when retried: Transient or Unreachable.
func Passing(err error) bool {
	c := Classify(err)
	return err != nil && (c == Transient || c == Unreachable)
}

// Unanswered reports whether err is a request that got no answer (Unreachable), as against the
// API server's refusal. A failure of our own making (a render refused, a kind not allowed) is
// not one: marking a member unreachable for it would hold everything placed there until the
// next probe.
func Unanswered(err error) bool { return err != nil && Classify(err) == Unreachable }

// unreachable: no answer from the API server (or a proxy in front of it saying so).
func unreachable(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout
	}
	var urlErr *url.Error
	var netErr net.Error
	return errors.As(err, &urlErr) || errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

// Reason returns the abstract reason of a denial (an admission policy → PolicyViolation, a
// quota → QuotaExceeded, RBAC → PermissionDenied), and false when err is not one.
//
// The API server gives no structured field that tells an admission denial from a quota or an
// RBAC refusal: all are 403 Forbidden (or 422 Invalid for a policy with reason Invalid), and
// only the message names the admission plugin. This is the one place that reads it.
func Reason(err error) (scorev1b1.Reason, bool) {
	if err == nil || NamespaceTerminating(err) {
		return "", false
	}
	msg := err.Error()
	admission := strings.Contains(msg, "ValidatingAdmissionPolicy") || strings.Contains(msg, "admission webhook") || strings.Contains(msg, "denied the request")
	switch {
	case (apierrors.IsForbidden(err) || apierrors.IsInvalid(err)) && admission:
		return scorev1b1.ReasonPolicyViolation, true
	case apierrors.IsForbidden(err) && strings.Contains(msg, "exceeded quota"):
		return scorev1b1.ReasonQuotaExceeded, true
	case apierrors.IsForbidden(err):
		return scorev1b1.ReasonPermissionDenied, true
	}
	return "", false
}

// NamespaceTerminating reports whether the API server refused to create an object because its
// namespace is being deleted. Not a denial to report or retry: everything in the namespace,
// the Workload included, is on its way out, and the Workload's deletion brings its
// controllers back.
func NamespaceTerminating(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Type == corev1.NamespaceTerminatingCause {
			return true
		}
	}
	return false
}
