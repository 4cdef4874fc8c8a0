package registration

// The controllers' identity on a member cluster, which `scorectl cluster add` creates there
// (named after the runtime, its first user; the provisioner uses it too), confined to the
// namespaces the hub places into:
//
//   - cluster-wide (MemberRoleName), only what placing into a namespace takes: get and create
//     namespaces, create RoleBindings, and bind the one role MemberNamespaceRoleName;
//   - per namespace placed into (MemberNamespaceRoleName, bound there by a RoleBinding the
//     runtime or the provisioner creates when it first places into it and finds the identity
//     without NamespaceRight there): the objects the runtime and the provisioner apply and
//     judge;
//   - an admission policy (MemberPolicyName) that lets the identity create only namespaces
//     labelled clusters.LabelPlaced and RoleBindings only in such namespaces, binding only
//     MemberNamespaceRoleName to itself: an existing namespace the platform did not label
//     (kube-system, another team's) stays out of reach, as does every Secret in it;
//   - in its own namespace (MemberSelfRoleName), the right to delete the Secret its token is
//     bound to: `scorectl cluster remove` revokes the token with the token itself.

import (
	"fmt"
	"io/fs"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
)

// The identity's names on a member.
const (
	MemberNamespace      = "score-system"
	MemberServiceAccount = "score-runtime"
	// MemberRoleName is the cluster-wide role, and the admission policy's name.
	MemberRoleName = "score-runtime-member"
	// MemberNamespaceRoleName is the role bound in each namespace placed into, by a
	// RoleBinding of the same name.
	MemberNamespaceRoleName = "score-runtime-member-namespace"
	// MemberSelfRoleName is the Role (and RoleBinding) in MemberNamespace that lets the
	// identity revoke its own token.
	MemberSelfRoleName = "score-runtime-self"
	// MemberTokenPrefix begins the name of the Secret each token is bound to: deleting it
	// revokes the token.
	MemberTokenPrefix = "score-runtime-token-"
	// AnnotationTokenSecret on a registration names the Secret on the member its token is bound
	// to, in MemberNamespace.
	AnnotationTokenSecret = "score.dev/member-token-secret"
)

// memberUser is the identity's user name, as the member's admission policy matches it.
var memberUser = "system:serviceaccount:" + MemberNamespace + ":" + MemberServiceAccount

// MemberRoles are the roles of the identity on a member: the cluster-wide role (placing into
// a namespace) and the role bound in each namespace placed into — the hub roles' rules
// (hubRoles, the roles generated from the runtime's and the provisioner's RBAC markers) for
// the namespaced objects they apply and judge, without the score.dev kinds and events that
// live on the hub only, and without anything cluster-scoped, which a RoleBinding cannot grant.
func MemberRoles(hubRoles ...[]byte) (cluster, namespaced *rbacv1.ClusterRole, err error) {
	namespaced = clusterRole(MemberNamespaceRoleName)
	for _, raw := range hubRoles {
		var hub rbacv1.ClusterRole
		if err := yaml.Unmarshal(raw, &hub); err != nil {
			return nil, nil, fmt.Errorf("a controller's role: %w", err)
		}
		for _, r := range hub.Rules {
			if hubOnly(r.APIGroups) {
				continue
			}
			r.Resources = slices.DeleteFunc(slices.Clone(r.Resources), clusterScoped)
			if len(r.Resources) > 0 {
				namespaced.Rules = append(namespaced.Rules, r)
			}
		}
	}
	if len(namespaced.Rules) == 0 {
		return nil, nil, fmt.Errorf("the controllers' roles grant nothing to apply")
	}
	cluster = clusterRole(MemberRoleName)
	cluster.Rules = []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "create"}},
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"rolebindings"}, Verbs: []string{"create"}},
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"bind"}, ResourceNames: []string{MemberNamespaceRoleName}},
	}
	return cluster, namespaced, nil
}

func clusterRole(name string) *rbacv1.ClusterRole {
	role := &rbacv1.ClusterRole{}
	role.APIVersion, role.Kind, role.Name = "rbac.authorization.k8s.io/v1", "ClusterRole", name
	return role
}

