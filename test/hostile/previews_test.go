package hostile

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/termtest"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// The preview controller deletes, with its own rights, the namespaces and Workloads a
// namespace's metadata says are an expired preview. With the role docs/operations.md
// recommends to preview makers (namespaces: create, get, list, patch), mallory tries to end
// alice's preview by writing its expiry, to have any namespace named preview-* deleted by
// labelling it, and to fill alice's limit by making previews "of" her namespace. alice and
// mallory both make previews here; the control plane is installed from config/default, the
// policy score-preview-makers with it.

// previewMakers grants alice and mallory the preview makers' role for the test, and returns
// alice's client.
func previewMakers(t *testing.T) (alice client.Client) {
	t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "hostile-preview-maker"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"create", "get", "list", "patch"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "hostile-preview-makers"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "alice"}, {APIGroup: rbacv1.GroupName, Kind: "User", Name: mallory}}}
	for _, o := range []client.Object{role, binding} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = admin.Delete(ctx, binding)
		_ = admin.Delete(ctx, role)
	})
	as := rest.CopyConfig(adminConfig)
	as.Impersonate = rest.ImpersonationConfig{UserName: "alice", Groups: []string{"system:authenticated"}}
	c, err := client.New(as, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	testenv.PreviewPolicySettled(t, admin)
	return c
}

// makePreview has by create preview name, made by maker, of teamA, expiring in an hour, with a
// Workload web the platform's automation puts there; the namespace goes when the test ends.
func makePreview(t *testing.T, by client.Client, name, maker string) (string, error) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scorev1b1.PreviewNamespacePrefix + name,
		Labels: map[string]string{scorev1b1.LabelPreview: name, scorev1b1.LabelPreviewOf: teamA},
		Annotations: map[string]string{scorev1b1.AnnotationPreviewMaker: maker,
			scorev1b1.AnnotationPreviewExpires: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}}}
	if err := by.Create(ctx, ns); err != nil {
		return ns.Name, err
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, ns) })
	if err := admin.Create(ctx, testenv.Workload(ns.Name, "web", testenv.WithPort("http", 80))); err != nil {
		t.Fatal(err)
	}
	return ns.Name, nil
}

// expire sets a preview's expiry to now, as scorectl preview down does, as by.
func expire(by client.Client, ns string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, scorev1b1.AnnotationPreviewExpires, time.Now().UTC().Format(time.RFC3339))
	return by.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// endedByItsMaker is the positive control: a preview its maker expires is ended by the control
// plane (its namespace deleted) — so the controller ran, and left alone what it left alone.
func endedByItsMaker(t *testing.T, maker client.Client, name, makerName string) {
	t.Helper()
	ns, err := makePreview(t, maker, name, makerName)
	if err != nil {
		t.Fatalf("%s makes preview %s: %v", makerName, name, err)
	}
	ready(t, ns, "web", 2*time.Minute)
	if err := expire(maker, ns); err != nil {
		t.Fatalf("%s expires her own preview: %v", makerName, err)
	}
	testenv.Eventually(t, 2*time.Minute, "the control plane ends "+ns, func() error {
		n := &corev1.Namespace{}
		if err := admin.Get(ctx, client.ObjectKey{Name: ns}, n); apierrors.IsNotFound(err) || err == nil && !n.DeletionTimestamp.IsZero() {
			return nil
		}
		return fmt.Errorf("%s is still there", ns)
	})
}

// standing fails the test unless namespace ns and its Workload web are there and not being
// deleted.
func standing(t *testing.T, ns string) {
	t.Helper()
	n := &corev1.Namespace{}
	if err := admin.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil || !n.DeletionTimestamp.IsZero() {
		t.Fatalf("namespace %s: %v, deleting since %v", ns, err, n.DeletionTimestamp)
	}
	w := &scorev1b1.Workload{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, w); err != nil || !w.DeletionTimestamp.IsZero() {
		t.Fatalf("Workload %s/web: %v, deleting since %v", ns, err, w.DeletionTimestamp)
	}
}

