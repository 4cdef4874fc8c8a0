// Package admission tests the ValidatingAdmissionPolicies of config/admission on a real
// kube-apiserver: what each allows and denies (the preview makers' by the users it tells
// apart); with the orchestrator and the runtime running, that a derived object the image
// policy denies surfaces on the Workload as PolicyViolation and recovers once the Workload is
// fixed; and, with the orchestrator and the preview controller, that a preview made without
// the preview makers' policy is neither admitted nor ended.
package admission

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/controlplane"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

var (
	env *testenv.Env
	ctx = context.Background()
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, func(_ context.Context, e *testenv.Env) error {
		env = e // the controllers start with the test that needs them
		return nil
	}))
}

// installPolicies creates score-system and every object of config/admission, then waits until
// the API server has type-checked each policy (no warnings) and enforces it.
func installPolicies(t *testing.T) {
	t.Helper()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "score-system"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "config", "admission", "*.yaml"))
	files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "kustomization.yaml" }) // the base's, not a policy
	if err != nil || len(files) != 4 {
		t.Fatalf("config/admission: %v %v", files, err)
	}
	var policies []string
	for _, f := range files {
		for _, o := range decodeFile(t, f) {
			if err := env.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
			}
			if o.GetKind() == "ValidatingAdmissionPolicy" {
				policies = append(policies, o.GetName())
			}
		}
	}
	// Type-checking status is written by kube-controller-manager, which this environment does
	// not run: check the warnings where there is a status, and prove each policy by what it
	// denies (below and in the tests).
	for _, name := range policies {
		p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			t.Fatal(err)
		}
		if tc := p.Status.TypeChecking; tc != nil && len(tc.ExpressionWarnings) > 0 {
			t.Fatalf("policy %s: type-checking warnings %+v", name, tc.ExpressionWarnings)
		}
	}
	// The admission plugin learns of policies through its own informer: wait until each
	// binding's policy refuses what it should.
	ns := namespace(t, nil)
	inForce := func(obj client.Object, policy string) func() error {
		return func() error {
			err := env.Client.Create(ctx, obj, client.DryRunAll)
			if err == nil || !strings.Contains(err.Error(), "'"+policy+"'") {
				return fmt.Errorf("not yet (%v)", err)
			}
			return nil
		}
	}
	testenv.Eventually(t, 20*time.Second, "the label policy is in force", inForce(workload(ns, "probe", "nginx", withLabels(nil)), "score-required-labels"))
	testenv.Eventually(t, 20*time.Second, "the image policy is in force", inForce(deployment(ns, "probe", "nginx"), "score-image-registries"))
	restricted := namespace(t, map[string]string{"score.dev/allowed-profiles": "web-service"})
	testenv.Eventually(t, 20*time.Second, "the profile policy is in force", inForce(workload(restricted, "probe", "nginx", withProfile("stateful")), "score-allowed-profiles"))
	forged := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "preview-probe", Labels: map[string]string{scorev1b1.LabelPreview: "probe"},
		Annotations: map[string]string{scorev1b1.AnnotationPreviewMaker: "someone-else"}}}
	testenv.Eventually(t, 20*time.Second, "the preview makers' policy is in force", inForce(forged, "score-preview-makers"))
}

func decodeFile(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := devenv.DecodeDocuments(raw)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return objs
}

var nsN int

func namespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	nsN++
	name := fmt.Sprintf("a%02d", nsN)
	testenv.Create(t, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
	return name
}

type wlOpt func(*scorev1b1.Workload)

func withProfile(p string) wlOpt {
	return func(w *scorev1b1.Workload) { w.Annotations = map[string]string{"score.dev/profile": p} }
}

func withLabels(l map[string]string) wlOpt { return func(w *scorev1b1.Workload) { w.Labels = l } }

// workload builds a Workload carrying the label team unless an option says otherwise.
func workload(ns, name, image string, opts ...wlOpt) *scorev1b1.Workload {
	w := &scorev1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": "payments"}},
		Spec:       scorev1b1.WorkloadSpec{Containers: map[string]scorev1b1.Container{"main": {Image: image}}},
	}
	for _, o := range opts {
		o(w)
	}
	return w
}

