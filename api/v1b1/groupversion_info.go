// Package v1b1 contains the score.dev/v1b1 API: the public Workload and the internal
// ResourceClaim, WorkloadPlan and WorkloadExposure kinds, and the platform's ConfigRollout.
//
// +kubebuilder:object:generate=true
// +groupName=score.dev
package v1b1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "score.dev", Version: "v1b1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = &Builder{}

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Builder collects the kinds each type's file registers and adds them to a scheme, as
// controller-runtime's scheme.Builder does, on apimachinery alone: the pure packages that read
// these types then depend on no client (TestImportRestrictions).
//
// +kubebuilder:object:generate=false
type Builder struct{ objects []runtime.Object }

// Register adds kinds to the builder.
func (b *Builder) Register(objects ...runtime.Object) { b.objects = append(b.objects, objects...) }

// AddToScheme adds the registered kinds to s under GroupVersion.
func (b *Builder) AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, b.objects...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
