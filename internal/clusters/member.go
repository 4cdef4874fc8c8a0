package clusters

import (
	"fmt"
	"io/fs"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// The controllers' identity on a member cluster, which `scorectl cluster add` creates there
// (named after the runtime, its first user; the provisioner uses it too).
const (
	MemberNamespace      = "score-system"
	MemberServiceAccount = "score-runtime"
	MemberRoleName       = "score-runtime-member"
	MemberTokenSecret    = "score-runtime-token"
)

// MemberRole is the least privilege the controllers that apply on a member cluster need
// there — the runtime (the Workloads' objects) and the provisioner (their dependencies'): their
// hub roles' rules for the objects they apply and judge (hubRoles, the roles generated from
// their RBAC markers), without the score.dev kinds and events that live on the hub only, and
// the right to read and create the namespaces.
func MemberRole(hubRoles ...[]byte) (*rbacv1.ClusterRole, error) {
	role := &rbacv1.ClusterRole{}
	role.APIVersion, role.Kind, role.Name = "rbac.authorization.k8s.io/v1", "ClusterRole", MemberRoleName
	for _, raw := range hubRoles {
		var hub rbacv1.ClusterRole
		if err := yaml.Unmarshal(raw, &hub); err != nil {
			return nil, fmt.Errorf("a controller's role: %w", err)
		}
		for _, r := range hub.Rules {
			if !hubOnly(r.APIGroups) {
				role.Rules = append(role.Rules, r)
			}
		}
	}
	if len(role.Rules) == 0 {
		return nil, fmt.Errorf("the runtime's role grants nothing to apply")
	}
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "create"}})
	return role, nil
}

// HubRoles reads, from the shipped bundle (or the repository), the hub roles of the
// controllers that apply on members: MemberRole's input.
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