func podTemplate(images ...string) corev1.PodTemplateSpec {
	spec := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}}
	for i, image := range images {
		c := corev1.Container{Name: fmt.Sprintf("c%d", i), Image: image}
		if i == 0 {
			spec.Spec.Containers = append(spec.Spec.Containers, c)
		} else {
			spec.Spec.InitContainers = append(spec.Spec.InitContainers, c)
		}
	}
	return spec
}

// deployment builds a Deployment as the runtime labels it (score.dev/workload); the first
// image is the container's, the others init containers'.
func deployment(ns, name string, images ...string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{scorev1b1.LabelWorkload: name}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			Template: podTemplate(images...),
		},
	}
}

// admits says whether the API server admits obj (a dry-run create), and why not.
func admits(obj client.Object) (bool, string) {
	err := env.Client.Create(ctx, obj, client.DryRunAll)
	if err == nil {
		return true, ""
	}
	return false, err.Error()
}

type admissionCase struct {
	name  string
	obj   client.Object
	allow bool
	// message is part of the denial's message.
	message string
}

func run(t *testing.T, cases []admissionCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, msg := admits(tc.obj)
			if ok != tc.allow || !strings.Contains(msg, tc.message) {
				t.Fatalf("admitted=%v, want %v; message %q, want it to contain %q", ok, tc.allow, msg, tc.message)
			}
		})
	}
}

func TestPolicies(t *testing.T) {
	installPolicies(t)
	restricted := namespace(t, map[string]string{"score.dev/allowed-profiles": "web-service.batch-job"})
	open := namespace(t, nil)

	t.Run("allowed profiles", func(t *testing.T) {
		run(t, []admissionCase{
			{"a listed profile", workload(restricted, "web", "nginx", withProfile("web-service")), true, ""},
			{"another listed profile", workload(restricted, "job", "nginx", withProfile("batch-job")), true, ""},
			{"an unlisted profile", workload(restricted, "db", "nginx", withProfile("stateful")), false,
				"profile stateful is not allowed in this namespace; allowed: web-service, batch-job"},
			{"a profile that only contains a listed one", workload(restricted, "svc", "nginx", withProfile("web")), false, "profile web is not allowed"},
			{"no profile", workload(restricted, "none", "nginx"), false, "this namespace requires the score.dev/profile annotation, one of: web-service, batch-job"},
			{"any profile in a namespace without the label", workload(open, "db", "nginx", withProfile("stateful")), true, ""},
		})
	})

	t.Run("required labels", func(t *testing.T) {
		run(t, []admissionCase{
			{"with a team", workload(open, "wa", "nginx"), true, ""},
			{"without labels", workload(open, "wb", "nginx", withLabels(nil)), false, "the Workload must carry the label(s): team"},
			{"with other labels only", workload(open, "wc", "nginx", withLabels(map[string]string{"app": "c"})), false, "label(s): team"},
			{"with an empty team", workload(open, "wd", "nginx", withLabels(map[string]string{"team": ""})), false, "label(s): team"},
		})
	})

	t.Run("image registries", func(t *testing.T) {
		job := func(name string, images ...string) *batchv1.Job {
			tmpl := podTemplate(images...)
			tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
			return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: open, Name: name, Labels: map[string]string{scorev1b1.LabelWorkload: name}},
				Spec: batchv1.JobSpec{Template: tmpl}}
		}
		sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: open, Name: "db", Labels: map[string]string{scorev1b1.LabelWorkload: "web"}},
			Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}, Template: podTemplate("postgres:17")}}
		unlabelled := deployment(open, "platform-tool", "nginx")
		unlabelled.Labels = nil
		run(t, []admissionCase{
			{"an allowed registry", deployment(open, "a", "registry.example.internal/team/web:1.0"), true, ""},
			{"an allowed registry with a port", deployment(open, "b", "registry.example.internal:5000/web@sha256:"+strings.Repeat("a", 64)), true, ""},
			{"a short name", deployment(open, "c", "nginx:1.27"), false,
				"image nginx:1.27 of container c0 is not from an allowed registry (registry.example.internal/, registry.example.internal:5000/)"},
			{"a look-alike host", deployment(open, "d", "registry.example.internal.evil/web:1"), false, "not from an allowed registry"},
			{"a denied init container", deployment(open, "e", "registry.example.internal/web:1", "busybox"), false, "image busybox of container c1"},
			{"a Job", job("j1", "busybox"), false, "not from an allowed registry"},
			{"an allowed Job", job("j2", "registry.example.internal/tools/migrate:3"), true, ""},
			{"a StatefulSet", sts, false, "image postgres:17"},
			{"an object not deployed for a Workload", unlabelled, true, ""},
		})
	})
}

