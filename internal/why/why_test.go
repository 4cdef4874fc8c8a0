package why

import (
	"bytes"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
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