// Mallory writes the expiry (and the maker) of alice's preview: refused by the API server, and
// alice's preview stands while one alice expires herself is ended.
func TestHostilePreviewExpiryIsTheMakersAlone(t *testing.T) {
	alice := previewMakers(t)
	victim, err := makePreview(t, alice, "alices", "alice")
	if err != nil {
		t.Fatalf("alice makes her preview: %v", err)
	}
	ready(t, victim, "web", 2*time.Minute)
	err = expire(tenant, victim)
	if err == nil || !strings.Contains(err.Error(), "only the maker of preview "+victim+" (alice) or a platform administrator may change") {
		t.Fatalf("mallory expires alice's preview: %v", err)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, scorev1b1.AnnotationPreviewMaker, mallory)
	if err := tenant.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: victim}}, client.RawPatch(types.MergePatchType, []byte(patch))); err == nil {
		t.Fatal("mallory made alice's preview hers")
	}
	endedByItsMaker(t, alice, "alices-done", "alice")
	standing(t, victim)
	othersUntouched(t)
}

// Mallory labels a namespace whose name starts with preview- (a team's, made before) as an
// expired preview of hers: refused, and it stands while a preview of hers she expires is ended.
func TestHostileLabellingANamespaceMakesNoPreview(t *testing.T) {
	previewMakers(t)
	victim := "preview-prod"
	testenv.Create(t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: victim}})
	t.Cleanup(func() { _ = admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: victim}}) })
	testenv.Create(t, admin, testenv.Workload(victim, "web", testenv.WithPort("http", 80)))
	ready(t, victim, "web", 2*time.Minute)
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"prod"},"annotations":{%q:%q,%q:%q}}}`, scorev1b1.LabelPreview,
		scorev1b1.AnnotationPreviewMaker, mallory, scorev1b1.AnnotationPreviewExpires, time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
	err := tenant.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: victim}}, client.RawPatch(types.MergePatchType, []byte(patch)))
	if err == nil || !strings.Contains(err.Error(), "cannot become a preview") {
		t.Fatalf("mallory labels %s a preview: %v", victim, err)
	}
	endedByItsMaker(t, tenant, "mallorys-done", mallory)
	standing(t, victim)
	othersUntouched(t)
}

// Mallory makes previews in alice's name (refused) and "of" alice's namespace: they count
// against her own limit (previews.max 1), and alice's next preview is admitted.
func TestHostilePreviewsFillOnlyTheirMakersLimit(t *testing.T) {
	alice := previewMakers(t)
	setPreviewMax(t, 1)
	if _, err := makePreview(t, tenant, "forged", "alice"); err == nil || !strings.Contains(err.Error(), `the annotation score.dev/preview-maker must be "mallory", not "alice"`) {
		t.Fatalf("mallory makes a preview in alice's name: %v", err)
	}
	first, err := makePreview(t, tenant, "m-first", mallory)
	if err != nil {
		t.Fatalf("mallory makes her preview: %v", err)
	}
	ready(t, first, "web", 2*time.Minute)
	second, err := makePreview(t, tenant, "m-second", mallory)
	if err != nil {
		t.Fatalf("mallory makes a second preview: %v", err)
	}
	testenv.Eventually(t, time.Minute, "mallory's second preview refused", func() error {
		w := &scorev1b1.Workload{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: second, Name: "web"}, w); err != nil {
			return err
		}
		if c := testenv.Condition(w, scorev1b1.ConditionReady); c.Reason != string(scorev1b1.ReasonPolicyViolation) ||
			!strings.Contains(c.Message, "over the platform's limit of 1 previews per maker") || !strings.Contains(c.Message, "mallory's previews m-first is older") {
			return fmt.Errorf("Ready %s: %s", c.Reason, c.Message)
		}
		return nil
	})
	alices, err := makePreview(t, alice, "a-first", "alice")
	if err != nil {
		t.Fatalf("alice makes her preview: %v", err)
	}
	ready(t, alices, "web", 2*time.Minute)
	othersUntouched(t)
}

// setPreviewMax sets the config's previews.max for the test.
func setPreviewMax(t *testing.T, n int) {
	t.Helper()
	edit := func(v any) error {
		return devenv.EditConfig(ctx, admin, func(doc map[string]any) error {
			if v == nil {
				delete(doc, "previews")
			} else {
				doc["previews"] = map[string]any{"max": v}
			}
			return nil
		})
	}
	if err := edit(n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = edit(nil) })
}

// scorectl preview up keeps score.dev/allowed-profiles: without it a preview of a namespace
// the platform restricts to web-service could run any profile. Mallory's preview of
// such a namespace keeps the restriction (and its Pod Security level).
func TestHostileRestrictedNamespacesPreviewKeepsItsProfiles(t *testing.T) {
	previewMakers(t)
	allowedProfilesPolicy(t)
	restricted := "team-r"
	testenv.Create(t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: restricted,
		Labels: map[string]string{"score.dev/allowed-profiles": "web-service", "pod-security.kubernetes.io/enforce": "baseline"}}})
	t.Cleanup(func() { _ = admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: restricted}}) })
	ns := scorev1b1.PreviewNamespacePrefix + "restricted"
	t.Cleanup(func() { _ = admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}) })
	// Her rights end at the namespace: applying the Workloads is refused, the namespace is made.
	out, _ := scorectlAs(t, mallory, "preview", "up", "restricted", "-f", filepath.Join(testenv.RepoRoot(), "examples", "hello", "score.yaml"), "-n", restricted, "--no-wait")
	n := &corev1.Namespace{}
	if err := admin.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
		t.Fatalf("the preview's namespace: %v\n%s", err, out)
	}
	if n.Labels["score.dev/allowed-profiles"] != "web-service" || n.Labels["pod-security.kubernetes.io/enforce"] != "baseline" || n.Annotations[scorev1b1.AnnotationPreviewMaker] != mallory {
		t.Fatalf("the preview's labels %v and annotations %v", n.Labels, n.Annotations)
	}
	other := testenv.Workload(ns, "db", testenv.WithPort("http", 80), testenv.WithAnnotation(scorev1b1.AnnotationProfile, "stateful-service"))
	if err := admin.Create(ctx, other, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "profile stateful-service is not allowed in this namespace") {
		t.Fatalf("a stateful-service Workload in the preview: %v", err)
	}
	allowed := testenv.Workload(ns, "web", testenv.WithPort("http", 80), testenv.WithAnnotation(scorev1b1.AnnotationProfile, "web-service"))
	if err := admin.Create(ctx, allowed, client.DryRunAll); err != nil {
		t.Fatalf("a web-service Workload in the preview: %v", err)
	}
	othersUntouched(t)
}

// allowedProfilesPolicy installs config/admission/allowed-profiles.yaml for the test and waits
// until the API server enforces it.
func allowedProfilesPolicy(t *testing.T) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "admission", "allowed-profiles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := devenv.DecodeDocuments(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = admin.Delete(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "score-allowed-profiles"}})
		_ = admin.Delete(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "score-allowed-profiles"}})
	})
	probeNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-r-probe", Labels: map[string]string{"score.dev/allowed-profiles": "web-service"}}}
	testenv.Create(t, admin, probeNS)
	t.Cleanup(func() { _ = admin.Delete(ctx, probeNS) })
	probe := testenv.Workload(probeNS.Name, "probe", testenv.WithAnnotation(scorev1b1.AnnotationProfile, "stateful-service"))
	testenv.Eventually(t, 30*time.Second, "the allowed profiles policy in force", func() error {
		if err := admin.Create(ctx, probe.DeepCopy(), client.DryRunAll); err == nil || !strings.Contains(err.Error(), "score-allowed-profiles") {
			return fmt.Errorf("not yet (%v)", err)
		}
		return nil
	})
}

// Control characters in a param must not reach the platform engineer's terminal raw through
// the claim's message and scorectl why (a new window title, a cleared screen, a fake green
// "Ready: True" line). Mallory's route names such a host, which the catalog's route refuses by
// its type (a DNS name) with the value quoted in the Workload's message;
// the same host through a route definition that does not type it reaches the claim's message
// (the platform's host-name rules refuse it). Each message is stored escaped, and why and
// status print it escaped, each on its line.
func TestHostileControlCharactersReachNoTerminal(t *testing.T) {
	params, err := json.Marshal(map[string]any{"host": termtest.Hostile, "port": "http"})
	if err != nil {
		t.Fatal(err)
	}
	create(t, testenv.Workload(teamB, "painter", testenv.WithPort("http", 80), testenv.WithResource("route", "route", testenv.ResourceParams(string(params)))))
	msg := refused(t, teamB, "painter", scorev1b1.ReasonSpecInvalid)
	termtest.Safe(t, "the Workload's message", msg)
	if !strings.Contains(msg, "params.host") || !strings.Contains(msg, termtest.Marker) {
		t.Errorf("the Workload's message %q", msg)
	}
	create(t, testenv.Workload(teamB, "painter-untyped", testenv.WithPort("http", 80), testenv.WithResource("route", "untyped-route", testenv.ResourceParams(string(params)))))
	refused(t, teamB, "painter-untyped", scorev1b1.ReasonPolicyViolation)
	c := claimOf(t, teamB, "painter-untyped", "route")
	termtest.Safe(t, "the claim's message", c.Status.Message)
	if !strings.Contains(c.Status.Message, "may not use host name ok"+termtest.Marker) {
		t.Errorf("the claim's message %q", c.Status.Message)
	}
	if out, err := scorectlAs(t, "", "why", "painter", "-n", teamB); err != nil {
		t.Fatalf("scorectl why: %v\n%s", err, out)
	} else {
		termtest.Safe(t, "scorectl why of the typed route", out)
	}
	out, err := scorectlAs(t, "", "why", "painter-untyped", "-n", teamB)
	if err != nil {
		t.Fatalf("scorectl why: %v\n%s", err, out)
	}
	termtest.Safe(t, "scorectl why", out)
	if !strings.Contains(out, termtest.Marker) {
		t.Errorf("scorectl why does not show the claim's message, escaped:\n%s", out)
	}
	// The Workload's own message is neutral; the table around it must be safe all the same.
	if out, err := scorectlAs(t, "", "status", "-n", teamB); err != nil {
		t.Fatalf("scorectl status: %v\n%s", err, out)
	} else {
		termtest.Safe(t, "scorectl status", out)
	}
	othersUntouched(t)
}

var (
	scorectlOnce sync.Once
	scorectlBin  string
	scorectlErr  error
)

// scorectlAs runs scorectl as user (impersonated; "" is the administrator) and returns what it
// printed.
func scorectlAs(t *testing.T, user string, args ...string) (string, error) {
	t.Helper()
	scorectlOnce.Do(func() { scorectlBin, scorectlErr = testenv.BuildCommand(state, "scorectl") })
	if scorectlErr != nil {
		t.Fatal(scorectlErr)
	}
	kubeconfig := testenv.Kubeconfig(t, adminConfig)
	if user != "" {
		kc, err := clientcmd.LoadFromFile(kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		for _, auth := range kc.AuthInfos {
			auth.Impersonate, auth.ImpersonateGroups = user, []string{"system:authenticated"}
		}
		if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(scorectlBin, append(args, "--kubeconfig", kubeconfig)...).CombinedOutput()
	return string(out), err
}
