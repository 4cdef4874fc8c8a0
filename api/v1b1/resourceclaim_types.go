package v1b1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceClaim asks a provisioner for one dependency of a Workload. The orchestrator writes
// its spec; only the provisioner writes its status. Documentation always writes
// resourceclaims.score.dev, because the core API has a kind of the same name.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rclaim,categories=score
// +kubebuilder:printcolumn:name="Workload",type=string,JSONPath=`.spec.workloadRef.name`
// +kubebuilder:printcolumn:name="Key",type=string,JSONPath=`.spec.key`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.status.instanceCluster`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ResourceClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ResourceClaimSpec   `json:"spec"`
	Status ResourceClaimStatus `json:"status,omitempty"`
}

// LocalWorkloadRef identifies a Workload in the same namespace, by name and UID.
type LocalWorkloadRef struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	UID string `json:"uid"`
}

// DeprovisionPolicy says what happens to a claim and what it provisioned when its Workload
// (or its resource key) goes away.
//
// +kubebuilder:validation:Enum=Delete;Retain;Orphan
type DeprovisionPolicy string

// The deprovision policies.
const (
	// DeprovisionDelete removes the claim and everything it provisioned, and waits for it.
	DeprovisionDelete DeprovisionPolicy = "Delete"
	// DeprovisionRetain removes the claim's ownership and keeps the claim and its data, so a
	// later claim with the same identity re-binds to them.
	DeprovisionRetain DeprovisionPolicy = "Retain"
	// DeprovisionOrphan leaves the claim untouched.
	DeprovisionOrphan DeprovisionPolicy = "Orphan"
)

// ResourceClaimSpec says what is claimed. The identity fields are immutable.
type ResourceClaimSpec struct {
	// WorkloadRef is the Workload that made the claim.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="workloadRef is immutable"
	WorkloadRef LocalWorkloadRef `json:"workloadRef"`

	// Key is the resource name in the Workload's spec.resources.
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="key is immutable"
	Key string `json:"key"`

	// Type is the resource type.
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9-]{0,61}[A-Za-z0-9]$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="type is immutable"
	Type string `json:"type"`

	// Class is the resource class, if any.
	// +optional
	Class string `json:"class,omitempty"`

	// ID shares one instance between claims with the same type, class and id.
	// +optional
	ID string `json:"id,omitempty"`

	// Params are the resource's params with placeholders resolved.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Params *apiextensionsv1.JSON `json:"params,omitempty"`

	// Metadata is the resource's metadata from the Workload.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Metadata *apiextensionsv1.JSON `json:"metadata,omitempty"`

	// DeprovisionPolicy is Delete (default), Retain or Orphan.
	// +optional
	// +kubebuilder:default=Delete
	DeprovisionPolicy DeprovisionPolicy `json:"deprovisionPolicy,omitempty"`

	// Cluster is the member cluster the claim's Workload is placed on (the orchestrator's
	// placement); empty is the hub. The instance is provisioned there unless its definition
	// keeps it on the hub (location: Hub).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Cluster string `json:"cluster,omitempty"`

	// RuntimeClass is the runtime the claim's Workload runs on (its backend's); empty is
	// kubernetes. It chooses among definitions: one that emits Compose services serves
	// docker claims only, and serves them before any other.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	RuntimeClass string `json:"runtimeClass,omitempty"`

	// ConfigRevision is the revision of the Orchestrator Config whose provisioner definitions
	// and classes provision the claim (a fleet rollout's: the orchestrator sets it when the
	// config has a rollout policy); empty is the current revision.
	// +optional
	// +kubebuilder:validation:Pattern=`^(sha256:[a-f0-9]{64})?$`
	ConfigRevision string `json:"configRevision,omitempty"`
}

// ClaimPhase is the progress of a claim.
//
// +kubebuilder:validation:Enum=Pending;Binding;Bound;Failed
type ClaimPhase string

