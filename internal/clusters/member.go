package clusters

import (
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// The runtime's identity on a member cluster, which `scorectl cluster add` creates there.
const (
	MemberNamespace      = "score-system"
	MemberServiceAccount = "score-runtime"
	MemberRoleName       = "score-runtime-member"
	MemberTokenSecret    = "score-runtime-token"
)

// MemberRole is the least privilege the runtime needs on a member cluster: its hub role's
// rules for the objects it applies and judges (runtimeRole, the role generated from its RBAC
// markers), without the score.dev kinds and events that live on the hub only, and the right
// to read and create the Workloads' namespaces.
func MemberRole(runtimeRole []byte) (*rbacv1.ClusterRole, error) {
	var hub rbacv1.ClusterRole
	if err := yaml.Unmarshal(runtimeRole, &hub); err != nil {
		return nil, fmt.Errorf("the runtime's role: %w", err)
	}
	role := &rbacv1.ClusterRole{}
	role.APIVersion, role.Kind, role.Name = "rbac.authorization.k8s.io/v1", "ClusterRole", MemberRoleName
	for _, r := range hub.Rules {
		if hubOnly(r.APIGroups) {
			continue
		}
		role.Rules = append(role.Rules, r)
	}
	if len(role.Rules) == 0 {
		return nil, fmt.Errorf("the runtime's role grants nothing to apply")
	}
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "create"}})
	return role, nil
}

func hubOnly(groups []string) bool {
	for _, g := range groups {
		if g == scorev1b1.GroupVersion.Group || g == "events.k8s.io" {
			return true
		}
	}
	return false
}
