// Package prepare is the pure step of an apply: an object's kind allowed (the config's
// allowedKinds, the owner's kinds), its pods within the pod rules (internal/config/podrules), its
// namespace (the owner's), its owner's identity labels and annotations and
// controller reference, and its stage (definitions first). The runtime, the provisioner and
// the offline render prepare through it, so the render shows exactly what the controllers
// apply (internal/objects/apply applies what it prepared).
package prepare

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/podrules"
)

// ErrNotAllowed is an object its owner may not apply: of a kind the platform does not allow
// (the config's allowedKinds, the owner's kinds), in a namespace other than the owner's, or
// carrying a pod that breaks the pod rules (internal/config/podrules). Errors wrapping it say which
// object and why.
var ErrNotAllowed = errors.New("not allowed")

// notAllowed is an ErrNotAllowed with its own sentence.
type notAllowed string

func (e notAllowed) Error() string { return string(e) }

func (e notAllowed) Unwrap() error { return ErrNotAllowed }

// ErrOwnedElsewhere is an object that exists under a name the set would create and is not the
// owner's (apply.OwnedElsewhere is one): never written over, never taken over.
var ErrOwnedElsewhere = errors.New("the object exists and is another owner's")

// ErrNotServed is an object of a kind the cluster does not serve (and no definition in the
// same set defines).
var ErrNotServed = errors.New("the kind is not served")

// Marks say whose the applied objects are: where they go, the labels and annotations that
// identify their owner, and how an object that already exists is treated.
type Marks struct {
	// Namespace is where namespaced objects go; an object naming another namespace is refused
	// (ErrNotAllowed).
	Namespace string
	// Labels and Annotations are put on every object.
	Labels, Annotations map[string]string
	// Controller, when set, becomes the controller owner reference of every namespaced object
	// (an owner reference cannot point across scopes, nor across clusters).
	Controller *metav1.OwnerReference
	// OwnerAnnotation, when set, is the annotation (one of Annotations) that says whose an
	// object is: an existing object with another value, or none, is refused (*OwnedElsewhere),
	// never taken over. Without it, existing objects are taken over.
	OwnerAnnotation string
	// OwnerNameLabel is the label that names the owner, for a refusal's message.
	OwnerNameLabel string
	// OwnLabel, when set, is a label (one of Labels) that everything this kind of owner makes
	// carries, whatever its value: an existing object without it was made by someone else,
	// and is refused (*OwnedElsewhere), never taken over, unless Listed holds its UID (one of
	// ours whose label was removed since). An object labelled with another value (another
	// instance's: the object several instances produce) is ours to apply.
	OwnLabel string
	// Listed holds the UIDs of the objects the owner's inventory lists.
	Listed map[string]bool
	// Maker names what makes the objects, for a refusal's message ("" is the runtime).
	Maker string
	// KeepLabel, when set, is a label (one of Labels) an existing object keeps: an object
	// several owners produce keeps the value of the one that created it, instead of being
	// relabelled back and forth.
	KeepLabel string
	// Kinds, when set, are the only kinds the owner may apply, as Kind or Kind.group (its
	// backend's or its definition's kinds), within what Input.Allowed allows: an object of
	// another kind is refused (ErrNotAllowed).
	Kinds []string
	// Pods is what the owner's pods may do beyond the pod rules (its backend's or its
	// definition's pods): an object whose pod breaks a rule is refused (ErrNotAllowed).
	Pods podrules.Policy
}

// Ours reports whether an existing object belongs to the marks' owner: it carries OwnLabel
// (or Listed holds it) when the marks name one, and its owner annotation has the owner's
// value, or the marks name no owner annotation.
func (m Marks) Ours(live *unstructured.Unstructured) bool {
	if _, labelled := live.GetLabels()[m.OwnLabel]; m.OwnLabel != "" && !labelled && !m.Listed[string(live.GetUID())] {
		return false
	}
	return m.OwnerAnnotation == "" || live.GetAnnotations()[m.OwnerAnnotation] == m.Annotations[m.OwnerAnnotation]
}

// Scope says whether a kind's objects are namespaced, or an error wrapping ErrNotServed
// when the cluster does not serve the kind.
type Scope func(schema.GroupVersionKind) (namespaced bool, err error)

// Input is what Prepare needs.
type Input struct {
	Objects []*unstructured.Unstructured
	Marks   Marks
	// Scope tells a kind's scope; a CustomResourceDefinition among Objects tells it for the
	// kind it defines.
	Scope Scope
	// Allowed says whether a kind may be applied; nil allows every kind.
	Allowed func(group, kind string) bool
}

// FromMap is a decoded document (YAML's types: int, map[string]any) as an object the
// applier takes, its values of JSON's types, which unstructured objects hold.
func FromMap(m map[string]any) (*unstructured.Unstructured, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return u, nil
}