// The claim phases: Pending → Binding → Bound, or Failed.
const (
	ClaimPhasePending ClaimPhase = "Pending"
	ClaimPhaseBinding ClaimPhase = "Binding"
	ClaimPhaseBound   ClaimPhase = "Bound"
	ClaimPhaseFailed  ClaimPhase = "Failed"
)

// ResourceClaimStatus is written only by the provisioner.
//
// +kubebuilder:validation:XValidation:rule="!has(self.outputsAvailable) || !self.outputsAvailable || has(self.outputs) || (has(self.secretRef) && size(self.secretRef.keys) > 0)",message="outputsAvailable requires at least one output in outputs or secretRef.keys"
type ResourceClaimStatus struct {
	// ObservedGeneration is the spec generation the provisioner last processed.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase is Pending, Binding, Bound or Failed.
	// +optional
	Phase ClaimPhase `json:"phase,omitempty"`

	// Reason is an abstract reason from the Workload reason set.
	// +optional
	Reason Reason `json:"reason,omitempty"`

	// Message explains the phase for platform engineers.
	// +optional
	Message string `json:"message,omitempty"`

	// Provisioner is the URI of the provisioner definition that serves the claim.
	// +optional
	Provisioner string `json:"provisioner,omitempty"`
	// ConfigRevision is the revision the claim was last provisioned from, when its spec
	// names one (a rollout's).
	// +optional
	ConfigRevision string `json:"configRevision,omitempty"`

	// Outputs are the non-secret outputs, keyed by output name; values may be nested.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=256
	// +kubebuilder:pruning:PreserveUnknownFields
	Outputs *apiextensionsv1.JSON `json:"outputs,omitempty"`

	// Instance is the identity hash of the claimed instance. The runtime labels the pods of
	// the Workloads that consume it consumer.score.dev/<instance>=true, which the instance's
	// NetworkPolicy admits.
	// +optional
	Instance string `json:"instance,omitempty"`
	// InstanceNamespace is where the claimed instance lives when the platform shares it across
	// namespaces (its sharing namespace); empty when it lives in the claim's namespace.
	// +optional
	InstanceNamespace string `json:"instanceNamespace,omitempty"`
	// InstanceCluster is the member cluster the instance is provisioned on; empty is the hub.
	// +optional
	InstanceCluster string `json:"instanceCluster,omitempty"`
	// PlatformPolicy is the platform's deprovision policy for the claim's instance, which its
	// release follows whatever spec.deprovisionPolicy says: recorded when the provisioner binds
	// the claim to an instance shared by a definition whose sharing allows consumers no
	// override (allowPolicyOverride), and kept until it binds it again. Empty: the spec's
	// policy decides.
	// +optional
	PlatformPolicy DeprovisionPolicy `json:"platformPolicy,omitempty"`
	// SecretRef names the Secret, in the claim's namespace, that holds the secret outputs.
	// +optional
	SecretRef *OutputsSecretRef `json:"secretRef,omitempty"`

	// OutputsAvailable is true when every declared output is published.
	// +optional
	OutputsAvailable bool `json:"outputsAvailable,omitempty"`

	// Conditions carry the provisioner's detail.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Resources is the inventory of objects the provisioner applied for the claim, with
	// their health.
	// +optional
	Resources []AppliedObject `json:"resources,omitempty"`
}

// OutputsSecretName is the name of the Secret, in a claim's namespace, that holds the secret
// outputs of the claim named claim. The provisioner writes it only while the claim controls it.
func OutputsSecretName(claim string) string { return claim + "-outputs" }

// ComposeSecretName is the Secret in which a definition in score-compose's format leaves the
// Compose fragment of an instance (by its identity hash) for the Docker agent of its namespace.
func ComposeSecretName(instance string) string { return "score-compose-" + instance }

// OutputsSecretRef names a Secret and the output keys it holds.
type OutputsSecretRef struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Keys are the output keys held in the Secret.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +listType=set
	Keys []string `json:"keys,omitempty"`
}

// ResourceClaimList is a list of ResourceClaims.
//
// +kubebuilder:object:root=true
type ResourceClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceClaim `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ResourceClaim{}, &ResourceClaimList{})
}
