package dashboard

import (
	"context"
	"html"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/scheme"
)

const traceConfig = `apiVersion: score.dev/v1b1
kind: OrchestratorConfig
profiles:
  - name: web-service
    backends:
      - {backendId: k8s-web, runtimeClass: kubernetes, version: 1.0.0, template: {kind: manifests, ref: "oci://registry.example/web@sha256:0000000000000000000000000000000000000000000000000000000000000000"}}
`

// The Workload page's trace names the objects in the way as scorectl why does, read with the
// user's rights: the Deployment it may read, and, where its rights stop (pods here), that it
// could not read them. It asks nothing of a Secret, not even whether the plan's outputs Secret
// exists, and says so.
func TestTraceNamesWhatIsInTheWayWithTheUsersRights(t *testing.T) {
	const ns = "team-a"
	w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", UID: "w-uid"},
		Spec: scorev1b1.WorkloadSpec{Containers: map[string]scorev1b1.Container{"main": {Image: "nginx"}}},
		Status: scorev1b1.WorkloadStatus{Conditions: []metav1.Condition{
			{Type: scorev1b1.ConditionInputsValid, Status: metav1.ConditionTrue, Reason: "Succeeded", LastTransitionTime: metav1.Now()},
			{Type: scorev1b1.ConditionClaimsReady, Status: metav1.ConditionTrue, Reason: "Succeeded", LastTransitionTime: metav1.Now()},
			{Type: scorev1b1.ConditionRuntimeReady, Status: metav1.ConditionUnknown, Reason: "RuntimeProvisioning", LastTransitionTime: metav1.Now()},
			{Type: scorev1b1.ConditionReady, Status: metav1.ConditionFalse, Reason: "RuntimeProvisioning", Message: "The workload is being deployed.", LastTransitionTime: metav1.Now()}}}}
	plan := &scorev1b1.WorkloadPlan{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Status: scorev1b1.WorkloadPlanStatus{Phase: scorev1b1.PlanPhasePlanning, Objects: []scorev1b1.AppliedObject{
			{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "web", Health: scorev1b1.HealthInProgress, Message: "Deployment not Available"}}}}
	plan.Spec.Claims = []scorev1b1.PlanClaim{{Key: "db", ClaimName: "web-db", SecretName: "web-db-outputs"}}
	secretAsked := false
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:   appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status: appsv1.DeploymentStatus{UpdatedReplicas: 1}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "score-system", Name: "orchestrator-config"}, Data: map[string]string{"config.yaml": traceConfig}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(w, plan, dep, cm).
		WithIndex(&corev1.Event{}, "involvedObject.kind", func(o client.Object) []string { return []string{o.(*corev1.Event).InvolvedObject.Kind} }).
		WithIndex(&corev1.Event{}, "involvedObject.name", func(o client.Object) []string { return []string{o.(*corev1.Event).InvolvedObject.Name} }).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if r, ok := obj.(*authorizationv1.SelfSubjectAccessReview); ok {
					r.Status.Allowed = true
					return nil
				}
				return c.Create(ctx, obj, opts...)
			},
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if gvk, _ := c.GroupVersionKindFor(obj); gvk.Kind == "Secret" || obj.GetObjectKind().GroupVersionKind().Kind == "Secret" {
					secretAsked = true
				}
				return c.Get(ctx, key, obj, opts...)
			},
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if u, ok := list.(*unstructured.UnstructuredList); ok && u.GetKind() == "PodList" {
					return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
				}
				return c.List(ctx, list, opts...)
			},
		}).Build()
	s, err := newServer(Options{AllowedHosts: []string{testHost}, Coalesce: time.Millisecond, ConfigNamespace: "score-system", ConfigName: "orchestrator-config", ConfigKey: "config.yaml"}, c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp := request(t, ctx, listen(t, s), "/workloads/"+ns+"/web")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s\n%s", resp.Status, body)
	}
	page := html.UnescapeString(string(body))
	if secretAsked {
		t.Fatal("the dashboard asked the API server about a Secret")
	}
	for _, want := range []string{
		"In the way:\n  Secret team-a/web-db-outputs (the secret outputs of dependency db): not read: the dashboard asks nothing of Secrets",
		"\n  Deployment team-a/web: 0 of 1 replicas ready, 1 updated, 0 available",
		"\n    its pods: not read: your rights do not let you list pods in team-a",
	} {
		if !strings.Contains(page, want) {
			t.Fatalf("the trace lacks %q:\n%s", want, page)
		}
	}
}
