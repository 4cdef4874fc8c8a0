package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// TestReadyThroughADependencyUpdate: a platform changes the provisioner
// definition of a Bound dependency's type (here postgres's image), the provisioner
// re-provisions the instance (the claim goes Binding while its StatefulSet rolls, its outputs
// still published, then Bound again), and the Workload, whose running version keeps serving,
// stays Ready throughout, with no flip to ClaimPending and back (three events for nothing
// that stopped serving).
func TestReadyThroughADependencyUpdate(t *testing.T) {
	ns := "e2e-dependency-update"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: scorev1b1.WorkloadSpec{
		Containers: map[string]scorev1b1.Container{"main": {Image: "nginx:1.27", Variables: map[string]string{"DB_HOST": "${resources.db.host}"}}},
		Service:    &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"http": {Port: 80}}},
		Resources:  map[string]scorev1b1.Resource{"db": {Type: "postgres"}},
	}}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	start := waitWorkload(t, client.ObjectKeyFromObject(w), "Ready", nil)

	// Everything the Workload and its claim say from here on.
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	workloads, err := wc.Watch(ctx, &scorev1b1.WorkloadList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer workloads.Stop()
	claims, err := wc.Watch(ctx, &scorev1b1.ResourceClaimList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer claims.Stop()
	events := countWorkloadEvents(t, ns, "app")

	// The platform changes the postgres definition: a new image for the instance's pods.
	const before, after = "image: postgres:17-alpine", "image: postgres:17.2-alpine"
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "score-system", Name: "orchestrator-config"}, cm); err != nil {
		t.Fatal(err)
	}
	original := cm.Data["config.yaml"]
	if !strings.Contains(original, before) {
		t.Fatalf("the development config no longer says %q", before)
	}
	cm.Data["config.yaml"] = strings.Replace(original, before, after, 1)
	if err := c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		restored := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "score-system", Name: "orchestrator-config"}, restored); err != nil {
			t.Fatal(err)
		}
		restored.Data["config.yaml"] = original
		if err := c.Update(ctx, restored); err != nil {
			t.Fatal(err)
		}
	})

	// The positive control: the claim went Binding with its outputs published (the
	// re-provisioning) and came back Bound, on the new definition.
	var binding, bound bool
	deadline := time.After(3 * time.Minute)
	for !bound {
		select {
		case ev := <-claims.ResultChan():
			claim, ok := ev.Object.(*scorev1b1.ResourceClaim)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			switch claim.Status.Phase {
			case scorev1b1.ClaimPhaseBinding:
				if !claim.Status.OutputsAvailable {
					t.Fatalf("the outputs were withdrawn while the instance was updated: %+v", claim.Status)
				}
				binding = true
			case scorev1b1.ClaimPhaseBound:
				bound = binding && onImage(t, ns, claim, "postgres:17.2-alpine")
			}
		case <-deadline:
			t.Fatalf("the claim did not re-provision (Binding seen: %v)", binding)
		}
	}
	// The Workload has answered the claim Bound again: it says every dependency is ready, no
	// update under way.
	final := waitWorkload(t, client.ObjectKeyFromObject(w), "Ready after the update", func(w *scorev1b1.Workload) error {
		if c := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionClaimsReady); c == nil || c.Message != "All dependencies are ready." {
			return fmt.Errorf("claims ready %+v", c)
		}
		if len(w.Status.Claims) != 1 || w.Status.Claims[0].Phase != scorev1b1.ClaimPhaseBound {
			return fmt.Errorf("claims %+v", w.Status.Claims)
		}
		return nil
	})

	// What the Workload said meanwhile, up to that version: Ready every time.
	seen := testenv.ReadyThroughout(t, workloads, start.ResourceVersion, final.ResourceVersion, "the dependency was updated")
	t.Logf("the Workload's Ready through the update: %v", seen)
	if n := countWorkloadEvents(t, ns, "app"); n != events {
		t.Errorf("%d events on the Workload during the dependency's update; want none", n-events)
	}
}

// onImage reports whether the StatefulSet the claim provisioned runs image.
func onImage(t *testing.T, ns string, claim *scorev1b1.ResourceClaim, image string) bool {
	t.Helper()
	for _, o := range claim.Status.Resources {
		if o.Kind != "StatefulSet" {
			continue
		}
		set := &appsv1.StatefulSet{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.Name}, set); err != nil {
			t.Fatal(err)
		}
		return set.Spec.Template.Spec.Containers[0].Image == image
	}
	return false
}

// countWorkloadEvents counts the events regarding a Workload.
func countWorkloadEvents(t *testing.T, ns, name string) int {
	t.Helper()
	var list eventsv1.EventList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.Regarding.Kind == "Workload" && e.Regarding.Name == name {
			n++
		}
	}
	return n
}
