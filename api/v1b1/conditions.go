package v1b1

// Condition types on Workload.status. Ready is derived: Ready = InputsValid ∧ ClaimsReady ∧
// RuntimeReady.
const (
	ConditionInputsValid  = "InputsValid"
	ConditionClaimsReady  = "ClaimsReady"
	ConditionRuntimeReady = "RuntimeReady"
	ConditionReady        = "Ready"
	// ConditionStalled is kstatus's convention, derived from Ready: True, with Ready's reason
	// and message, while the Workload is not Ready for a reason that waits for a person
	// (Reason.Waits is false); absent otherwise. Tools that read kstatus (Flux's health checks,
	// kubectl wait's callers) see such a Workload as Failed, not as still in progress.
	ConditionStalled = "Stalled"
)

// Reason is one of the closed set of abstract reasons a Workload condition may carry. It never
// names a runtime noun; details belong to the internal objects.
type Reason string

// The closed set of Workload condition reasons.
const (
	ReasonSucceeded           Reason = "Succeeded"
	ReasonSpecInvalid         Reason = "SpecInvalid"
	ReasonPolicyViolation     Reason = "PolicyViolation"
	ReasonClaimPending        Reason = "ClaimPending"
	ReasonClaimFailed         Reason = "ClaimFailed"
	ReasonProjectionError     Reason = "ProjectionError"
	ReasonRuntimeSelecting    Reason = "RuntimeSelecting"
	ReasonRuntimeProvisioning Reason = "RuntimeProvisioning"
	ReasonRuntimeDegraded     Reason = "RuntimeDegraded"
	ReasonQuotaExceeded       Reason = "QuotaExceeded"
	ReasonPermissionDenied    Reason = "PermissionDenied"
	ReasonNetworkUnavailable  Reason = "NetworkUnavailable"
)

// Reasons lists the closed set in a stable order.
var Reasons = []Reason{
	ReasonSucceeded, ReasonSpecInvalid, ReasonPolicyViolation, ReasonClaimPending,
	ReasonClaimFailed, ReasonProjectionError, ReasonRuntimeSelecting, ReasonRuntimeProvisioning,
	ReasonRuntimeDegraded, ReasonQuotaExceeded, ReasonPermissionDenied, ReasonNetworkUnavailable,
}

// Waits reports whether a Workload not Ready for this reason converges by itself — a
// dependency being provisioned, outputs to come, a runtime being chosen or deploying, an
// endpoint not reachable yet — as against one that waits for a person: an invalid
// specification, a policy, a quota, a permission, a dependency that failed. The dashboard's
// colours, the Stalled condition and the GitOps health checks all read it.
func (r Reason) Waits() bool {
	switch r {
	case ReasonClaimPending, ReasonProjectionError, ReasonRuntimeSelecting, ReasonRuntimeProvisioning, ReasonNetworkUnavailable:
		return true
	}
	return false
}

// IsKnown reports whether r belongs to the closed set of Workload reasons.
func (r Reason) IsKnown() bool {
	for _, k := range Reasons {
		if r == k {
			return true
		}
	}
	return false
}
