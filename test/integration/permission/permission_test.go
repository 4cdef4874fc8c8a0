// Package permission checks RBAC on a real API server: the access table (who may read and
// write what: the users' roles and each controller's generated role), and that a refusal
// reaches the Workload as PermissionDenied when the orchestrator runs under an identity that
// may not create WorkloadPlans.
package permission

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/orchestrator"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

const config = `apiVersion: score.dev/v1b1
kind: OrchestratorConfig
allowMutableRefs: true
profiles:
  - name: web-service
    backends:
      - backendId: k8s-web
        runtimeClass: kubernetes
        version: 1.0.0
        template: {kind: manifests, ref: "configmap://score-system/templates/web.yaml"}
defaults: {profile: web-service}
`

func TestRBACRefusalIsPermissionDenied(t *testing.T) {
	env := testenv.StartForTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := env.Client

	// Everything the orchestrator needs, except creating plans.
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "limited-orchestrator"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"score.dev"}, Resources: []string{"workloads", "resourceclaims", "workloadexposures"}, Verbs: []string{"*"}},
			{APIGroups: []string{"score.dev"}, Resources: []string{"workloads/status", "workloads/finalizers"}, Verbs: []string{"*"}},
			{APIGroups: []string{"score.dev"}, Resources: []string{"workloadtraces", "workloadtraces/status"}, Verbs: []string{"*"}},
			{APIGroups: []string{"score.dev"}, Resources: []string{"workloadplans", "configrollouts"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps", "namespaces"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
			{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "limited-orchestrator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: "limited-orchestrator", APIGroup: "rbac.authorization.k8s.io"}},
	}
	testenv.Create(t, c, role, binding,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "score-system"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "score-system", Name: "orchestrator-config"}, Data: map[string]string{"config.yaml": config}},
	)

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "limited-orchestrator"}
	mgr, err := ctrl.NewManager(cfg, testenv.ManagerOptions())
	if err != nil {
		t.Fatal(err)
	}
	store, err := configsource.Setup(mgr, configsource.DefaultOptions(), "score-orchestrator")
	if err != nil {
		t.Fatal(err)
	}
	if err := orchestrator.Setup(mgr, store, orchestrator.DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	w := testenv.Workload("default", "web")
	testenv.Create(t, c, w)
	w = testenv.WaitForCondition(t, c, client.ObjectKeyFromObject(w), scorev1b1.ConditionRuntimeReady, metav1.ConditionFalse, scorev1b1.ReasonPermissionDenied)
	if m := testenv.Condition(w, scorev1b1.ConditionRuntimeReady).Message; m != "The platform is not permitted to deploy the workload." {
		t.Fatalf("message %q", m)
	}
}