// The runtime's Deployment is refused by the image policy: the Workload says PolicyViolation,
// with the neutral message; fixing the image lets the runtime deploy it.
func TestImagePolicyViolationSurfaces(t *testing.T) {
	installPolicies(t)
	startControllers(t)
	ns := namespace(t, nil)

	w := workload(ns, "web", "nginx:1.27")
	testenv.Create(t, env.Client, w)
	cond := waitFor(t, ns, "web", scorev1b1.ConditionRuntimeReady, metav1.ConditionFalse, scorev1b1.ReasonPolicyViolation)
	if cond.Message != "A platform policy denied the workload's deployment." {
		t.Fatalf("message %q", cond.Message)
	}
	waitFor(t, ns, "web", scorev1b1.ConditionReady, metav1.ConditionFalse, scorev1b1.ReasonPolicyViolation)
	p := &scorev1b1.WorkloadPlan{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, p); err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != scorev1b1.PlanPhaseFailed || !strings.Contains(p.Status.Message, "score-image-registries") {
		t.Fatalf("plan %s: %s", p.Status.Phase, p.Status.Message)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a denied Deployment exists: %v", err)
	}

	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	w.Spec.Containers["main"] = scorev1b1.Container{Image: "registry.example.internal/nginx:1.27"}
	if err := env.Client.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	// No controller-manager runs here, so the Deployment never becomes available: deploying is
	// as far as it goes.
	waitFor(t, ns, "web", scorev1b1.ConditionRuntimeReady, metav1.ConditionUnknown, scorev1b1.ReasonRuntimeProvisioning)
	// The status says so as soon as the new plan is written; the runtime applies it next.
	testenv.Eventually(t, testenv.WaitTimeout, "the fixed Deployment applied", func() error {
		dep := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, dep); err != nil {
			return err
		}
		if img := dep.Spec.Template.Spec.Containers[0].Image; img != "registry.example.internal/nginx:1.27" {
			return fmt.Errorf("image %s", img)
		}
		return nil
	})
}

const configTemplate = `apiVersion: score.dev/v1b1
kind: OrchestratorConfig
profiles:
  - name: web-service
    backends:
      - backendId: k8s-web
        runtimeClass: kubernetes
        version: 1.0.0
        template: {kind: manifests, ref: "configmap://score-system/score-templates/web-service.yaml", digest: "%s", values: {replicas: 1}}
defaults: {profile: web-service}
`

// startControllers runs the controllers named (the orchestrator and the runtime when none are)
// as score-controllers wires them, with the default web-service template.
func startControllers(t *testing.T, controllers ...string) {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "templates", "web-service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "score-system", Name: "score-templates"}, Data: map[string]string{"web-service.yaml": string(text)}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "score-system", Name: "orchestrator-config"}, Data: map[string]string{"config.yaml": fmt.Sprintf(configTemplate, testenv.Digest(text))}},
	} {
		if err := env.Client.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	opts := controlplane.DefaultOptions()
	opts.Controllers = controllers
	if len(controllers) == 0 {
		opts.Controllers = []string{controlplane.Orchestrator, controlplane.Runtime}
	}
	base := testenv.ManagerOptions()
	base.Controller.SkipNameValidation = ptr.To(true) // the controllers of an earlier test, stopped
	mgrs, err := controlplane.NewManagers(env.Config, opts, base)
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	for _, mgr := range mgrs {
		go func() {
			if err := mgr.Start(mctx); err != nil && mctx.Err() == nil {
				t.Errorf("a manager stopped: %v", err)
			}
		}()
	}
}

// waitFor waits until the Workload's condition has the status and reason, and returns it.
func waitFor(t *testing.T, ns, name, condType string, status metav1.ConditionStatus, reason scorev1b1.Reason) metav1.Condition {
	t.Helper()
	w := testenv.WaitForCondition(t, env.Client, client.ObjectKey{Namespace: ns, Name: name}, condType, status, reason)
	return testenv.Condition(w, condType)
}
