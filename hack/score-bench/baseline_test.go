package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/health"
)

// The baseline creates what the controllers would apply for the same Workloads: the
// provisioned objects and an outputs Secret per claim first, the runtime's objects second, all
// in the baseline's namespace and owned by nothing that would not exist there.
func TestBaselineObjects(t *testing.T) {
	raw, err := orchconfig.DevelopmentConfig(os.DirFS("../.."))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := orchconfig.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	stages, err := baselineObjects(context.Background(), "../..", cfg, []string{kindPostgres, kindNone})
	if err != nil {
		t.Fatal(err)
	}
	kinds := func(i int) []string {
		var out []string
		for _, o := range stages[i] {
			if o.GetNamespace() != baselineNS {
				t.Errorf("%s %s in namespace %q", o.GetKind(), o.GetName(), o.GetNamespace())
			}
			if len(o.GetOwnerReferences()) > 0 {
				t.Errorf("%s %s has owners %v", o.GetKind(), o.GetName(), o.GetOwnerReferences())
			}
			out = append(out, o.GetKind())
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	provisioned, applied := kinds(0), kinds(1)
	for _, k := range []string{"StatefulSet", "Service", "Secret"} {
		if !slices.Contains(provisioned, k) {
			t.Errorf("the provisioned stage has %v, no %s", provisioned, k)
		}
	}
	for _, k := range []string{"Deployment", "Service"} {
		if !slices.Contains(applied, k) {
			t.Errorf("the runtime's stage has %v, no %s", applied, k)
		}
	}
	deployments := 0
	for _, o := range stages[1] {
		if o.GetKind() == "Deployment" {
			deployments++
		}
	}
	if deployments != 2 {
		t.Errorf("%d Deployments for two web Workloads", deployments)
	}
}

// The baseline is done when every object it created was last seen healthy: an object not seen
// yet, or seen unhealthy, keeps it waiting; objects it did not create do not count.
func TestHealthTracker(t *testing.T) {
	judge, err := health.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	deployment := func(available bool) *unstructured.Unstructured {
		d := &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Namespace: baselineNS, Name: "web", Generation: 1},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
		}
		if available {
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
				Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}, {Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}}}
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
		if err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: u}
	}
	secret := secret("db-outputs", []string{"password"})
	tr := newHealthTracker([]*unstructured.Unstructured{deployment(false), secret}, judge)
	waiting := func() string {
		w, err := tr.waiting()
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	if w := waiting(); !strings.Contains(w, "2 objects not healthy") {
		t.Fatalf("before anything was seen: %q", w)
	}
	tr.observe(secret)
	other := deployment(true)
	other.SetName("not-ours")
	tr.observe(other)
	tr.observe(deployment(false))
	if w := waiting(); !strings.Contains(w, "1 objects not healthy (Deployment web: InProgress") {
		t.Fatalf("with the Deployment not available: %q", w)
	}
	tr.observe(deployment(true))
	if w := waiting(); w != "" {
		t.Fatalf("with every object healthy: %q", w)
	}
	tr.observe(deployment(false))
	if w := waiting(); w == "" {
		t.Fatal("a Deployment that became unavailable again still counted as healthy")
	}
}
