package v1b1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Workload is the Score v1b1 workload as a Kubernetes resource: the only kind application
// developers write. Its name is the Score metadata.name; its annotations are the Score
// metadata.annotations.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wl,categories=score
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.status.endpoint`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z0-9][a-z0-9-]{0,61}[a-z0-9]$')",message="metadata.name: a Workload name must be 2-63 characters of a-z, 0-9 and '-', starting and ending with a letter or digit (a Score workload name)"
type Workload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkloadSpec   `json:"spec"`
	Status WorkloadStatus `json:"status,omitempty"`
}

// WorkloadSpec is the Score v1b1 workload without apiVersion and metadata.
//
// +kubebuilder:validation:XValidation:rule="self.containers.all(c, !has(self.containers[c].before) || self.containers[c].before.all(b, b != c))",message="containers: a container's before must not name the container itself"
// +kubebuilder:validation:XValidation:rule="self.containers.all(c, !has(self.containers[c].before) || self.containers[c].before.all(b, b in self.containers))",message="containers: before must name another container of this workload"
type WorkloadSpec struct {
	// Containers are the named containers of the workload. Names are RFC 1123 labels of 2-63
	// characters.
	//
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[a-z0-9][a-z0-9-]{0,61}[a-z0-9]$'))",messageExpression="'container name \"' + self.filter(k, !k.matches('^[a-z0-9][a-z0-9-]{0,61}[a-z0-9]$'))[0] + '\" must be 2-63 characters of a-z, 0-9 and -, starting and ending with a letter or digit'"
	Containers map[string]Container `json:"containers"`

	// Service describes the network ports the workload publishes.
	// +optional
	Service *Service `json:"service,omitempty"`

	// Resources are the workload's dependencies, keyed by resource name (an RFC 1123 label).
	//
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[a-z0-9][a-z0-9-]{0,61}[a-z0-9]$'))",messageExpression="'resource name \"' + self.filter(k, !k.matches('^[a-z0-9][a-z0-9-]{0,61}[a-z0-9]$'))[0] + '\" must be 2-63 characters of a-z, 0-9 and -, starting and ending with a letter or digit'"
	Resources map[string]Resource `json:"resources,omitempty"`
}

// Container is one container of the workload.
type Container struct {
	// Image is the container image; "." means the image is supplied at deploy time by a build
	// dependency.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Image string `json:"image"`

	// Command overrides the image's entrypoint.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	Command []string `json:"command,omitempty"`

	// Args overrides the arguments passed to the entrypoint.
	// +optional
	// +kubebuilder:validation:MaxItems=1024
	Args []string `json:"args,omitempty"`

	// Variables are environment variables; values may hold placeholders.
	//
	// +optional
	// +kubebuilder:validation:MaxProperties=512
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 0 && !k.contains('='))",message="variables: a variable name must be non-empty and must not contain '='"
	Variables map[string]string `json:"variables,omitempty"`

	// Files are extra files mounted into the container, keyed by target path.
	// +optional
	// +kubebuilder:validation:MaxProperties=128
	Files map[string]ContainerFile `json:"files,omitempty"`

	// Volumes are volumes mounted into the container, keyed by target path.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Volumes map[string]ContainerVolume `json:"volumes,omitempty"`

	// Resources are the container's compute requests and limits.
	// +optional
	Resources *ContainerResources `json:"resources,omitempty"`

	// LivenessProbe tells when the container must be restarted.
	// +optional
	LivenessProbe *ContainerProbe `json:"livenessProbe,omitempty"`

	// ReadinessProbe tells when the container can take traffic.
	// +optional
	ReadinessProbe *ContainerProbe `json:"readinessProbe,omitempty"`

	// Before names the containers that must reach a state before this one starts.
	//
	// +optional
	// +kubebuilder:validation:MaxProperties=31
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[a-z0-9][a-z0-9-]{0,61}[a-z0-9]$'))",message="before: container names must be 2-63 characters of a-z, 0-9 and -, starting and ending with a letter or digit"
	Before map[string]ContainerBefore `json:"before,omitempty"`
}

// ContainerFile is a file mounted into a container. Exactly one of content, binaryContent and
// source is set.
//
// +kubebuilder:validation:XValidation:rule="[has(self.content), has(self.binaryContent), has(self.source)].filter(x, x).size() == 1",message="exactly one of content, binaryContent or source must be set"
type ContainerFile struct {
	// Mode is the octal file mode, for example "0600".
	// +optional
	// +kubebuilder:validation:Pattern=`^0?[0-7]{3}$`
	Mode *string `json:"mode,omitempty"`

	// Source is a path to the content, relative to the Score file. The converter inlines it
	// client side; a Workload that still carries one is reported as SpecInvalid.
	// +optional
	// +kubebuilder:validation:MinLength=1
	Source *string `json:"source,omitempty"`

	// Content is the inline UTF-8 content; placeholders expand unless NoExpand is set.
	// +optional
	Content *string `json:"content,omitempty"`

	// BinaryContent is standard base64 content; it never expands placeholders.
	// +optional
	BinaryContent *string `json:"binaryContent,omitempty"`

	// NoExpand turns off placeholder expansion in Content.
	// +optional
	NoExpand *bool `json:"noExpand,omitempty"`
}

// ContainerVolume mounts a volume, usually a resource output, into the container.
type ContainerVolume struct {
	// Source is the external volume reference, usually ${resources.<name>.source}.
	// +kubebuilder:validation:MinLength=1
	Source string `json:"source"`

	// Path is an optional sub path in the volume.
	// +optional
	Path *string `json:"path,omitempty"`

	// ReadOnly mounts the volume read-only.
	// +optional
	ReadOnly *bool `json:"readOnly,omitempty"`
}

// ContainerResources are compute requests and limits.
type ContainerResources struct {
	// +optional
	Limits *ResourcesLimits `json:"limits,omitempty"`
	// +optional
	Requests *ResourcesLimits `json:"requests,omitempty"`
}

// ResourcesLimits is an amount of CPU and memory.
type ResourcesLimits struct {
	// CPU in whole or fractional CPUs; "m" means milli-CPUs ("2", "0.5", "125m").
	// +optional
	// +kubebuilder:validation:Pattern=`^\d+(?:m|\.\d+)?$`
	CPU *string `json:"cpu,omitempty"`

	// Memory in bytes with an optional unit ("128M", "1.5Gi").
	// +optional
	// +kubebuilder:validation:Pattern=`^(0\.\d+|[1-9]\d*(\.\d+)?)(K|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$`
	Memory *string `json:"memory,omitempty"`
}

// ContainerProbe is an HTTP or exec health probe. When both are given, exec is preferred.
//
// +kubebuilder:validation:XValidation:rule="has(self.httpGet) || has(self.exec)",message="a probe must set httpGet or exec"
type ContainerProbe struct {
	// +optional
	HTTPGet *HTTPProbe `json:"httpGet,omitempty"`
	// +optional
	Exec *ExecProbe `json:"exec,omitempty"`
}

// HTTPProbe is an HTTP GET probe.
type HTTPProbe struct {
	// Host to connect to; defaults to the workload's address.
	// +optional
	// +kubebuilder:validation:MinLength=1
	Host *string `json:"host,omitempty"`

	// Scheme is HTTP (default) or HTTPS.
	// +optional
	// +kubebuilder:validation:Enum=HTTP;HTTPS
	Scheme *string `json:"scheme,omitempty"`

	// Path to request.
	Path string `json:"path"`

	// Port to connect to.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`

	// HTTPHeaders are extra request headers.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	HTTPHeaders []HTTPHeader `json:"httpHeaders,omitempty"`
}

