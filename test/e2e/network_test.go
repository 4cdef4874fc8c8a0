package e2e

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// A provisioned database admits only its consumers: two Workloads sharing one postgres (the
// same id) and a third that claims none. The simulated cluster has no data plane, so the test
// reads the rendered policy and matches it against the pods' labels as a network plugin would.
func TestNetworkPolicyAdmitsOnlyConsumers(t *testing.T) {
	ns := "e2e-network"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	shared := map[string]scorev1b1.Resource{"db": {Type: "postgres", ID: ptr.To("orders-db")}}
	for name, resources := range map[string]map[string]scorev1b1.Resource{"api": shared, "worker": shared, "stranger": nil} {
		w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: scorev1b1.WorkloadSpec{
			Containers: map[string]scorev1b1.Container{"main": {Image: "busybox:1.37"}}, Resources: resources}}
		if err := c.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	podLabels := map[string]labels.Set{}
	for _, name := range []string{"api", "worker", "stranger"} {
		waitWorkload(t, client.ObjectKey{Namespace: ns, Name: name}, "Ready", func(*scorev1b1.Workload) error {
			dep := &appsv1.Deployment{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep); err != nil {
				return err
			}
			podLabels[name] = dep.Spec.Template.Labels
			return nil
		})
	}
	var policies networkingv1.NetworkPolicyList
	if err := c.List(ctx, &policies, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(policies.Items) != 1 {
		t.Fatalf("one shared instance, one policy: %d", len(policies.Items))
	}
	policy := policies.Items[0]
	admits := func(pod labels.Set) (bool, error) {
		for _, rule := range policy.Spec.Ingress {
			for _, peer := range rule.From {
				sel, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
				if err != nil {
					return false, err
				}
				if peer.NamespaceSelector == nil && sel.Matches(pod) {
					return true, nil
				}
			}
		}
		return false, nil
	}
	for name, want := range map[string]bool{"api": true, "worker": true, "stranger": false} {
		got, err := admits(podLabels[name])
		if err != nil || got != want {
			t.Errorf("%s (labels %v): admitted %v, want %v (%v)", name, podLabels[name], got, want, err)
		}
	}
	var sets appsv1.StatefulSetList
	if err := c.List(ctx, &sets, client.InNamespace(ns)); err != nil || len(sets.Items) != 1 {
		t.Fatalf("the instance's server: %v %d", err, len(sets.Items))
	}
	sel, err := metav1.LabelSelectorAsSelector(&policy.Spec.PodSelector)
	if err != nil || !sel.Matches(labels.Set(sets.Items[0].Spec.Template.Labels)) {
		t.Fatal(fmt.Errorf("the policy must select the server's pods: %v", err))
	}
}
