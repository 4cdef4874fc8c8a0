package why

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/termtest"
)

// config is a config of one profile and one backend that serves postgres.
func config(t *testing.T) *orchconfig.Config {
	t.Helper()
	cfg, err := orchconfig.Parse([]byte(`apiVersion: score.dev/v1b1
kind: OrchestratorConfig
profiles:
  - name: web-service
    backends:
      - {backendId: k8s-web, runtimeClass: kubernetes, version: 1.0.0, template: {kind: manifests, ref: "oci://registry.example/web@sha256:0000000000000000000000000000000000000000000000000000000000000000"}}
provisioners:
  - {uri: "template://dev/postgres", type: postgres, outputs: "host: x"}
`))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// why names each cause once: a dependency nobody serves is the resolver's message and the
// claim's message at once, and was printed twice.
func TestWhyNamesEachCauseOnce(t *testing.T) {
	cfg := config(t)
	w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api", UID: "u"},
		Spec: scorev1b1.WorkloadSpec{Containers: map[string]scorev1b1.Container{"main": {Image: "nginx"}}, Resources: map[string]scorev1b1.Resource{"db": {Type: "postgresql"}}},
		Status: scorev1b1.WorkloadStatus{Conditions: []metav1.Condition{
			{Type: scorev1b1.ConditionInputsValid, Status: metav1.ConditionTrue, Reason: "Succeeded"},
			{Type: scorev1b1.ConditionClaimsReady, Status: metav1.ConditionFalse, Reason: "ClaimFailed", Message: `Dependency "db" could not be provisioned.`},
			{Type: scorev1b1.ConditionReady, Status: metav1.ConditionFalse, Reason: "ClaimFailed", Message: `Dependency "db" could not be provisioned.`}}}}
	message := "No provisioner serves postgresql. Available types: postgres. Did you mean postgres? A platform engineer serves a new type by adding a provisioner definition (score-k8s's provisioner file format) to the Orchestrator Config's provisioners."
	yes := true
	claim := scorev1b1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api-db", OwnerReferences: []metav1.OwnerReference{{APIVersion: "score.dev/v1b1", Kind: "Workload", Name: "api", UID: "u", Controller: &yes}}},
		Spec:   scorev1b1.ResourceClaimSpec{Key: "db", Type: "postgresql"},
		Status: scorev1b1.ResourceClaimStatus{Phase: scorev1b1.ClaimPhaseFailed, Message: message}}
	var out bytes.Buffer
	if err := Explain(&out, Input{Workload: w, Config: cfg, Claims: []scorev1b1.ResourceClaim{claim}}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "No provisioner serves postgresql"); n != 1 {
		t.Fatalf("the cause appears %d times:\n%s", n, out.String())
	}
}

func TestWhyNamesTheConfigRevision(t *testing.T) {
	cfg := config(t)
	w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"}, Spec: scorev1b1.WorkloadSpec{Containers: map[string]scorev1b1.Container{"main": {Image: "nginx"}}}}
	older, current := orchconfig.Revision([]byte("a")), orchconfig.Revision([]byte("b"))
	plan := &scorev1b1.WorkloadPlan{Spec: scorev1b1.WorkloadPlanSpec{ConfigRevision: older}}
	for _, tc := range []struct {
		current, want string
	}{
		{older, "Config: revision " + orchconfig.ShortRevision(older) + ", the current one"},
		{current, "Config: the plan was written from revision " + orchconfig.ShortRevision(older) + "; the current one is " + orchconfig.ShortRevision(current)},
	} {
		var out bytes.Buffer
		if err := Explain(&out, Input{Workload: w, Config: cfg, ConfigRevision: tc.current, Plan: plan}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), tc.want+"\n") {
			t.Fatalf("want %q in:\n%s", tc.want, out.String())
		}
	}
}