// Object is a prepared object: marked, placed, in its stage.
type Object struct {
	*unstructured.Unstructured
	// Namespaced is false for a cluster-scoped object.
	Namespaced bool
	// Stage orders the apply: definitions (CustomResourceDefinitions, Namespaces) first, then
	// configuration (ConfigMaps, Secrets, ServiceAccounts), then the rest.
	Stage int
}

// The stages of an apply.
const (
	StageDefinitions = iota
	StageConfiguration
	StageRest
)

// StageOf is the stage an object is applied in.
func StageOf(u *unstructured.Unstructured) int {
	switch u.GroupVersionKind().GroupKind() {
	case CRDKind, namespaceKind:
		return StageDefinitions
	case schema.GroupKind{Kind: "ConfigMap"}, schema.GroupKind{Kind: "Secret"}, schema.GroupKind{Kind: "ServiceAccount"}:
		return StageConfiguration
	default:
		return StageRest
	}
}

var (
	// CRDKind is the kind whose objects later stages may need served: the applier waits until
	// each is Established.
	CRDKind       = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
	namespaceKind = schema.GroupKind{Kind: "Namespace"}
)

// Prepare is the pure step of an apply: it checks each object's kind, namespace and pods, places it
// (namespaced objects in the marks' namespace, cluster-scoped ones in none), puts the marks'
// labels, annotations and owner reference on it, and orders the objects by stage (stable
// within a stage). The objects are changed in place. The runtime, the provisioner and the
// offline render all prepare through it, so the render shows exactly what is applied.
func Prepare(in Input) ([]Object, error) {
	defined := definedScopes(in.Objects)
	out := make([]Object, 0, len(in.Objects))
	for _, u := range in.Objects {
		gvk := u.GroupVersionKind()
		namespaced, ok := defined[gvk.GroupKind()]
		if !ok {
			var err error
			if namespaced, err = in.Scope(gvk); err != nil {
				return nil, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
			}
		}
		if in.Allowed != nil && !in.Allowed(gvk.Group, gvk.Kind) {
			return nil, notAllowed(fmt.Sprintf("%s %s is of a kind the platform does not allow (allowedKinds)", u.GetKind(), u.GetName()))
		}
		if kinds := in.Marks.Kinds; len(kinds) > 0 && !slices.Contains(kinds, KindName(gvk.GroupKind())) {
			return nil, notAllowed(fmt.Sprintf("%s %s is of a kind its backend or definition does not list (kinds: %s)", u.GetKind(), u.GetName(), strings.Join(kinds, ", ")))
		}
		if err := podrules.Check(u, in.Marks.Pods); err != nil {
			return nil, notAllowed(err.Error())
		}
		switch ns := u.GetNamespace(); {
		case !namespaced:
			u.SetNamespace("")
		case ns != "" && ns != in.Marks.Namespace:
			return nil, notAllowed(fmt.Sprintf("%s %s targets namespace %s; only objects in %s may be created", u.GetKind(), u.GetName(), ns, in.Marks.Namespace))
		default:
			u.SetNamespace(in.Marks.Namespace)
		}
		u.SetLabels(merged(u.GetLabels(), in.Marks.Labels))
		u.SetAnnotations(merged(u.GetAnnotations(), in.Marks.Annotations))
		if namespaced && in.Marks.Controller != nil {
			u.SetOwnerReferences(withController(u.GetOwnerReferences(), *in.Marks.Controller))
		}
		u.SetAnnotations(merged(u.GetAnnotations(), map[string]string{scorev1b1.AnnotationApplied: appliedDigest(u, in.Marks.KeepLabel)}))
		out = append(out, Object{Unstructured: u, Namespaced: namespaced, Stage: StageOf(u)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Stage < out[j].Stage })
	return out, nil
}

// KindName is a kind as the config lists it: Kind for the core group, Kind.group otherwise
// (Deployment.apps).
func KindName(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}

// definedScopes reads the scope of the kinds the set's CustomResourceDefinitions define: their
// objects can be prepared before the cluster serves the kind.
func definedScopes(objs []*unstructured.Unstructured) map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for _, u := range objs {
		if u.GroupVersionKind().GroupKind() != CRDKind {
			continue
		}
		group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(u.Object, "spec", "scope")
		if kind != "" {
			out[schema.GroupKind{Group: group, Kind: kind}] = scope != "Cluster"
		}
	}
	return out
}

func merged(have, add map[string]string) map[string]string {
	if len(add) == 0 {
		return have
	}
	out := make(map[string]string, len(have)+len(add))
	for k, v := range have {
		out[k] = v
	}
	for k, v := range add {
		out[k] = v
	}
	return out
}

