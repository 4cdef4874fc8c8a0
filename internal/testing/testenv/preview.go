package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/preview"
)

// InstallPreviewPolicy creates, as a platform does, the admission policy that binds previews
// to their makers (config/admission/preview-makers.yaml; an existing one is kept), waits until
// the API server enforces it, then until it has been in force for preview.Settle: the
// previews a test makes next are ones the control plane acts on.
func InstallPreviewPolicy(t testing.TB, c client.Client) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(RepoRoot(), "config", "admission", "preview-makers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := devenv.DecodeDocuments(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	// The admission plugin learns of a policy through a watch of its own: in force once a
	// preview in another's name is refused (a dry run, nothing is created). Every refusal of
	// the policy is Forbidden, and nothing else forbids this client a namespace.
	name := "in-force-" + rand.String(6)
	forged := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scorev1b1.PreviewNamespacePrefix + name,
		Labels: map[string]string{scorev1b1.LabelPreview: name}, Annotations: map[string]string{scorev1b1.AnnotationPreviewMaker: "someone-else"}}}
	Eventually(t, 30*time.Second, "the preview makers' policy in force", func() error {
		err := c.Create(context.Background(), forged.DeepCopy(), client.DryRunAll)
		if !apierrors.IsForbidden(err) {
			return fmt.Errorf("not yet (%v)", err)
		}
		return nil
	})
	PreviewPolicySettled(t, c)
}

// PreviewPolicySettled waits until the policy that binds previews to their makers has been in
// force for preview.Settle, so that a preview made next is trusted by the control plane.
func PreviewPolicySettled(t testing.TB, c client.Client) {
	t.Helper()
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: preview.PolicyName}, p); err != nil {
		t.Fatalf("the preview makers' policy: %v", err)
	}
	var bindings admissionregistrationv1.ValidatingAdmissionPolicyBindingList
	if err := c.List(context.Background(), &bindings); err != nil {
		t.Fatal(err)
	}
	g := preview.GuardOf(p, bindings.Items)
	if g.Since.IsZero() {
		t.Fatalf("the preview makers' policy is not in force: %s", g.Missing)
	}
	// Creation times are whole seconds: one more, so that a namespace's is past it.
	time.Sleep(time.Until(g.Since.Add(preview.Settle + time.Second)))
}

// Username is the name the API server knows c's user by (a SelfSubjectReview): what a
// preview's maker annotation must say for c to create it.
func Username(t testing.TB, c client.Client) string {
	t.Helper()
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(context.Background(), review); err != nil {
		t.Fatal(err)
	}
	return review.Status.UserInfo.Username
}
