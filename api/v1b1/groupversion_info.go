// Package v1b1 contains the score.dev/v1b1 API: the public Workload and the internal
// ResourceClaim, WorkloadPlan and WorkloadExposure kinds.
//
// +kubebuilder:object:generate=true
// +groupName=score.dev
package v1b1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "score.dev", Version: "v1b1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
