package v1b1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConfigRollout takes one change of the Orchestrator Config (a revision) to the fleet in
// health-gated waves. It is the platform's: the rollout controller creates one in the control
// plane's namespace for each admitted revision when the config has a rollout policy, and only
// it writes the status; a platform engineer pauses, resumes or aborts it through the spec
// (`scorectl rollout`). Application developers never need it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=crollout,categories=score
// +kubebuilder:printcolumn:name="To",type=string,JSONPath=`.spec.to`,priority=1
// +kubebuilder:printcolumn:name="Wave",type=string,JSONPath=`.status.progress`
// +kubebuilder:printcolumn:name="Affected",type=integer,JSONPath=`.status.affected`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ConfigRollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ConfigRolloutSpec   `json:"spec"`
	Status ConfigRolloutStatus `json:"status,omitempty"`
}

// ConfigRolloutSpec names the change and carries the platform engineer's instructions.
type ConfigRolloutSpec struct {
	// From is the revision the fleet ran before the change ("" for the first revision seen:
	// nothing to roll out from).
	// +optional
	// +kubebuilder:validation:Pattern=`^(sha256:[a-f0-9]{64})?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="from is immutable"
	From string `json:"from,omitempty"`
	// To is the revision rolled out.
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="to is immutable"
	To string `json:"to"`
	// Paused holds the rollout where it is: no further wave starts.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// Aborted renders every Workload of the rollout from From again, for good.
	// +optional
	Aborted bool `json:"aborted,omitempty"`
	// Retry, raised above status.retried, takes a halted rollout up again at the wave that
	// halted it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Retry int64 `json:"retry,omitempty"`
	// Pins render Workloads ("namespace/name") from a kept revision whatever the rollout
	// does, until unpinned; a pinned Workload is left out of its wave's gate. The next
	// rollout carries them over.
	// +optional
	// +kubebuilder:validation:MaxProperties=1000
	Pins map[string]string `json:"pins,omitempty"`
}

// The phases of a rollout.
const (
	RolloutProgressing = "Progressing"
	RolloutPaused      = "Paused"
	RolloutHalted      = "Halted"
	RolloutCompleted   = "Completed"
	RolloutAborted     = "Aborted"
	RolloutSuperseded  = "Superseded"
)

// ConfigRolloutStatus is where the rollout is; only the rollout controller writes it, and
// every orchestrator reads it.
type ConfigRolloutStatus struct {
	// Phase is Progressing, Paused, Halted, Completed, Aborted or Superseded.
	// +optional
	// +kubebuilder:validation:Enum=Progressing;Paused;Halted;Completed;Aborted;Superseded
	Phase string `json:"phase,omitempty"`
	// Wave is the index of the wave under way (or that halted).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Wave int32 `json:"wave"`
	// Progress is "wave N of M", for the printer column.
	// +optional
	Progress string `json:"progress,omitempty"`
	// Affected counts the Workloads the change renders differently.
	// +optional
	Affected int32 `json:"affected"`
	// Waves are the affected Workloads by wave, each listed in the first wave that takes it.
	// +optional
	// +listType=atomic
	Waves []RolloutWave `json:"waves,omitempty"`
	// WaveStarted is when the wave under way started (or was resumed or retried): the
	// progress deadline counts from then.
	// +optional
	WaveStarted *metav1.Time `json:"waveStarted,omitempty"`
	// BakeStarted is when every Workload of the waves so far was rendered from To: the bake
	// time counts from then.
	// +optional
	BakeStarted *metav1.Time `json:"bakeStarted,omitempty"`
	// Retried is the spec.retry last honoured.
	// +optional
	Retried int64 `json:"retried,omitempty"`
	// Message says what the rollout waits for, or why it halted.
	// +optional
	Message string `json:"message,omitempty"`
}

// RolloutWave is one wave.
type RolloutWave struct {
	// Size is the policy's: a count ("1") or a share of the affected Workloads ("10%").
	Size string `json:"size"`
	// Workloads are "namespace/name" of the Workloads this wave takes.
	// +optional
	// +listType=atomic
	Workloads []string `json:"workloads,omitempty"`
	// Failed are the Workloads that failed the health gate in this wave.
	// +optional
	// +listType=atomic
	Failed []string `json:"failed,omitempty"`
}

// +kubebuilder:object:root=true

// ConfigRolloutList is a list of ConfigRollouts.
type ConfigRolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ConfigRollout `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ConfigRollout{}, &ConfigRolloutList{})
}
