package admission

import (
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/controlplane"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/preview"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// as is a client of the API server acting as user (impersonated, so that the API server
// judges each request by that user's rights and names them to admission as the user).
func as(t *testing.T, user string, groups ...string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append([]string{"system:authenticated"}, groups...)}
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// makersMayMakePreviews grants the role docs/operations.md recommends to preview makers
// (create, get, list and patch on namespaces) to the users and groups named.
func makersMayMakePreviews(t *testing.T, subjects ...rbacv1.Subject) {
	t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "preview-maker"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"create", "get", "list", "patch"}}}}
	if err := env.Client.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, s := range subjects {
		b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "preview-maker-" + strings.NewReplacer(":", "-", ".", "-").Replace(s.Name)},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}, Subjects: []rbacv1.Subject{s}}
		if err := env.Client.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: "User", Name: name}
}

func group(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: "Group", Name: name}
}

// previewOf is preview name made by maker, expiring in an hour.
func previewOf(name, maker string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scorev1b1.PreviewNamespacePrefix + name,
		Labels: map[string]string{scorev1b1.LabelPreview: name, scorev1b1.LabelPreviewOf: "team-a"},
		Annotations: map[string]string{scorev1b1.AnnotationPreviewMaker: maker,
			scorev1b1.AnnotationPreviewExpires: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}}}
}

// mergePatch is a JSON merge patch of a namespace's metadata.
func mergePatch(metadata string) client.Patch {
	return client.RawPatch(types.MergePatchType, []byte(`{"metadata":`+metadata+`}`))
}

// TestPreviewMakersPolicy: who may make a preview, and who may change it, as the API server
// enforces config/admission/preview-makers.yaml. alice and mallory hold the role preview makers
// are given (namespaces: create, get, list, patch). Each write is a dry run on a preview alice
// made, so each case stands alone.
func TestPreviewMakersPolicy(t *testing.T) {
	installPolicies(t)
	makersMayMakePreviews(t, user("alice"), user("mallory"), group("score.dev:preview-admins"),
		rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "score-system", Name: "score-rollout"})
	alice, mallory := as(t, "alice"), as(t, "mallory")
	previewAdmin := as(t, "pat", "score.dev:preview-admins")
	controlPlane := as(t, "system:serviceaccount:score-system:score-rollout", "system:serviceaccounts", "system:serviceaccounts:score-system")
	if err := alice.Create(ctx, previewOf("alices", "alice")); err != nil {
		t.Fatalf("alice makes her preview: %v", err)
	}
	plain := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "preview-plain"}}
	testenv.Create(t, env.Client, plain)

	creates := []struct {
		name    string
		by      client.Client
		ns      *corev1.Namespace
		message string // part of the refusal; "" when it is admitted
	}{
		{"a preview in her own name", alice, previewOf("a2", "alice"), ""},
		{"a preview in another's name", mallory, previewOf("m1", "alice"), `must name its maker, the user creating it: the annotation score.dev/preview-maker must be "mallory", not "alice"`},
		{"a preview naming no maker", mallory, func() *corev1.Namespace {
			ns := previewOf("m2", "")
			delete(ns.Annotations, scorev1b1.AnnotationPreviewMaker)
			return ns
		}(), `the annotation score.dev/preview-maker must be "mallory" (scorectl preview up sets it)`},
		{"an administrator, too, makes previews in their own name only", env.Client, previewOf("m3", "alice"), "must name its maker"},
		{"a namespace that is no preview", mallory, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mallorys", Labels: map[string]string{"team": "x"}}}, ""},
	}
	for _, tc := range creates {
		t.Run("create: "+tc.name, func(t *testing.T) {
			err := tc.by.Create(ctx, tc.ns, client.DryRunAll)
			if tc.message == "" && err != nil || tc.message != "" && (err == nil || !strings.Contains(err.Error(), tc.message)) {
				t.Fatalf("create: %v, want %q", err, tc.message)
			}
		})
	}

	now := time.Now().UTC().Format(time.RFC3339)
	patches := []struct {
		name    string
		by      client.Client
		ns      string
		patch   string
		message string
	}{
		{"mallory ends alice's preview by its expiry", mallory, "preview-alices", `{"annotations":{"score.dev/preview-expires":"` + now + `"}}`, "only the maker of preview preview-alices (alice) or a platform administrator may change"},
		{"mallory takes alice's preview as hers", mallory, "preview-alices", `{"annotations":{"score.dev/preview-maker":"mallory"}}`, "only the maker of preview preview-alices (alice)"},
		{"mallory says it previews another namespace", mallory, "preview-alices", `{"labels":{"score.dev/preview-of":"team-b"}}`, "only the maker"},
		{"mallory makes it no preview", mallory, "preview-alices", `{"labels":{"score.dev/preview":null}}`, "only the maker"},
		{"mallory changes a label of its own", mallory, "preview-alices", `{"labels":{"team":"x"}}`, ""},
		{"alice sets her expiry", alice, "preview-alices", `{"annotations":{"score.dev/preview-expires":"` + now + `"}}`, ""},
		{"alice hands it to mallory", alice, "preview-alices", `{"annotations":{"score.dev/preview-maker":"mallory"}}`, "the maker of preview preview-alices is recorded when it is created: only a platform administrator may change score.dev/preview-maker"},
		{"a platform administrator sets the expiry", previewAdmin, "preview-alices", `{"annotations":{"score.dev/preview-expires":"` + now + `"}}`, ""},
		{"a platform administrator hands it to mallory", previewAdmin, "preview-alices", `{"annotations":{"score.dev/preview-maker":"mallory"}}`, ""},
		{"the control plane records the expiry", controlPlane, "preview-alices", `{"annotations":{"score.dev/preview-expires":"` + now + `"}}`, ""},
		{"mallory labels a namespace named preview-* a preview", mallory, "preview-plain",
			`{"labels":{"score.dev/preview":"plain"},"annotations":{"score.dev/preview-maker":"mallory","score.dev/preview-expires":"` + now + `"}}`,
			"namespace preview-plain cannot become a preview: a namespace is a preview only when it is created as one"},
		{"an administrator cannot either", env.Client, "preview-plain", `{"labels":{"score.dev/preview":"plain"}}`, "cannot become a preview"},
	}
	for _, tc := range patches {
		t.Run("patch: "+tc.name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tc.ns}}
			err := tc.by.Patch(ctx, ns, mergePatch(tc.patch), client.DryRunAll)
			if tc.message == "" && err != nil || tc.message != "" && (err == nil || !strings.Contains(err.Error(), tc.message)) {
				t.Fatalf("patch: %v, want %q", err, tc.message)
			}
		})
	}
}