// withController puts ref first as the one controller reference, keeping the other owners.
func withController(refs []metav1.OwnerReference, ref metav1.OwnerReference) []metav1.OwnerReference {
	yes := true
	ref.Controller, ref.BlockOwnerDeletion = &yes, &yes
	out := []metav1.OwnerReference{ref}
	for _, r := range refs {
		if r.UID == ref.UID || (r.Controller != nil && *r.Controller) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// clusterScoped are the built-in kinds a Kubernetes v1.37 cluster serves without a namespace,
// and those of the CRDs the project ships (Gateway API's GatewayClass).
var clusterScoped = map[schema.GroupKind]bool{
	{Kind: "Namespace"}: true, {Kind: "Node"}: true, {Kind: "PersistentVolume"}: true,
	{Kind: "ComponentStatus"}: true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                        true,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                               true,
	{Group: "storage.k8s.io", Kind: "VolumeAttributesClass"}:                          true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "networking.k8s.io", Kind: "IPAddress"}:                                   true,
	{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:                                 true,
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:                 true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}:          true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
	{Group: "resource.k8s.io", Kind: "DeviceClass"}:                                   true,
	{Group: "resource.k8s.io", Kind: "ResourceSlice"}:                                 true,
	{Group: "gateway.networking.k8s.io", Kind: "GatewayClass"}:                        true,
}

// OfflineScope is the scope of a kind without a cluster to ask: cluster-scoped for the
// built-in cluster-scoped kinds (and GatewayClass), namespaced for every other kind. A
// CustomResourceDefinition in the same set still tells the scope of the kind it defines.
func OfflineScope(gvk schema.GroupVersionKind) (bool, error) {
	return !clusterScoped[gvk.GroupKind()], nil
}

// appliedDigest is the digest of what is applied (without its own annotation, and without the
// label keep, whose value an existing object keeps: an object several instances produce
// carries one digest): a field dropped from the rendered object changes it. Of a Secret only
// the key names count: no digest of a secret value is written anywhere (a changed value
// differs from the live object anyway).
func appliedDigest(u *unstructured.Unstructured, keep string) string {
	c := u.DeepCopy()
	anns := c.GetAnnotations()
	delete(anns, scorev1b1.AnnotationApplied)
	c.SetAnnotations(anns)
	if keep != "" {
		labels := c.GetLabels()
		delete(labels, keep)
		c.SetLabels(labels)
	}
	if c.GetKind() == "Secret" && c.GroupVersionKind().Group == "" {
		for _, field := range []string{"data", "stringData"} {
			if m, ok := c.Object[field].(map[string]any); ok {
				for k := range m {
					m[k] = ""
				}
			}
		}
	}
	b, _ := json.Marshal(c.Object)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// PlanMarks are the marks of what the runtime applies for a plan: in the plan's namespace,
// labelled with its Workload's name, annotated with its Workload's UID (an object annotated
// for another Workload, or not annotated, is never taken over) and controlled by the plan; of
// the kinds the plan lists (and ConfigMaps and Secrets, the runtime's own), with the pods it
// allows.
// The offline render marks with the same function, with the UIDs it is given.
func PlanMarks(p *scorev1b1.WorkloadPlan) Marks {
	m := Marks{
		Namespace:       p.Namespace,
		Labels:          map[string]string{scorev1b1.LabelWorkload: p.Spec.WorkloadRef.Name},
		Annotations:     map[string]string{scorev1b1.AnnotationWorkloadUID: p.Spec.WorkloadRef.UID},
		OwnerAnnotation: scorev1b1.AnnotationWorkloadUID,
		OwnerNameLabel:  scorev1b1.LabelWorkload,
	}
	if p.UID != "" {
		m.Controller = &metav1.OwnerReference{APIVersion: scorev1b1.GroupVersion.String(), Kind: "WorkloadPlan", Name: p.Name, UID: p.UID}
	}
	if len(p.Spec.Kinds) > 0 {
		// The runtime's own objects: the files' ConfigMap and Secret, the outputs Secrets it
		// copies to a member.
		m.Kinds = append(slices.Clone(p.Spec.Kinds), "ConfigMap", "Secret")
	}
	if pods := p.Spec.Pods; pods != nil {
		m.Pods = podrules.Policy{ServiceAccountName: pods.ServiceAccountName, Allow: pods.Allow}
	}
	return m
}

// InstanceMarks are the marks of what a provisioner applies for an instance: in the
// instance's namespace, labelled with its identity hash. An existing object that an instance
// made (it carries the instance label, of any instance) is taken over, keeping that label: an
// object several instances produce (the broker every topic of a namespace uses) stays the
// first one's. An object no instance made (no instance label) is refused, never taken over,
// unless listed holds its UID (the claim's inventory: one of ours whose label was removed).
func InstanceMarks(namespace, instance string, listed ...scorev1b1.AppliedObject) Marks {
	m := Marks{
		Namespace: namespace,
		Labels:    map[string]string{scorev1b1.LabelInstance: instance},
		KeepLabel: scorev1b1.LabelInstance,
		OwnLabel:  scorev1b1.LabelInstance,
		Maker:     "the provisioner",
	}
	for _, o := range listed {
		if o.UID != "" {
			if m.Listed == nil {
				m.Listed = map[string]bool{}
			}
			m.Listed[o.UID] = true
		}
	}
	return m
}
