package v1b1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkloadTrace asks the control plane for the decision trace of one Workload of its namespace
// (what `scorectl why` prints), for a user who may not read the Orchestrator Config or the
// internal kinds: an application developer bound to score-workload-editor. The orchestrator,
// which holds the config and reads the internal kinds, answers it once in its status with what
// concerns that Workload only (docs/security.md, "Why for tenants"), and removes it a minute
// after; a namespace holds at most 8 of them (MaxWorkloadTraces), and the orchestrator removes
// the ones created after those, unanswered. `scorectl why` creates one when the user may not read the config,
// prints the answer and deletes it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wtrace,categories=score
// +kubebuilder:printcolumn:name="Workload",type=string,JSONPath=`.spec.workload`
// +kubebuilder:printcolumn:name="Answered",type=string,JSONPath=`.status.conditions[?(@.type=="Answered")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Answered")].reason`
// +kubebuilder:printcolumn:name="Profile",type=string,JSONPath=`.status.trace.profile.name`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WorkloadTrace struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
	Spec   WorkloadTraceSpec   `json:"spec"`
	Status WorkloadTraceStatus `json:"status,omitempty"`
}

// WorkloadTraceSpec names the Workload the trace is asked for.
type WorkloadTraceSpec struct {
	// Workload is the name of a Workload in the trace's own namespace; no other namespace can
	// be named.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Workload string `json:"workload"`
}

// MaxWorkloadTraces is the most WorkloadTraces a namespace holds: the orchestrator removes,
// unanswered, the ones created after them (by creation time, then name).
const MaxWorkloadTraces = 8

// TraceConditionAnswered is the WorkloadTrace's condition: True once status.trace holds the
// answer, False when there is none to give (its reason says why). Either way it is final: a
// trace is answered once and removed a minute after (its lastTransitionTime).
const TraceConditionAnswered = "Answered"

// The reasons of the Answered condition.
const (
	// TraceReasonAnswered: status.trace holds the trace.
	TraceReasonAnswered = "Answered"
	// TraceReasonWorkloadNotFound: the namespace has no Workload of that name.
	TraceReasonWorkloadNotFound = "WorkloadNotFound"
	// TraceReasonConfigNotLoaded: the orchestrator has no valid Orchestrator Config to trace
	// the Workload's decisions with.
	TraceReasonConfigNotLoaded = "ConfigNotLoaded"
)

// WorkloadTraceStatus is the orchestrator's answer; only it writes it.
type WorkloadTraceStatus struct {
	// Conditions hold Answered.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=4
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Trace is the answer, once Answered is True.
	// +optional
	Trace *Trace `json:"trace,omitempty"`
}

// The bounds of a trace written to a status: an answer is a few kilobytes, and never more than
// about 80 KiB whatever the Workload or the config hold.
const (
	// TraceMaxText is the longest sentence of a trace, in bytes; a longer one is cut.
	TraceMaxText = 512
	// TraceMaxMessage is the longest message a trace copies (the Workload's Ready condition's).
	TraceMaxMessage = 2048
	// TraceMaxCandidates are the backends, and the clusters, a trace lists.
	TraceMaxCandidates = 16
	// TraceMaxBlockers are the lines of In the way a trace holds.
	TraceMaxBlockers = 48
	// TraceMaxRuleErrors are the profile rules' errors a trace holds.
	TraceMaxRuleErrors = 8
)

// Trace is the decision trace of one Workload: the profile and backend chosen and why, every
// backend candidate with the constraint that filtered it or its rank, the placement, the
// provisioner of each dependency, Ready, and what is in the way. Written by the orchestrator
// for a tenant, it holds what concerns that Workload only; `scorectl why` computes the same for
// a platform engineer from the config.
type Trace struct {
	// Generation is the Workload's generation the trace was computed at.
	Generation int64 `json:"generation"`
	// Preview says, when the Workload's namespace is a preview environment, which one and
	// when it expires.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Preview string `json:"preview,omitempty"`
	// ConfigRevision is the revision of the Orchestrator Config the trace was computed with.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	ConfigRevision string `json:"configRevision,omitempty"`
	// PlanConfigRevision is the revision the Workload's plan was last written from.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	PlanConfigRevision string `json:"planConfigRevision,omitempty"`
	// Profile is the profile chosen, or why none is.
	Profile TraceProfile `json:"profile"`
	// RuleErrors are the config's profile rules that failed to evaluate for the Workload.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=512
	RuleErrors []string `json:"ruleErrors,omitempty"`
	// Backends are the profile's backends: the one chosen, the others admitted with their
	// rank, and those rejected with the constraint that filtered them.
	// +optional
	// +kubebuilder:validation:MaxItems=17
	Backends []TraceCandidate `json:"backends,omitempty"`
	// Placement is where the chosen backend places the Workload, when it places on member
	// clusters.
	// +optional
	Placement *TracePlacement `json:"placement,omitempty"`
	// Dependencies are the Workload's resources: the provisioner serving each and its claim's
	// phase.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Dependencies []TraceDependency `json:"dependencies,omitempty"`
	// Ready is the Workload's Ready condition as the trace saw it; absent before the
	// orchestrator reported on the Workload.
	// +optional
	Ready *TraceReady `json:"ready,omitempty"`
	// InTheWay are the things that keep the Workload from Ready, each followed by what holds it
	// in turn (one level deeper).
	// +optional
	// +kubebuilder:validation:MaxItems=48
	InTheWay []TraceBlocker `json:"inTheWay,omitempty"`
}