// A Workload of a preview environment says so first: which preview, of which namespace, when
// the control plane deletes it; a namespace that is no preview says nothing.
func TestExplainNamesThePreview(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, namespace, label, want string
	}{
		{name: "a preview", namespace: "preview-pr-1", label: "pr-1",
			want: "Preview environment: preview pr-1 of namespace shop, expires 2026-11-27T14:00:00Z (in 4h0m0s); the control plane deletes it then with its dependencies (Delete)\n"},
		{name: "a label alone", namespace: "shop", label: "pr-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := workloadIn(nil, "Ready=True/Succeeded")
			w.Namespace = tc.namespace
			ns := &unstructured.Unstructured{}
			ns.SetAPIVersion("v1")
			ns.SetKind("Namespace")
			ns.SetName(tc.namespace)
			ns.SetLabels(map[string]string{scorev1b1.LabelPreview: tc.label, scorev1b1.LabelPreviewOf: "shop"})
			ns.SetAnnotations(map[string]string{scorev1b1.AnnotationPreviewExpires: now.Add(4 * time.Hour).Format(time.RFC3339)})
			ns.SetCreationTimestamp(metav1.NewTime(now.Add(-time.Hour)))
			in := Input{Workload: w, Config: config(t), Now: now}
			in.Observed = Observed{namespaceRead(in): {Objects: []*unstructured.Unstructured{ns}}}
			var out bytes.Buffer
			if err := Explain(&out, in); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(out.String(), "Preview environment:"); got != (tc.want != "") || tc.want != "" && !strings.Contains(out.String(), tc.want) {
				t.Fatalf("want %q in:\n%s", tc.want, out.String())
			}
		})
	}
}

// TestWhyEscapesWhatItQuotes: a Workload whose profile annotation, Ready message and failed
// dependency's message are full of terminal escapes (a param a provisioner quoted) gets a
// trace that acts on no terminal and keeps each quote on its line, so a tenant's text cannot
// rewrite what an operator reads.
func TestWhyEscapesWhatItQuotes(t *testing.T) {
	cfg := config(t)
	w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api", UID: "u", Annotations: map[string]string{scorev1b1.AnnotationProfile: termtest.Hostile}},
		Spec: scorev1b1.WorkloadSpec{Containers: map[string]scorev1b1.Container{"main": {Image: "nginx"}}, Resources: map[string]scorev1b1.Resource{"db": {Type: "postgres"}}},
		Status: scorev1b1.WorkloadStatus{Conditions: []metav1.Condition{
			{Type: scorev1b1.ConditionInputsValid, Status: metav1.ConditionTrue, Reason: "Succeeded"},
			{Type: scorev1b1.ConditionClaimsReady, Status: metav1.ConditionFalse, Reason: "ClaimFailed", Message: termtest.Hostile},
			{Type: scorev1b1.ConditionReady, Status: metav1.ConditionFalse, Reason: "ClaimFailed", Message: termtest.Hostile}}}}
	yes := true
	claim := scorev1b1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api-db", OwnerReferences: []metav1.OwnerReference{{APIVersion: "score.dev/v1b1", Kind: "Workload", Name: "api", UID: "u", Controller: &yes}}},
		Spec:   scorev1b1.ResourceClaimSpec{Key: "db", Type: "postgres"},
		Status: scorev1b1.ResourceClaimStatus{Phase: scorev1b1.ClaimPhaseFailed, Reason: scorev1b1.ReasonClaimFailed, Message: "Provisioner template://dev/postgres: " + termtest.Hostile}}
	var out bytes.Buffer
	if err := Explain(&out, Input{Workload: w, Config: cfg, Claims: []scorev1b1.ResourceClaim{claim}}); err != nil {
		t.Fatal(err)
	}
	termtest.Safe(t, "why", out.String())
	if n := strings.Count(out.String(), termtest.Marker); n < 3 {
		t.Errorf("the hostile text is quoted %d times, want the profile, Ready and the claim:\n%s", n, out.String())
	}
}
