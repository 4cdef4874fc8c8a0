package runtime

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// A template may create cluster-scoped objects of the kinds the config allows (here a
// Namespace): applied first, marked with the Workload, held by the plan's finalizer (whose write
// leaves the plan without managed fields) and deleted with the plan.
func TestAllowedClusterScopedKind(t *testing.T) {
	text := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {{ .Workload.Name }}-sandbox\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Workload.Name }}\n"
	ns := setup(t, text)
	p := newPlan(ns, "lab", "u8", testenv.Digest(text), webValues)
	testenv.Create(t, env.Client, p)
	sandbox := &corev1.Namespace{}
	testenv.Eventually(t, 20*time.Second, "applied", func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "lab-sandbox"}, sandbox); err != nil {
			return err
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		if !controllerutil.ContainsFinalizer(p, scorev1b1.PlanFinalizer) || len(p.Status.Objects) != 2 {
			return fmt.Errorf("finalizers %v objects %+v", p.Finalizers, p.Status.Objects)
		}
		return nil
	})
	if sandbox.Annotations[scorev1b1.AnnotationWorkloadUID] != "u8" || sandbox.Labels[scorev1b1.LabelWorkload] != "lab" || len(sandbox.OwnerReferences) != 0 {
		t.Fatalf("marks %v %v %v", sandbox.Annotations, sandbox.Labels, sandbox.OwnerReferences)
	}
	if p.Status.Objects[0].Kind != "Namespace" || p.Status.Objects[0].Namespace != "" {
		t.Fatalf("the Namespace is applied first: %+v", p.Status.Objects)
	}
	// The finalizer's write reset the plan's managed fields (the creation's), and the status
	// written after it recorded none.
	if len(p.ManagedFields) != 0 {
		t.Errorf("the plan has %d managed-fields entries after the finalizer and its status", len(p.ManagedFields))
	}

	if err := env.Client.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "deleted with the plan", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), p); !apierrors.IsNotFound(err) {
			return fmt.Errorf("plan: %v", err)
		}
		// envtest runs no namespace controller: a deleted Namespace stays Terminating.
		err := env.Client.Get(ctx, client.ObjectKey{Name: "lab-sandbox"}, sandbox)
		if apierrors.IsNotFound(err) || err == nil && sandbox.DeletionTimestamp != nil {
			return nil
		}
		return fmt.Errorf("the Namespace is still there: %v", err)
	})
}

// A template cannot create a kind the config does not allow: a ClusterRoleBinding granting
// cluster-admin is refused, nothing of the template is applied, and the plan says why.
func TestDisallowedKindIsRefused(t *testing.T) {
	text := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Workload.Name }}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {{ .Workload.Name }}-admin\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{kind: ServiceAccount, name: default, namespace: default}]\n"
	ns := setup(t, text)
	p := newPlan(ns, "escalate", "u9", testenv.Digest(text), webValues)
	testenv.Create(t, env.Client, p)
	waitPlanFailed(t, p, "ClusterRoleBinding escalate-admin is of a kind the platform does not allow (allowedKinds)")
	if p.Status.Reason != scorev1b1.ReasonPermissionDenied {
		t.Fatalf("reason %s", p.Status.Reason)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "escalate-admin"}, &rbacv1.ClusterRoleBinding{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the binding must not exist: %v", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "escalate"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("nothing of a refused template is applied: %v", err)
	}
}