// clusterScoped reports whether a resource of the hub roles is not namespaced: the hub
// roles' only one is namespaces (the provisioner reads them on the hub).
func clusterScoped(resource string) bool { return resource == "namespaces" }

// NamespaceRight is a right MemberNamespaceRoleName grants in a namespace placed into (the
// runtime's watch of the Services it applies) and the cluster-wide role does not: whether the
// identity has it in a namespace (a SelfSubjectAccessReview) says whether it was granted its
// rights there, without reading RoleBindings, which it may not.
var NamespaceRight = authorizationv1.ResourceAttributes{Verb: "watch", Resource: "services"}

// NamespaceBinding is the RoleBinding that grants the identity MemberNamespaceRoleName in
// namespace, created when the hub first places into it.
func NamespaceBinding(namespace string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: MemberNamespaceRoleName},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: MemberNamespaceRoleName},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: MemberNamespace, Name: MemberServiceAccount}}}
}

// MemberPolicy is the admission policy, and its binding, that confine the identity's
// cluster-wide rights to the namespaces the hub places into: RBAC cannot say "namespaces
// carrying a label", an admission policy can. Kubernetes 1.30 or later serves it. Its
// refusals are Invalid (422), which RBAC's never are.
func MemberPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	fail, invalid := admissionregistrationv1.Fail, metav1.StatusReasonInvalid
	rule := func(group, resource string) admissionregistrationv1.NamedRuleWithOperations {
		return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}}}}
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: MemberRoleName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
				rule("", "namespaces"), rule(rbacv1.GroupName, "rolebindings"),
			}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "the-hub-identity", Expression: fmt.Sprintf("request.userInfo.username == '%s'", memberUser)}},
			Validations: []admissionregistrationv1.Validation{
				{
					Expression: "request.resource.resource != 'namespaces' || " + labelledPlaced("object"),
					Message:    fmt.Sprintf("the hub's identity creates only namespaces labelled %s=true", clusters.LabelPlaced),
					Reason:     &invalid,
				},
				{
					Expression: "request.resource.resource != 'rolebindings' || " + labelledPlaced("namespaceObject"),
					Message:    fmt.Sprintf("the hub's identity grants itself rights only in namespaces labelled %s=true: the platform labels a namespace to let the hub place into it", clusters.LabelPlaced),
					Reason:     &invalid,
				},
				{
					Expression: fmt.Sprintf("request.resource.resource != 'rolebindings' || (object.roleRef.kind == 'ClusterRole' && object.roleRef.name == '%s' && "+
						"has(object.subjects) && object.subjects.all(s, s.kind == 'ServiceAccount' && s.namespace == '%s' && s.name == '%s'))",
						MemberNamespaceRoleName, MemberNamespace, MemberServiceAccount),
					Message: fmt.Sprintf("the hub's identity binds only %s, to itself", MemberNamespaceRoleName),
					Reason:  &invalid,
				},
			},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: MemberRoleName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: MemberRoleName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	return policy, binding
}

// labelledPlaced is the CEL expression: the object named carries clusters.LabelPlaced=true.
func labelledPlaced(object string) string {
	return fmt.Sprintf("(has(%[1]s.metadata.labels) && '%[2]s' in %[1]s.metadata.labels && %[1]s.metadata.labels['%[2]s'] == 'true')", object, clusters.LabelPlaced)
}

// HubRoles reads, from the shipped bundle (or the repository), the hub roles of the
// controllers that apply on members: MemberRoles' input.
func HubRoles(bundle fs.FS) ([][]byte, error) {
	var out [][]byte
	for _, path := range []string{"config/rbac/runtime/role.yaml", "config/rbac/provisioner/role.yaml"} {
		b, err := fs.ReadFile(bundle, path)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func hubOnly(groups []string) bool {
	for _, g := range groups {
		if g == scorev1b1.GroupVersion.Group || g == "events.k8s.io" {
			return true
		}
	}
	return false
}
