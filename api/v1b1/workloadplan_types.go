package v1b1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkloadPlan is the orchestrator's intermediate representation of one Workload for one
// runtime: the selected backend, its template reference, the composed non-secret values and
// the projection of claim outputs. The orchestrator writes its spec; only the runtime writes
// its status. It is named after its Workload.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wplan,categories=score
// +kubebuilder:printcolumn:name="Runtime",type=string,JSONPath=`.spec.runtimeClass`
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.spec.backendId`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WorkloadPlan struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkloadPlanSpec   `json:"spec"`
	Status WorkloadPlanStatus `json:"status,omitempty"`
}

// TemplateKind is how a backend template renders.
//
// +kubebuilder:validation:Enum=manifests;helm;kustomize
type TemplateKind string

// The template kinds.
const (
	TemplateManifests TemplateKind = "manifests"
	TemplateHelm      TemplateKind = "helm"
	TemplateKustomize TemplateKind = "kustomize"
)

// TemplateRef is an immutable reference to a backend template.
type TemplateRef struct {
	Kind TemplateKind `json:"kind"`
	// Ref is oci://<repository>@sha256:<hex> or configmap://<namespace>/<name>[/<key>].
	// +kubebuilder:validation:MinLength=1
	Ref string `json:"ref"`
	// Digest is the sha256 digest of the content ("sha256:<hex>").
	// +optional
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	Digest string `json:"digest,omitempty"`
}

// WorkloadPlanSpec is written by the orchestrator, and only when its content changes.
type WorkloadPlanSpec struct {
	// WorkloadRef is the Workload this plan realises.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="workloadRef is immutable"
	WorkloadRef LocalWorkloadRef `json:"workloadRef"`

	// ObservedWorkloadGeneration is the Workload generation the plan was built from.
	ObservedWorkloadGeneration int64 `json:"observedWorkloadGeneration"`

	// Profile is the selected abstract profile.
	// +optional
	Profile string `json:"profile,omitempty"`

	// RuntimeClass is the selected runtime, for example kubernetes.
	// +kubebuilder:validation:MinLength=1
	RuntimeClass string `json:"runtimeClass"`

	// BackendID is the selected backend.
	// +kubebuilder:validation:MinLength=1
	BackendID string `json:"backendId"`

	// Template is the backend's template reference.
	Template TemplateRef `json:"template"`

	// Values are the composed non-secret values: defaults ⊕ normalize(Workload) ⊕ outputs.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// Projection maps claim outputs into the containers without copying secret values.
	// +optional
	Projection Projection `json:"projection,omitempty"`

	// Claims summarises the claims the plan depends on.
	// +optional
	// +listType=map
	// +listMapKey=key
	Claims []PlanClaim `json:"claims,omitempty"`
}

// OutputRef points at one output of one claim.
type OutputRef struct {
	// ClaimKey is the resource name in the Workload.
	ClaimKey string `json:"claimKey"`
	// OutputKey is the output name, dotted for nested outputs.
	OutputKey string `json:"outputKey"`
}

// Projection is how claim outputs reach each container.
type Projection struct {
	// Containers holds one entry per container, sorted by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	Containers []ContainerProjection `json:"containers,omitempty"`
}

// ContainerProjection is the projection for one container.
type ContainerProjection struct {
	Name string `json:"name"`
	// ImageFrom supplies the image from a claim output when the Workload's image is ".".
	// +optional
	ImageFrom *OutputRef `json:"imageFrom,omitempty"`
	// Env lists the variables, sorted by name; each has a literal value or comes from an output.
	// +optional
	// +listType=map
	// +listMapKey=name
	Env []EnvProjection `json:"env,omitempty"`
	// Files lists files whose content references outputs.
	// +optional
	// +listType=map
	// +listMapKey=target
	Files []FileProjection `json:"files,omitempty"`
	// Volumes lists volumes whose source is a claim output.
	// +optional
	// +listType=map
	// +listMapKey=target
	Volumes []VolumeProjection `json:"volumes,omitempty"`
}

// EnvProjection is one environment variable. A value mixing text and secret outputs is
// expressed as a template over parts; the runtime composes it with $(VAR) references.
type EnvProjection struct {
	Name string `json:"name"`
	// +optional
	Value *string `json:"value,omitempty"`
	// +optional
	From *OutputRef `json:"from,omitempty"`
	// Parts compose a value from literals and outputs, in order.
	// +optional
	Parts []ValuePart `json:"parts,omitempty"`
}

// ValuePart is a literal or an output reference.
type ValuePart struct {
	// +optional
	Literal *string `json:"literal,omitempty"`
	// +optional
	From *OutputRef `json:"from,omitempty"`
}

// FileProjection is a file whose content is composed from literals and outputs.
type FileProjection struct {
	Target string `json:"target"`
	// +optional
	Mode *string `json:"mode,omitempty"`
	// +optional
	Parts []ValuePart `json:"parts,omitempty"`
	// Secret is true when any part comes from a secret output: the runtime mounts it from a Secret.
	// +optional
	Secret bool `json:"secret,omitempty"`
}

// VolumeProjection is a volume whose source is a claim output.
type VolumeProjection struct {
	Target string    `json:"target"`
	From   OutputRef `json:"from"`
	// +optional
	Path *string `json:"path,omitempty"`
	// +optional
	ReadOnly *bool `json:"readOnly,omitempty"`
}

// PlanClaim is a claim the plan depends on.
type PlanClaim struct {
	Key       string `json:"key"`
	ClaimName string `json:"claimName"`
	// SecretName is the Secret holding the claim's secret outputs, if any.
	// +optional
	SecretName string `json:"secretName,omitempty"`
}

// PlanPhase is the runtime's progress on a plan.
//
// +kubebuilder:validation:Enum=Pending;Planning;Projected;Failed
type PlanPhase string

// The plan phases: Pending → Planning → Projected, or Failed.
const (
	PlanPhasePending   PlanPhase = "Pending"
	PlanPhasePlanning  PlanPhase = "Planning"
	PlanPhaseProjected PlanPhase = "Projected"
	PlanPhaseFailed    PlanPhase = "Failed"
)

// WorkloadPlanStatus is written only by the runtime.
type WorkloadPlanStatus struct {
	// ObservedGeneration is the plan generation the runtime last processed.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase is Pending, Planning, Projected or Failed.
	// +optional
	Phase PlanPhase `json:"phase,omitempty"`
	// Reason is an abstract reason from the Workload reason set.
	// +optional
	Reason Reason `json:"reason,omitempty"`
	// Message is the runtime's detail for platform engineers.
	// +optional
	Message string `json:"message,omitempty"`
	// Conditions carry the runtime's detail.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Objects is the inventory of applied objects with their health.
	// +optional
	Objects []AppliedObject `json:"objects,omitempty"`
}

// AppliedObject is one object the runtime applied, and its health.
type AppliedObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Health is Current, InProgress, Failed or Unknown (kstatus).
	// +optional
	Health string `json:"health,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// WorkloadPlanList is a list of WorkloadPlans.
//
// +kubebuilder:object:root=true
type WorkloadPlanList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkloadPlan `json:"items"`
}

func init() {
	SchemeBuilder.Register(&WorkloadPlan{}, &WorkloadPlanList{})
}