// TraceProfile is the profile chosen and how.
type TraceProfile struct {
	// Name is the profile; empty when none was chosen.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
	// ChosenBy is hint, rule, selector or default.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	ChosenBy string `json:"chosenBy,omitempty"`
	// Detail names the rule, selector or annotation that chose it.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Detail string `json:"detail,omitempty"`
	// Message says why no profile was chosen.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Message string `json:"message,omitempty"`
}

// The verdicts on a backend or a cluster.
const (
	// TraceChosen is the backend selected, or a cluster the Workload (or a copy) runs on.
	TraceChosen = "Chosen"
	// TraceEligible is a backend admitted and ranked below the chosen one, or a cluster that
	// matches and runs nothing of the Workload.
	TraceEligible = "Eligible"
	// TraceRejected is a backend a constraint filtered out, or a cluster that does not match.
	TraceRejected = "Rejected"
)

// TraceCandidate is one backend of the profile, or one cluster of the placement, and what
// became of it.
type TraceCandidate struct {
	// Name is the backend's id or the cluster's name; "…" for a line that says how many more
	// there are.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Verdict is Chosen, Eligible or Rejected.
	// +optional
	// +kubebuilder:validation:Enum=Chosen;Eligible;Rejected
	Verdict string `json:"verdict,omitempty"`
	// Why says why, in a sentence: the constraint, the rank, the placement's reason.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Why string `json:"why,omitempty"`
	// Unreachable is a cluster that does not answer.
	// +optional
	Unreachable bool `json:"unreachable,omitempty"`
}

// TracePlacement is what the chosen backend asks of member clusters and what placement made of
// it.
type TracePlacement struct {
	// Asked is the clusters asked for: "clusters matching env=prod", "a copy on 2 clusters
	// matching …".
	// +kubebuilder:validation:MaxLength=512
	Asked string `json:"asked"`
	// Policy is Spread or Ordered.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Policy string `json:"policy,omitempty"`
	// Failover is when a Workload leaves a cluster that does not answer: "after 5m0s
	// (hold-down 10m0s)".
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Failover string `json:"failover,omitempty"`
	// Clusters are the registered clusters and why each runs the Workload (or a copy) or not.
	// +optional
	// +kubebuilder:validation:MaxItems=17
	Clusters []TraceCandidate `json:"clusters,omitempty"`
	// OnlyMatching says that the clusters that do not match were left out: a tenant's trace
	// lists only the clusters the Workload may run on.
	// +optional
	OnlyMatching bool `json:"onlyMatching,omitempty"`
	// Placed is false when no cluster matches: the Workload is not placed.
	Placed bool `json:"placed"`
	// Copies are the copies in placement order, on several clusters.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Copies string `json:"copies,omitempty"`
	// Removed are the copies being removed.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Removed string `json:"removed,omitempty"`
}

// TraceDependency is one resource of the Workload.
type TraceDependency struct {
	// Key is the resource's name in spec.resources.
	// +kubebuilder:validation:MaxLength=63
	Key string `json:"key"`
	// Type is the resource's type.
	// +kubebuilder:validation:MaxLength=253
	Type string `json:"type"`
	// Provisioner names the config's provisioner serving it; empty when none does.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Provisioner string `json:"provisioner,omitempty"`
	// Claim is its claim's phase, or "not created".
	// +kubebuilder:validation:MaxLength=32
	Claim string `json:"claim"`
}

// TraceReady is the Workload's Ready condition.
type TraceReady struct {
	// +kubebuilder:validation:MaxLength=16
	Status string `json:"status"`
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Message string `json:"message,omitempty"`
}

// TraceBlocker is one line of In the way: something in the Workload's way, in its own words.
type TraceBlocker struct {
	// Depth is how deep the line is: 0 for what is in the Workload's way, 1 for what holds
	// that, and so on.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=8
	Depth int32 `json:"depth"`
	// What names it: "StatefulSet shop/pg-0a1b2c3d4e5f".
	// +kubebuilder:validation:MaxLength=512
	What string `json:"what"`
	// Says is its own words: its state, reason and message.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Says string `json:"says,omitempty"`
	// Probe names an object of the Workload's namespace whose live state says more than the
	// control plane's answer: scorectl why reads it with the user's own rights and describes
	// it in this line's place.
	// +optional
	Probe *TraceProbe `json:"probe,omitempty"`
}

// What a reader does with a probe's object.
const (
	// TraceLookObject describes the object; the line's What and Says are what its inventory
	// entry says, kept when the object cannot be read.
	TraceLookObject = "Object"
	// TraceLookSecret says whether the Secret exists (it never reads what it holds); the line
	// is shown only when it does not, or cannot be asked.
	TraceLookSecret = "Secret"
	// TraceLookEndpoint describes a route, Ingress or Service; the line is shown only while it
	// waits for a controller.
	TraceLookEndpoint = "Endpoint"
	// TraceLookQuotas lists the namespace's ResourceQuotas (Name is empty).
	TraceLookQuotas = "Quotas"
)

// TraceProbe names the object a line stands for.
type TraceProbe struct {
	// Look is Object, Secret, Endpoint or Quotas.
	// +kubebuilder:validation:Enum=Object;Secret;Endpoint;Quotas
	Look string `json:"look"`
	// +kubebuilder:validation:MaxLength=253
	APIVersion string `json:"apiVersion"`
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
}

// WorkloadTraceList is a list of WorkloadTraces.
//
// +kubebuilder:object:root=true
type WorkloadTraceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkloadTrace `json:"items"`
}

func init() {
	SchemeBuilder.Register(&WorkloadTrace{}, &WorkloadTraceList{})
}
