package v1b1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkloadExposure carries the endpoints a runtime publishes for one Workload. The
// orchestrator's registrar stage writes its spec; only the runtime writes its status; the
// orchestrator mirrors status.exposures[0].url into Workload.status.endpoint.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wexp,categories=score
// +kubebuilder:printcolumn:name="Runtime",type=string,JSONPath=`.spec.runtimeClass`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.exposures[0].url`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WorkloadExposure struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkloadExposureSpec   `json:"spec"`
	Status WorkloadExposureStatus `json:"status,omitempty"`
}

// WorkloadRef identifies a Workload by name, namespace and UID.
type WorkloadRef struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// +kubebuilder:validation:MinLength=1
	UID string `json:"uid"`
}

// WorkloadExposureSpec is written by the orchestrator's registrar stage.
type WorkloadExposureSpec struct {
	// WorkloadRef is the Workload whose endpoints this object carries.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="workloadRef is immutable"
	WorkloadRef WorkloadRef `json:"workloadRef"`
	// RuntimeClass is the selected runtime.
	// +kubebuilder:validation:MinLength=1
	RuntimeClass string `json:"runtimeClass"`
	// ObservedWorkloadGeneration is the Workload generation the spec was written for.
	ObservedWorkloadGeneration int64 `json:"observedWorkloadGeneration"`
}

// ExposureScope is who can reach an endpoint.
//
// +kubebuilder:validation:Enum=Public;ClusterLocal;VPC;Other
type ExposureScope string

// The exposure scopes.
const (
	ScopePublic       ExposureScope = "Public"
	ScopeClusterLocal ExposureScope = "ClusterLocal"
	ScopeVPC          ExposureScope = "VPC"
	ScopeOther        ExposureScope = "Other"
)

// Exposure is one published endpoint.
//
// +kubebuilder:validation:XValidation:rule="isURL(self.url) && self.url.matches('^[A-Za-z][A-Za-z0-9+.-]*://[^/?#\\\\s]+')",message="url must be an absolute URI with a scheme and a host"
type Exposure struct {
	// URL is the endpoint, an absolute URI.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`
	// Priority orders exposures; higher wins.
	// +optional
	Priority int32 `json:"priority,omitempty"`
	// Scope is Public, ClusterLocal, VPC or Other.
	// +optional
	Scope ExposureScope `json:"scope,omitempty"`
	// SchemeHint is HTTP, HTTPS, GRPC, TCP or OTHER.
	// +optional
	// +kubebuilder:validation:Enum=HTTP;HTTPS;GRPC;TCP;OTHER
	SchemeHint string `json:"schemeHint,omitempty"`
	// Reachable tells whether the endpoint currently has ready backends.
	// +optional
	Reachable *bool `json:"reachable,omitempty"`
}

// WorkloadExposureStatus is written only by the runtime.
type WorkloadExposureStatus struct {
	// ObservedWorkloadGeneration is the Workload generation these exposures belong to.
	// +optional
	ObservedWorkloadGeneration int64 `json:"observedWorkloadGeneration,omitempty"`
	// Exposures are ordered by priority, best first.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Exposures []Exposure `json:"exposures,omitempty"`
	// Conditions are the runtime's conditions (Provisioning, LBPending, IngressPending,
	// Healthy, Degraded...), normalised by the orchestrator's mirror.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WorkloadExposureList is a list of WorkloadExposures.
//
// +kubebuilder:object:root=true
type WorkloadExposureList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkloadExposure `json:"items"`
}

func init() {
	SchemeBuilder.Register(&WorkloadExposure{}, &WorkloadExposureList{})
}
