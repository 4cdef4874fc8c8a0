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
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Config",type=string,JSONPath=`.spec.configRevision`,priority=1
type WorkloadPlan struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkloadPlanSpec   `json:"spec"`
	Status WorkloadPlanStatus `json:"status,omitempty"`
}

// TemplateKind is how a backend template renders.
//
// +kubebuilder:validation:Enum=manifests;helm;kustomize;compose
type TemplateKind string

// The template kinds.
const (
	TemplateManifests TemplateKind = "manifests"
	TemplateHelm      TemplateKind = "helm"
	TemplateKustomize TemplateKind = "kustomize"
	// TemplateCompose is a Docker backend's: no template to fetch, the Docker runtime runs the
	// plan's containers as they are (internal/rendering/compose), with the backend's values.
	TemplateCompose TemplateKind = "compose"
)

// TemplateRef is an immutable reference to a backend template.
type TemplateRef struct {
	Kind TemplateKind `json:"kind"`
	// Ref is oci://<repository>@sha256:<hex> or configmap://<namespace>/<name>[/<key>]; empty
	// for a compose template, which has nothing to fetch.
	// +optional
	Ref string `json:"ref,omitempty"`
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

	// ConfigRevision is the revision of the Orchestrator Config (the sha256 of the document)
	// the plan was last written from. A later revision that renders the plan the same leaves
	// the plan, and this field, as they were.
	// +optional
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	ConfigRevision string `json:"configRevision,omitempty"`

	// Cluster is the member cluster the runtime applies the plan into: the name of a
	// registered cluster (a Secret labelled score.dev/secret-type=cluster in the control
	// plane's namespace). Empty is the hub, the cluster the controllers run in. The
	// orchestrator chooses it by the backend's placement and keeps it while it still fits.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Cluster string `json:"cluster,omitempty"`

	// Kinds, when set, are the only kinds the backend's template may create, as Kind or
	// Kind.group (Deployment.apps): the backend's kinds, within the config's allowedKinds.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Kinds []string `json:"kinds,omitempty"`

	// Pods is what the render's pods may do beyond the pod rules (docs/security.md): the
	// backend's pods, and probeHosts when the platform admits probe hosts in the Workload's
	// namespace. The runtime refuses an object whose pod goes beyond it.
	// +optional
	Pods *PlanPods `json:"pods,omitempty"`
}

// PlanPods is what a plan's pods may do beyond the pod rules.
type PlanPods struct {
	// ServiceAccountName is the ServiceAccount the pods run as; empty, the namespace's
	// default.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// ServiceAccountToken mounts the ServiceAccount's token in the pods; without it the
	// runtime's pods carry automountServiceAccountToken: false.
	// +optional
	ServiceAccountToken bool `json:"serviceAccountToken,omitempty"`

	// Allow names the pod rules the pods may break (hostNamespaces, seccomp, probeHosts...).
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Allow []string `json:"allow,omitempty"`
}

// OutputRef points at one output of one claim.
type OutputRef struct {
	// ClaimKey is the resource name in the Workload.
	ClaimKey string `json:"claimKey"`
	// OutputKey is the output name, dotted for nested outputs; empty for the whole output map.
	// +optional
	OutputKey string `json:"outputKey,omitempty"`
}

// Projection is how claim outputs reach each container.
type Projection struct {
	// Containers holds one entry per container, sorted by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	Containers []ContainerProjection `json:"containers,omitempty"`
}

// ContainerProjection is the projection for one container: everything of the container
// that may hold placeholders. The rest (image, resources, probes, before) is in values.
type ContainerProjection struct {
	Name string `json:"name"`
	// ImageFrom supplies the image from a claim output when the Workload's image is ".".
	// +optional
	ImageFrom *OutputRef `json:"imageFrom,omitempty"`
	// Command overrides the entrypoint, one entry per argument.
	// +optional
	Command []ValueProjection `json:"command,omitempty"`
	// Args are the arguments, one entry per argument.
	// +optional
	Args []ValueProjection `json:"args,omitempty"`
	// Env lists the variables, sorted by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	Env []EnvProjection `json:"env,omitempty"`
	// Files lists the files to mount, sorted by target.
	// +optional
	// +listType=map
	// +listMapKey=target
	Files []FileProjection `json:"files,omitempty"`
	// Volumes lists the volumes to mount, sorted by target.
	// +optional
	// +listType=map
	// +listMapKey=target
	Volumes []VolumeProjection `json:"volumes,omitempty"`
}

// ValueProjection is one string: a literal value, exactly one output, or parts that
// compose literals and outputs in order.
type ValueProjection struct {
	// +optional
	Value *string `json:"value,omitempty"`
	// +optional
	From *OutputRef `json:"from,omitempty"`
	// +optional
	Parts []ValuePart `json:"parts,omitempty"`
}

// EnvProjection is one environment variable.
type EnvProjection struct {
	Name            string `json:"name"`
	ValueProjection `json:",inline"`
}

// ValuePart is a literal or an output reference.
type ValuePart struct {
	// +optional
	Literal *string `json:"literal,omitempty"`
	// +optional
	From *OutputRef `json:"from,omitempty"`
}

// FileProjection is a file to mount: text composed from literals and outputs, or binary.
type FileProjection struct {
	Target string `json:"target"`
	// +optional
	Mode *string `json:"mode,omitempty"`
	// Parts compose the text content.
	// +optional
	Parts []ValuePart `json:"parts,omitempty"`
	// BinaryContent is standard base64 content.
	// +optional
	BinaryContent *string `json:"binaryContent,omitempty"`
	// Secret is true when a part comes from a secret output: the runtime mounts it from a Secret.
	// +optional
	Secret bool `json:"secret,omitempty"`
}

// VolumeProjection is a volume to mount. From with an empty outputKey is the whole output
// map of the claim, whose "source" output is the volume source (score-k8s's convention).
type VolumeProjection struct {
	Target string `json:"target"`
	// +optional
	From *OutputRef `json:"from,omitempty"`
	// Source is a literal volume reference when the Workload names no claim.
	// +optional
	Source *string `json:"source,omitempty"`
	// +optional
	Path *string `json:"path,omitempty"`
	// +optional
	ReadOnly *bool `json:"readOnly,omitempty"`
}

// PlanClaim is a claim the plan depends on.
type PlanClaim struct {
	Key       string `json:"key"`
	ClaimName string `json:"claimName"`
	// SecretName is the Secret holding the claim's secret outputs, if any; a secret output is
	// the key of the same name in it.
	// +optional
	SecretName string `json:"secretName,omitempty"`
	// SecretKeys are the claim's secret outputs.
	// +optional
	SecretKeys []string `json:"secretKeys,omitempty"`
	// Instance is the claimed instance's identity hash: the pods carry
	// consumer.score.dev/<instance>=true.
	// +optional
	Instance string `json:"instance,omitempty"`
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
	// Cluster is the member cluster the object is in; empty is the hub.
	// +optional
	Cluster    string `json:"cluster,omitempty"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// UID is the object's as it was applied: it is deleted (pruned, released) only while it is
	// still that object, never another one created under its name since.
	// +optional
	UID string `json:"uid,omitempty"`
	// Health is Current, InProgress, Failed or Unknown (kstatus, or the config's health
	// rule for the kind).
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