// HTTPHeader is one request header of an HTTP probe.
type HTTPHeader struct {
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_-]+$`
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	Value string `json:"value"`
}

// ExecProbe runs a command in the container.
type ExecProbe struct {
	// Command and arguments to run.
	// +kubebuilder:validation:MaxItems=256
	Command []string `json:"command"`
}

// ContainerBefore says what state a preceding container must reach.
type ContainerBefore struct {
	// Ready is started, healthy or complete.
	// +kubebuilder:validation:Enum=started;healthy;complete
	Ready string `json:"ready"`
}

// Service describes the ports the workload publishes.
type Service struct {
	// Ports are keyed by port name (an RFC 1123 label).
	//
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[a-z0-9][a-z0-9-]{0,61}[a-z0-9]$'))",messageExpression="'port name \"' + self.filter(k, !k.matches('^[a-z0-9][a-z0-9-]{0,61}[a-z0-9]$'))[0] + '\" must be 2-63 characters of a-z, 0-9 and -, starting and ending with a letter or digit'"
	Ports map[string]ServicePort `json:"ports,omitempty"`
}

// ServicePort is one published port.
type ServicePort struct {
	// Port is the published port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`

	// Protocol is TCP (default) or UDP.
	// +optional
	// +kubebuilder:validation:Enum=TCP;UDP
	Protocol *string `json:"protocol,omitempty"`

	// TargetPort is the container port; it defaults to Port.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	TargetPort *int32 `json:"targetPort,omitempty"`
}

