package v1b1

// Condition types on Workload.status. Ready is derived: Ready = InputsValid ∧ ClaimsReady ∧
// RuntimeReady.
const (
	ConditionInputsValid  = "InputsValid"
	ConditionClaimsReady  = "ClaimsReady"
	ConditionRuntimeReady = "RuntimeReady"
	ConditionReady        = "Ready"
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

// IsKnown reports whether r belongs to the closed set of Workload reasons.
func (r Reason) IsKnown() bool {
	for _, k := range Reasons {
		if r == k {
			return true
		}
	}
	return false
}
