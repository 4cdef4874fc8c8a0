// Package apidenial maps an API server's refusal to write a derived object onto the
// abstract reasons: an admission policy → PolicyViolation, a quota → QuotaExceeded, RBAC →
// PermissionDenied.
package apidenial

import (
	"strings"

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
	if err == nil {
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
