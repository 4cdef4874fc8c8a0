package orchestrator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// previewNamespace creates preview name of namespace of, as scorectl preview up does (its
// maker the test's user), with an expiry when expires is set.
func previewNamespace(t *testing.T, name, of string, expires time.Time) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scorev1b1.PreviewNamespacePrefix + name,
		Labels:      map[string]string{scorev1b1.LabelPreview: name, scorev1b1.LabelPreviewOf: of},
		Annotations: map[string]string{scorev1b1.AnnotationPreviewMaker: testenv.Username(t, env.Client)}}}
	if !expires.IsZero() {
		ns.Annotations[scorev1b1.AnnotationPreviewExpires] = expires.UTC().Format(time.RFC3339)
	}
	testenv.Create(t, env.Client, ns)
	return ns.Name
}

// TestPreviewEnvironments: on a real API server, with the policy that binds previews to their
// makers in force, a preview's claims take the preview's policy
// (Delete, where the provisioner says Retain); a preview over the platform's limit provisions
// nothing and says why, until an older one goes; an expired preview's Workloads, then its
// namespace, are deleted by the control plane; a namespace that only carries the label is
// never deleted.
func TestPreviewEnvironments(t *testing.T) {
	testenv.InstallPreviewPolicy(t, env.Client)
	applyConfig(t, baseConfig+"previews:\n  max: 1\n")
	t.Cleanup(func() { applyConfig(t, baseConfig) })
	of := testenv.Namespace(t, env.Client)
	suffix := rand.String(5)
	first, second := "a"+suffix, "b"+suffix
	nsFirst := previewNamespace(t, first, of, time.Now().Add(time.Hour))
	testenv.Create(t, env.Client, workload(nsFirst, "web", testenv.WithResource("db", "postgres")))
	// A namespace whose name is not preview-<label> is no preview, whatever it says.
	impostor := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "impostor-" + suffix,
		Labels: map[string]string{scorev1b1.LabelPreview: "x" + suffix, scorev1b1.LabelPreviewOf: of},
		Annotations: map[string]string{scorev1b1.AnnotationPreviewExpires: time.Now().Add(-time.Hour).UTC().Format(time.RFC3339),
			scorev1b1.AnnotationPreviewMaker: testenv.Username(t, env.Client)}}}
	testenv.Create(t, env.Client, impostor)

	t.Run("a preview's claims are Delete, whatever the provisioner says", func(t *testing.T) {
		c := claimOf(t, get(t, nsFirst, "web"), "db", "postgres")
		if c.Spec.DeprovisionPolicy != scorev1b1.DeprovisionDelete {
			t.Fatalf("policy %s, want Delete (the provisioner's Retain is the default elsewhere)", c.Spec.DeprovisionPolicy)
		}
	})

	nsSecond := previewNamespace(t, second, of, time.Time{})
	testenv.Create(t, env.Client, workload(nsSecond, "web", testenv.WithResource("db", "postgres")))
	t.Run("a preview over the limit provisions nothing and says why", func(t *testing.T) {
		w := conditionIs(t, nsSecond, "web", scorev1b1.ConditionReady, metav1.ConditionFalse, scorev1b1.ReasonPolicyViolation)
		if c := testenv.Condition(w, scorev1b1.ConditionReady); !strings.Contains(c.Message, "over the platform's limit of 1 previews per maker") || !strings.Contains(c.Message, "'s previews "+first+" is older") {
			t.Fatalf("ready: %s", c.Message)
		}
		var claims scorev1b1.ResourceClaimList
		if err := env.Client.List(ctx, &claims, client.InNamespace(nsSecond)); err != nil || len(claims.Items) != 0 {
			t.Fatalf("claims %d (%v), want none", len(claims.Items), err)
		}
	})
	t.Run("the control plane records the expiry a preview that named none gets", func(t *testing.T) {
		eventually(t, "the default expiry", func() error {
			ns := &corev1.Namespace{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: nsSecond}, ns); err != nil {
				return err
			}
			at, err := time.Parse(time.RFC3339, ns.Annotations[scorev1b1.AnnotationPreviewExpires])
			if err != nil {
				return err
			}
			if want := ns.CreationTimestamp.Add(24 * time.Hour); !at.Equal(want) {
				return fmt.Errorf("expires %s, want %s", at, want)
			}
			return nil
		})
	})

	t.Run("an expired preview goes: its Workloads, their claims, then the namespace; the next one is admitted", func(t *testing.T) {
		claim := claimOf(t, get(t, nsFirst, "web"), "db", "postgres")
		ns := &corev1.Namespace{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: nsFirst}, ns); err != nil {
			t.Fatal(err)
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, scorev1b1.AnnotationPreviewExpires, time.Now().UTC().Format(time.RFC3339))
		if err := env.Client.Patch(ctx, ns, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
			t.Fatal(err)
		}
		release(t, claim) // the provisioner's part: the orchestrator deleted the Delete claim
		eventually(t, "the Workload gone", func() error {
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: nsFirst, Name: "web"}, &scorev1b1.Workload{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there (%v)", err)
			}
			return nil
		})
		// No namespace controller runs here: the namespace stays Terminating once deleted.
		eventually(t, "the namespace deleted", func() error {
			ns := &corev1.Namespace{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: nsFirst}, ns); err != nil {
				return client.IgnoreNotFound(err)
			}
			if ns.DeletionTimestamp.IsZero() {
				return fmt.Errorf("not deleted")
			}
			return nil
		})
		claimOf(t, get(t, nsSecond, "web"), "db", "postgres") // admitted: its claim is created
		conditionIs(t, nsSecond, "web", scorev1b1.ConditionClaimsReady, metav1.ConditionFalse, scorev1b1.ReasonClaimPending)
	})

	t.Run("a namespace that only carries the preview label is not deleted", func(t *testing.T) {
		ns := &corev1.Namespace{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(impostor), ns); err != nil {
			t.Fatal(err)
		}
		if !ns.DeletionTimestamp.IsZero() {
			t.Fatal("the control plane deleted a namespace that is no preview")
		}
	})
}
