package testenv

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// WorkloadOption changes a Workload that Workload builds.
type WorkloadOption func(*scorev1b1.Workload)

// Workload builds a Workload of one container, main, running nginx:1.27, changed by opts in
// order.
func Workload(ns, name string, opts ...WorkloadOption) *scorev1b1.Workload {
	w := &scorev1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       scorev1b1.WorkloadSpec{Containers: map[string]scorev1b1.Container{"main": {Image: "nginx:1.27"}}},
	}
	for _, o := range opts {
		o(w)
	}
	return w
}

// WithPort publishes a port of the Workload's service.
func WithPort(name string, port int32) WorkloadOption {
	return func(w *scorev1b1.Workload) {
		if w.Spec.Service == nil {
			w.Spec.Service = &scorev1b1.Service{}
		}
		if w.Spec.Service.Ports == nil {
			w.Spec.Service.Ports = map[string]scorev1b1.ServicePort{}
		}
		w.Spec.Service.Ports[name] = scorev1b1.ServicePort{Port: port}
	}
}

// WithVar sets a variable of the main container.
func WithVar(name, value string) WorkloadOption {
	return func(w *scorev1b1.Workload) {
		c := w.Spec.Containers["main"]
		if c.Variables == nil {
			c.Variables = map[string]string{}
		}
		c.Variables[name] = value
		w.Spec.Containers["main"] = c
	}
}

// WithVolume mounts source (a ${resources.<key>} reference or a plain name) at target in the
// main container.
func WithVolume(target, source string) WorkloadOption {
	return func(w *scorev1b1.Workload) {
		c := w.Spec.Containers["main"]
		if c.Volumes == nil {
			c.Volumes = map[string]scorev1b1.ContainerVolume{}
		}
		c.Volumes[target] = scorev1b1.ContainerVolume{Source: source}
		w.Spec.Containers["main"] = c
	}
}

// WithAnnotation sets an annotation of the Workload.
func WithAnnotation(key, value string) WorkloadOption {
	return func(w *scorev1b1.Workload) {
		if w.Annotations == nil {
			w.Annotations = map[string]string{}
		}
		w.Annotations[key] = value
	}
}

// ResourceOption changes a resource that WithResource declares.
type ResourceOption func(*scorev1b1.Resource)

// WithResource declares the resource key of type typ, changed by opts in order.
func WithResource(key, typ string, opts ...ResourceOption) WorkloadOption {
	return func(w *scorev1b1.Workload) {
		if w.Spec.Resources == nil {
			w.Spec.Resources = map[string]scorev1b1.Resource{}
		}
		r := scorev1b1.Resource{Type: typ}
		for _, o := range opts {
			o(&r)
		}
		w.Spec.Resources[key] = r
	}
}

// ResourceID gives the resource an id: the resources of one type and id share an instance.
func ResourceID(id string) ResourceOption {
	return func(r *scorev1b1.Resource) { r.ID = ptr.To(id) }
}

// ResourceParams sets the resource's params, a JSON object.
func ResourceParams(params string) ResourceOption {
	return func(r *scorev1b1.Resource) { r.Params = &apiextensionsv1.JSON{Raw: []byte(params)} }
}

// ResourceAnnotation sets the only annotation of the resource's metadata (such as
// score.dev/deprovision-policy).
func ResourceAnnotation(key, value string) ResourceOption {
	return func(r *scorev1b1.Resource) {
		r.Metadata = &apiextensionsv1.JSON{Raw: []byte(`{"annotations":{"` + key + `":"` + value + `"}}`)}
	}
}

// Condition returns the Workload's condition of type typ, or the zero Condition when it has
// none.
func Condition(w *scorev1b1.Workload, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(w.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}
