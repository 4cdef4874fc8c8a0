package placed

import (
	"fmt"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// The route a dependency provisions on the member is the Workload's endpoint there, as on the
// hub: the runtime reads it on the member, through a watch there, so that the member's
// ingress controller giving it an address brings the plan back. Looking on the hub only, the
// runtime would give a Workload on a member its Service's cluster DNS name as its endpoint.
func TestProvisionedRouteOnAMember(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	w := testenv.Workload(ns, "web", testenv.WithPort("http", 80),
		testenv.WithResource("route", "route", testenv.ResourceParams(`{"host":"web.example.com","port":"http"}`)))
	w.Labels = map[string]string{"placement": "members"}
	testenv.Create(t, env.Client, w)

	// The Ingress is the provisioner's, on the member, next to the Workload.
	var ing networkingv1.Ingress
	testenv.Eventually(t, 2*time.Minute, "the route's Ingress on the member", func() error {
		var list networkingv1.IngressList
		if err := member.Client.List(ctx, &list, client.InNamespace(ns), client.HasLabels{scorev1b1.LabelInstance}); err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d Ingresses", len(list.Items))
		}
		ing = list.Items[0]
		return nil
	})
	var onHub networkingv1.IngressList
	if err := env.Client.List(ctx, &onHub, client.InNamespace(ns)); err != nil || len(onHub.Items) != 0 {
		t.Fatalf("Ingresses on the hub: %d, %v", len(onHub.Items), err)
	}
	serve(t, member.Client, "the member", ns, "web")

	exposure := func() *scorev1b1.WorkloadExposure {
		e := &scorev1b1.WorkloadExposure{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	testenv.Eventually(t, time.Minute, "the route's URL the Workload's endpoint, waiting for the Ingress's address", func() error {
		got := &scorev1b1.Workload{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
			return err
		}
		if got.Status.Endpoint == nil || *got.Status.Endpoint != "http://web.example.com/" {
			return fmt.Errorf("endpoint %q", ptr.Deref(got.Status.Endpoint, ""))
		}
		if c := meta.FindStatusCondition(exposure().Status.Conditions, scorev1b1.ExposureConditionIngressPending); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("IngressPending %+v", c)
		}
		return nil
	})

	// The member's ingress controller gives the Ingress an address: only the watch on the
	// member tells the runtime.
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.10"}}
	if err := member.Client.Status().Update(ctx, &ing); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the Ingress's address seen on the member", func() error {
		if c := meta.FindStatusCondition(exposure().Status.Conditions, scorev1b1.ExposureConditionIngressPending); c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("IngressPending %+v", c)
		}
		return nil
	})
}
