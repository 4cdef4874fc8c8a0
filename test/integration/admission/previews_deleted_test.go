package admission

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// The preview makers' policy judges a namespace being deleted too: otherwise anyone who may
// patch namespaces could label a terminating preview-* namespace a preview in their own name,
// or take over another's terminating preview. A namespace here stays
// terminating until it is finalized (this API server runs no namespace controller), as one
// does on a cluster while a finalizer holds it: the policy holds for it as for any other, and
// its deletion still completes through namespaces/finalize.
func TestPreviewMakersPolicyHoldsWhileANamespaceIsDeleted(t *testing.T) {
	installPolicies(t)
	makersMayMakePreviews(t, user("alice"), user("mallory"), group("score.dev:preview-admins"))
	alice, mallory := as(t, "alice"), as(t, "mallory")
	previewAdmin := as(t, "pat", "score.dev:preview-admins")
	alices := previewOf("alices-going", "alice")
	if err := alice.Create(ctx, alices); err != nil {
		t.Fatalf("alice makes her preview: %v", err)
	}
	plain := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "preview-plain-going"}}
	testenv.Create(t, env.Client, plain)
	for _, ns := range []*corev1.Namespace{alices, plain} {
		if err := env.Client.Delete(ctx, ns); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, testenv.WaitTimeout, ns.Name+" terminating", func() error {
			return terminating(ns.Name)
		})
	}

	now := time.Now().UTC().Format(time.RFC3339)
	for _, tc := range []struct {
		name    string
		by      client.Client
		ns      string
		patch   string
		message string // part of the refusal; "" when it is admitted
	}{
		{"mallory labels a terminating namespace named preview-* a preview", mallory, plain.Name,
			`{"labels":{"score.dev/preview":"plain-going"},"annotations":{"score.dev/preview-maker":"mallory","score.dev/preview-expires":"` + now + `"}}`,
			"namespace preview-plain-going cannot become a preview"},
		{"mallory takes alice's terminating preview as hers", mallory, alices.Name, `{"annotations":{"score.dev/preview-maker":"mallory"}}`,
			"only the maker of preview preview-alices-going (alice)"},
		{"mallory changes its expiry", mallory, alices.Name, `{"annotations":{"score.dev/preview-expires":"` + now + `"}}`, "only the maker"},
		// The positive controls: a terminating namespace's metadata is written as any other's.
		{"mallory changes a label of its own", mallory, alices.Name, `{"labels":{"team":"x"}}`, ""},
		{"alice sets her expiry", alice, alices.Name, `{"annotations":{"score.dev/preview-expires":"` + now + `"}}`, ""},
		{"a platform administrator hands it to mallory", previewAdmin, alices.Name, `{"annotations":{"score.dev/preview-maker":"mallory"}}`, ""},
	} {
		t.Run("patch: "+tc.name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tc.ns}}
			err := tc.by.Patch(ctx, ns, mergePatch(tc.patch), client.DryRunAll)
			if tc.message == "" && err != nil || tc.message != "" && (err == nil || !strings.Contains(err.Error(), tc.message)) {
				t.Fatalf("patch: %v, want %q", err, tc.message)
			}
		})
	}

	// The namespace controller's last step, as it takes it: the finalizer removed through
	// namespaces/finalize, which the policy does not match; the namespaces go.
	t.Run("their deletion completes", func(t *testing.T) {
		for _, ns := range []*corev1.Namespace{alices, plain} {
			live := &corev1.Namespace{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ns), live); err != nil {
				t.Fatal(err)
			}
			live.Spec.Finalizers = nil
			if err := env.Client.SubResource("finalize").Update(ctx, live); err != nil {
				t.Fatalf("finalizing %s: %v", ns.Name, err)
			}
			testenv.WaitGone(t, env.Client, ns)
		}
	})
}

// terminating is nil when the namespace is being deleted.
func terminating(name string) error {
	ns := &corev1.Namespace{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		return err
	}
	if ns.DeletionTimestamp.IsZero() || ns.Status.Phase != corev1.NamespaceTerminating {
		return fmt.Errorf("not yet (phase %q)", ns.Status.Phase)
	}
	return nil
}