// Resource is a dependency of the workload.
type Resource struct {
	// Type of the resource, for example postgres.
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9-]{0,61}[A-Za-z0-9]$`
	Type string `json:"type"`

	// Class is an optional specialisation of the type.
	// +optional
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9-]{0,61}[A-Za-z0-9]$`
	Class *string `json:"class,omitempty"`

	// ID shares one instance between resources with the same type, class and id.
	// +optional
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+(?:-+[a-z0-9]+)*(?:\.[a-z0-9]+(?:-+[a-z0-9]+)*)*$`
	ID *string `json:"id,omitempty"`

	// Metadata of the resource (annotations and free-form keys).
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Metadata *apiextensionsv1.JSON `json:"metadata,omitempty"`

	// Params are free-form provisioning parameters; values may hold placeholders.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Params *apiextensionsv1.JSON `json:"params,omitempty"`
}

// WorkloadStatus is the one abstract status of a Workload, written only by the orchestrator.
type WorkloadStatus struct {
	// ObservedGeneration is the generation the orchestrator last processed completely.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Endpoint is the canonical URI of the workload, or null.
	// +optional
	// +nullable
	Endpoint *string `json:"endpoint,omitempty"`

	// Conditions are InputsValid, ClaimsReady, RuntimeReady and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Claims summarises each dependency.
	// +optional
	// +listType=map
	// +listMapKey=key
	Claims []ClaimSummary `json:"claims,omitempty"`

	// LastHandledReconcileAt echoes the score.dev/reconcile-requested-at annotation once a pass
	// that saw it has completed (and passed it on to the Workload's claims and plan).
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
}

// ClaimSummary is the abstract state of one dependency.
type ClaimSummary struct {
	// Key is the resource name in spec.resources.
	Key string `json:"key"`
	// Phase is Pending, Binding, Bound or Failed.
	// +optional
	Phase ClaimPhase `json:"phase,omitempty"`
	// Reason is an abstract reason from the closed set.
	// +optional
	Reason Reason `json:"reason,omitempty"`
	// Message is one neutral sentence.
	// +optional
	Message string `json:"message,omitempty"`
	// OutputsAvailable is true when every declared output is published.
	// +optional
	OutputsAvailable bool `json:"outputsAvailable,omitempty"`
}

// WorkloadList is a list of Workloads.
//
// +kubebuilder:object:root=true
type WorkloadList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Workload `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Workload{}, &WorkloadList{})
}
