// Package apidenial reads an API server's refusal to write a derived object: a denial maps
// onto the abstract reasons (an admission policy → PolicyViolation, a quota → QuotaExceeded,
// RBAC → PermissionDenied); a transient error clears by itself when retried; a create refused
// because the namespace is being deleted is neither.
package apidenial

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// Classify returns the abstract reason for an API error, and false when the error is not a
// denial (a conflict, a timeout, ...) and should simply be retried.
//
// The API server gives no structured field that tells an admission denial from a quota or an
// RBAC refusal: all are 403 Forbidden (or 422 Invalid for a policy with reason Invalid), and
// only the message names the admission plugin. This is the one place that reads it.
func Classify(err error) (scorev1b1.Reason, bool) {
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

// Transient reports whether an API error clears by itself when retried — a conflict, a
// timeout, the API server busy, failing or unreachable — as against a refusal, an invalid
// object or a kind that is not served, which wait for their input to change.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	switch {
	case apierrors.IsConflict(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err), apierrors.IsTooManyRequests(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err), apierrors.IsUnexpectedServerError(err):
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
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
