package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// A Workload that requires a public endpoint gets the k8s-web-public backend, whose template
// adds an Ingress. Its endpoint is the public URL at once, but until an ingress controller
// gives the Ingress an address the Workload is not Ready (NetworkUnavailable); once it has
// one (this test plays the ingress controller) the Workload is Ready.
func TestIngressExposure(t *testing.T) {
	ns := "e2e-exposure"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	w := &scorev1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop", Annotations: map[string]string{scorev1b1.AnnotationRequirements: "public"}},
		Spec: scorev1b1.WorkloadSpec{
			Containers: map[string]scorev1b1.Container{"main": {Image: "nginx:1.27"}},
			Service:    &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"http": {Port: 80, TargetPort: ptr.To(int32(8080))}}},
		},
	}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	get := func() *scorev1b1.Workload {
		got := &scorev1b1.Workload{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	testenv.Eventually(t, 2*time.Minute, "NetworkUnavailable while the Ingress has no address", func() error {
		got := get()
		r := meta.FindStatusCondition(got.Status.Conditions, scorev1b1.ConditionReady)
		if r == nil || r.Status != metav1.ConditionFalse || r.Reason != string(scorev1b1.ReasonNetworkUnavailable) {
			return fmt.Errorf("ready %+v", r)
		}
		if got.Status.Endpoint == nil || *got.Status.Endpoint != "http://shop."+ns+".apps.score.test/" {
			return fmt.Errorf("endpoint %s", ptr.Deref(got.Status.Endpoint, "<none>"))
		}
		return nil
	})

	ing := &networkingv1.Ingress{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, ing); err != nil {
		t.Fatal(err)
	}
	if ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != "score-dev" || ing.Spec.Rules[0].Host != "shop."+ns+".apps.score.test" {
		t.Fatalf("ingress %+v", ing.Spec)
	}
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "203.0.113.10"}}
	if err := c.Status().Update(ctx, ing); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "Ready with the public URL", func() error {
		got := get()
		r := meta.FindStatusCondition(got.Status.Conditions, scorev1b1.ConditionReady)
		if r == nil || r.Status != metav1.ConditionTrue {
			return fmt.Errorf("ready %+v", r)
		}
		if got.Status.Endpoint == nil || *got.Status.Endpoint != "http://shop."+ns+".apps.score.test/" {
			return fmt.Errorf("endpoint %s", ptr.Deref(got.Status.Endpoint, "<none>"))
		}
		return nil
	})
	exp := &scorev1b1.WorkloadExposure{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), exp); err != nil {
		t.Fatal(err)
	}
	if len(exp.Status.Exposures) != 2 || exp.Status.Exposures[0].Scope != scorev1b1.ScopePublic || exp.Status.Exposures[1].Scope != scorev1b1.ScopeClusterLocal {
		t.Fatalf("exposures, best first: %+v", exp.Status.Exposures)
	}
}