// TestPreviewsWithoutThePolicy: where the preview makers' policy is missing, anyone who may
// create namespaces can write any preview's metadata, so the control plane acts on no preview
// made then: the orchestrator refuses its Workloads, saying why, and the preview controller
// leaves it, expired, with a Warning. Installed, the policy makes later previews count: one
// made then is ended when it expires (the positive control), the earlier one still is not.
func TestPreviewsWithoutThePolicy(t *testing.T) {
	installPolicies(t)
	// The policy goes, as on a cluster where it was never installed.
	for _, o := range []client.Object{&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: preview.PolicyName}},
		&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: preview.PolicyName}}} {
		if err := env.Client.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
		testenv.WaitGone(t, env.Client, o)
	}
	startControllers(t, controlplane.Orchestrator, controlplane.Rollout)
	me := testenv.Username(t, env.Client)
	expired := func(name string) *corev1.Namespace {
		ns := previewOf(name, me)
		ns.Annotations[scorev1b1.AnnotationPreviewExpires] = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
		return ns
	}
	before := expired("before")
	testenv.Create(t, env.Client, before)
	testenv.Create(t, env.Client, workload(before.Name, "web", "nginx"))

	t.Run("its Workloads are refused, saying why", func(t *testing.T) {
		c := waitFor(t, before.Name, "web", scorev1b1.ConditionReady, metav1.ConditionFalse, scorev1b1.ReasonPolicyViolation)
		if !strings.Contains(c.Message, "Preview before is not bound to its maker: the ValidatingAdmissionPolicy score-preview-makers does not exist") {
			t.Fatalf("message %q", c.Message)
		}
	})
	t.Run("the preview controller says it does not end it", func(t *testing.T) {
		testenv.Eventually(t, testenv.WaitTimeout, "a PreviewNotEnded event", func() error {
			return hasEvent(before.Name, "PreviewNotEnded", "is not bound to its maker")
		})
	})

	testenv.InstallPreviewPolicy(t, env.Client)
	after := previewOf("after", me) // expired once its Workload is there: an empty one goes at once
	testenv.Create(t, env.Client, after)
	testenv.Create(t, env.Client, workload(after.Name, "web", "nginx"))
	if err := env.Client.Patch(ctx, after, mergePatch(`{"annotations":{"score.dev/preview-expires":"`+time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)+`"}}`)); err != nil {
		t.Fatalf("its maker expires it: %v", err)
	}
	t.Run("a preview made once it is in force is ended (the positive control)", func(t *testing.T) {
		testenv.Eventually(t, testenv.WaitTimeout, "its Workload deleted", func() error {
			err := env.Client.Get(ctx, client.ObjectKey{Namespace: after.Name, Name: "web"}, &scorev1b1.Workload{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			w := &scorev1b1.Workload{}
			_ = env.Client.Get(ctx, client.ObjectKey{Namespace: after.Name, Name: "web"}, w)
			if !w.DeletionTimestamp.IsZero() {
				return nil // its finalizer waits for the orchestrator, which released it
			}
			return fmt.Errorf("still there (%v)", err)
		})
	})
	t.Run("the one made before is still not ended", func(t *testing.T) {
		w := &scorev1b1.Workload{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: before.Name, Name: "web"}, w); err != nil || !w.DeletionTimestamp.IsZero() {
			t.Fatalf("the Workload of the preview made without the policy: %v, deleting %v", err, w.DeletionTimestamp)
		}
		c := waitFor(t, before.Name, "web", scorev1b1.ConditionReady, metav1.ConditionFalse, scorev1b1.ReasonPolicyViolation)
		if !strings.Contains(c.Message, "before the admission policy score-preview-makers came into force") {
			t.Fatalf("message %q", c.Message)
		}
	})
}

// hasEvent is nil when there is an event about the namespace (recorded, as for any
// cluster-scoped object, in namespace default) of the reason whose note holds text.
func hasEvent(ns, reason, text string) error {
	var events corev1.EventList
	if err := env.Client.List(ctx, &events); err != nil {
		return err
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "Namespace" && e.InvolvedObject.Name == ns && e.Reason == reason && strings.Contains(e.Message, text) {
			return nil
		}
	}
	return fmt.Errorf("no %s event about namespace %s among %d", reason, ns, len(events.Items))
}
