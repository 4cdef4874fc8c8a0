package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/conformance"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// score-k8s's own default provisioners, unchanged, provision on the simulated cluster. Two of
// its definitions are left out because they are broken upstream (docs/provisioners.md):
// kafka-topic (an upper-case instance name) and example-provisioner-resource.
func TestScoreK8sDefaultProvisioners(t *testing.T) {
	dir := conformance.Require(t)
	defaults, err := os.ReadFile(filepath.Join(dir, "provisioners", "score-k8s", "internal__provisioners__default__zz-default.provisioners.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var provs []any
	if err := yaml.Unmarshal(defaults, &provs); err != nil {
		t.Fatal(err)
	}
	base, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "samples", "orchestrator-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(base, &doc); err != nil {
		t.Fatal(err)
	}
	doc["provisioners"] = provs
	swapped, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "score-system", Name: "orchestrator-config"}, cm); err != nil {
		t.Fatal(err)
	}
	original := cm.Data["config.yaml"]
	cm.Data["config.yaml"] = string(swapped)
	if err := c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm); err == nil {
			cm.Data["config.yaml"] = original
			_ = c.Update(ctx, cm)
		}
	})

	ns := "e2e-score-k8s"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	types := []string{"postgres", "redis", "mysql", "mongodb", "amqp", "mssql", "s3", "volume", "dns"}
	w := &scorev1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "everything", Namespace: ns},
		Spec: scorev1b1.WorkloadSpec{
			Containers: map[string]scorev1b1.Container{"main": {Image: "busybox"}},
			Service:    &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"web": {Port: 8080}}},
			Resources:  map[string]scorev1b1.Resource{},
		},
	}
	for _, typ := range types {
		w.Spec.Resources["r-"+typ] = scorev1b1.Resource{Type: typ}
	}
	w.Spec.Resources["r-service-port"] = scorev1b1.Resource{Type: "service-port", Params: jsonObject(`{"workload":"everything","port":"web"}`)}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 3*time.Minute, "every claim Bound with its outputs", func() error {
		var claims scorev1b1.ResourceClaimList
		if err := c.List(ctx, &claims, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(claims.Items) != len(types)+1 {
			return fmt.Errorf("%d claims", len(claims.Items))
		}
		for _, cl := range claims.Items {
			if cl.Status.Phase != scorev1b1.ClaimPhaseBound || !cl.Status.OutputsAvailable {
				return fmt.Errorf("%s: %s %s", cl.Spec.Type, cl.Status.Phase, cl.Status.Message)
			}
		}
		return nil
	})
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, "released", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the workload is still there: %v", err)
		}
		return nil
	})
}
