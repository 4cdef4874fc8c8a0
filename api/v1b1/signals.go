package v1b1

// What one controller writes and another reads, named once: the plan's, the claim's and the
// exposure's condition types and their reasons, and the health states of applied objects.
// The runtime and the provisioner write them; the orchestrator's mirror, scorectl and the
// tests read them.

// Health is an applied object's health, as kstatus names it (or as a platform's CEL health
// rule decides it).
type Health = string

// The health states of AppliedObject.Health.
const (
	HealthCurrent    Health = "Current"
	HealthInProgress Health = "InProgress"
	HealthFailed     Health = "Failed"
	HealthUnknown    Health = "Unknown"
)

// The plan's conditions: Applied (everything rendered is applied) and Healthy (every applied
// object is Current), with their reasons.
const (
	PlanConditionApplied = "Applied"
	PlanConditionHealthy = "Healthy"

	// PlanReasonApplied is Applied=True.
	PlanReasonApplied = "Applied"
	// PlanReasonObjectConflict is Applied=False when an object the plan renders exists and
	// belongs to another Workload: the runtime refuses to take it over, the orchestrator tells
	// the plan's Workload so, and the runtime tells the owning Workload with a Warning event of
	// the same reason.
	PlanReasonObjectConflict = "ObjectConflict"
	// PlanReasonClusterUnreachable is Applied=False while the member cluster the plan is
	// placed on does not answer (or is not registered): nothing is changed or deleted on
	// either side, and the plan is applied again when the cluster answers.
	PlanReasonClusterUnreachable = "ClusterUnreachable"
	// PlanReasonCurrent is Healthy=True; PlanReasonInProgress, PlanReasonUpdating and
	// PlanReasonDegraded are Healthy=False while the objects become healthy: from nothing
	// serving, while what an earlier generation made healthy still serves (a Deployment rolling
	// its pods onto a new template), and once healthy objects of this generation stopped being
	// so while the workload still serves.
	PlanReasonCurrent    = "Current"
	PlanReasonInProgress = "InProgress"
	PlanReasonUpdating   = "Updating"
	PlanReasonDegraded   = "Degraded"
)

// ClaimConditionReady is the claim's detailed readiness condition: True when Bound.
const ClaimConditionReady = "Ready"

// The runtime's conditions on WorkloadExposure.status, which the orchestrator's mirror
// normalises into the Workload's abstract reasons (endpoint-mirror.md). The mirror also
// accepts the other names that document lists (Selecting, Applying, Available, DNSNotReady,
// PolicyViolation, QuotaExceeded, PermissionDenied), for runtimes other than ours.
const (
	ExposureConditionHealthy        = "Healthy"
	ExposureConditionProvisioning   = "Provisioning"
	ExposureConditionDegraded       = "Degraded"
	ExposureConditionLBPending      = "LBPending"
	ExposureConditionIngressPending = "IngressPending"
	ExposureConditionDNSNotReady    = "DNSNotReady"
	ExposureConditionSelecting      = "Selecting"
	ExposureConditionApplying       = "Applying"
	ExposureConditionAvailable      = "Available"
)
