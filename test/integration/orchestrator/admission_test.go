package orchestrator

import (
	"errors"
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// Path 10: an admission policy's denial of a derived object is PolicyViolation, a quota's is
// QuotaExceeded; both recover once the cause is gone.
func TestAdmissionDenials(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := testenv.Namespace(t, env.Client)

	t.Run("a policy denying a claim", func(t *testing.T) {
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "no-mongodb"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{"score.dev"}, APIVersions: []string{"v1b1"}, Resources: []string{"resourceclaims"}},
					},
				}}},
				Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.type != 'mongodb'", Message: "mongodb is not offered in this namespace"}},
			},
		}
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "no-mongodb"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        "no-mongodb",
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}},
			},
		}
		testenv.Create(t, env.Client, policy)
		testenv.Create(t, env.Client, binding)
		eventually(t, "the policy is in force", func() error {
			probe := &scorev1b1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
				Spec: scorev1b1.ResourceClaimSpec{WorkloadRef: scorev1b1.LocalWorkloadRef{Name: "x", UID: "x"}, Key: "db", Type: "mongodb"}}
			if err := env.Client.Create(ctx, probe, client.DryRunAll); err == nil {
				return errors.New("not yet")
			}
			return nil
		})
		testenv.Create(t, env.Client, workload(ns, "mongo-app", testenv.WithResource("db", "mongodb")))
		w := conditionIs(t, ns, "mongo-app", scorev1b1.ConditionClaimsReady, metav1.ConditionFalse, scorev1b1.ReasonPolicyViolation)
		if w.Status.Claims[0].Message != `A platform policy denied dependency "db".` {
			t.Fatalf("claim %+v", w.Status.Claims[0])
		}
		conditionIs(t, ns, "mongo-app", scorev1b1.ConditionReady, metav1.ConditionFalse, scorev1b1.ReasonPolicyViolation)

		if err := env.Client.Delete(ctx, binding); err != nil {
			t.Fatal(err)
		}
		conditionIs(t, ns, "mongo-app", scorev1b1.ConditionClaimsReady, metav1.ConditionFalse, scorev1b1.ReasonClaimPending)
		claimOf(t, w, "db", "mongodb")
	})

	t.Run("a quota refusing the plan", func(t *testing.T) {
		quota := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "no-plans", Namespace: ns},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/workloadplans.score.dev": resource.MustParse("0")}},
		}
		testenv.Create(t, env.Client, quota)
		// No quota controller runs against this API server: play it and publish the usage.
		quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{"count/workloadplans.score.dev": resource.MustParse("0")}}
		if err := env.Client.Status().Update(ctx, quota); err != nil {
			t.Fatal(err)
		}
		testenv.Create(t, env.Client, workload(ns, "quota-app"))
		conditionIs(t, ns, "quota-app", scorev1b1.ConditionRuntimeReady, metav1.ConditionFalse, scorev1b1.ReasonQuotaExceeded)
		if err := env.Client.Delete(ctx, quota); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the plan once the quota is gone", func() error {
			p := &scorev1b1.WorkloadPlan{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "quota-app"}, p); err != nil {
				return fmt.Errorf("no plan yet: %w", err)
			}
			return nil
		})
	})
}
