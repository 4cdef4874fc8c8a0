package placed

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// side is one end of a move: the hub or the member, by its client and its name in a plan's
// inventory.
type side struct {
	name    string // for messages
	cluster string // in the inventory: "" the hub
	c       client.Client
}

func hub() side      { return side{name: "the hub", cluster: "", c: env.Client} }
func memberEU() side { return side{name: "cluster eu", cluster: "eu", c: member.Client} }

// setPlacement labels the Workload so that it selects the backend that places on the member
// (true) or the one that runs on the hub (false).
func setPlacement(t *testing.T, key client.ObjectKey, onMember bool) {
	t.Helper()
	w := &scorev1b1.Workload{}
	if err := env.Client.Get(ctx, key, w); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(w.DeepCopy())
	if onMember {
		metav1.SetMetaDataLabel(&w.ObjectMeta, "placement", "members")
	} else {
		delete(w.Labels, "placement")
	}
	if err := env.Client.Patch(ctx, w, patch); err != nil {
		t.Fatal(err)
	}
}

// readyAt waits until the Workload is Ready for its generation, its plan placed on cluster.
func readyAt(t *testing.T, key client.ObjectKey, s side) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, fmt.Sprintf("%s Ready on %s", key, s.name), func() error {
		w := &scorev1b1.Workload{}
		if err := env.Client.Get(ctx, key, w); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != w.Generation {
			return fmt.Errorf("not Ready: %+v", c)
		}
		if p := planOf(t, key.Namespace, key.Name); p.Spec.Cluster != s.cluster {
			return fmt.Errorf("placed on %q", p.Spec.Cluster)
		}
		return nil
	})
}

// judgedUnhealthy waits until the plan's status, for its generation, holds the Deployment on
// to as applied and not yet healthy, and returns the plan: the runtime has had a pass with the
// new side not healthy.
func judgedUnhealthy(t *testing.T, key client.ObjectKey, to side) *scorev1b1.WorkloadPlan {
	t.Helper()
	var p *scorev1b1.WorkloadPlan
	testenv.Eventually(t, 2*time.Minute, "the Deployment on "+to.name+" applied and judged not healthy yet", func() error {
		p = planOf(t, key.Namespace, key.Name)
		if p.Spec.Cluster != to.cluster || p.Status.ObservedGeneration != p.Generation {
			return fmt.Errorf("plan on %q, generation %d observed %d", p.Spec.Cluster, p.Generation, p.Status.ObservedGeneration)
		}
		for _, o := range p.Status.Objects {
			if o.Cluster == to.cluster && o.Kind == "Deployment" && o.Health != "" && o.Health != "Current" {
				return nil
			}
		}
		return fmt.Errorf("objects %+v", p.Status.Objects)
	})
	return p
}

// gone waits until the Workload's Deployment and Service, and its route's Ingress, are
// deleted from s.
func gone(t *testing.T, key client.ObjectKey, s side) {
	t.Helper()
	testenv.Eventually(t, time.Minute, "the Workload's objects and its dependency's deleted from "+s.name, func() error {
		for _, o := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
			if err := s.c.Get(ctx, key, o); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%T: %v", o, err)
			}
		}
		if n := len(routesOn(t, s, key.Namespace)); n != 0 {
			return fmt.Errorf("%d Ingresses of the route", n)
		}
		return nil
	})
}

// routesOn lists the Ingresses the route dependency provisioned on s.
func routesOn(t *testing.T, s side, ns string) []networkingv1.Ingress {
	t.Helper()
	var list networkingv1.IngressList
	if err := s.c.List(ctx, &list, client.InNamespace(ns), client.HasLabels{scorev1b1.LabelInstance}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// routed waits until its route's Ingress is on s, once, gives it an address as the ingress
// controller there would, and waits until the Workload's endpoint is the route's URL.
func routed(t *testing.T, key client.ObjectKey, s side) {
	t.Helper()
	testenv.Eventually(t, time.Minute, "the route's Ingress on "+s.name+" and its URL the endpoint", func() error {
		routes := routesOn(t, s, key.Namespace)
		if len(routes) != 1 {
			return fmt.Errorf("%d Ingresses", len(routes))
		}
		if ing := &routes[0]; len(ing.Status.LoadBalancer.Ingress) == 0 {
			ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.10"}}
			if err := s.c.Status().Update(ctx, ing); err != nil {
				return err
			}
		}
		w := &scorev1b1.Workload{}
		if err := env.Client.Get(ctx, key, w); err != nil {
			return err
		}
		if w.Status.Endpoint == nil || *w.Status.Endpoint != "http://web.example.com/" {
			return fmt.Errorf("endpoint %q", ptr.Deref(w.Status.Endpoint, ""))
		}
		return nil
	})
}

// move takes a Workload running on from to to, and checks the order: the new side applied
// and judged while the old side is left running; the old side deleted once the new side is
// healthy, and only then; a Placed event for the move and a Moved event for the deletion; the
// dependency (its route's Ingress) moved with it, its URL still the endpoint.
func move(t *testing.T, key client.ObjectKey, from, to side, placed string) {
	t.Helper()
	old := &appsv1.Deployment{}
	if err := from.c.Get(ctx, key, old); err != nil {
		t.Fatal(err)
	}
	setPlacement(t, key, to.cluster != "")

	p := judgedUnhealthy(t, key, to)
	// The positive control: the runtime has judged the new side not healthy. The old side
	// still runs, unchanged, and is still in the inventory.
	still := &appsv1.Deployment{}
	if err := from.c.Get(ctx, key, still); err != nil || still.UID != old.UID || !still.DeletionTimestamp.IsZero() {
		t.Fatalf("the Deployment on %s before the new side is healthy: %v (deleting since %v)", from.name, err, still.DeletionTimestamp)
	}
	if n := len(routesOn(t, from, key.Namespace)); n != 1 {
		t.Fatalf("the route's Ingress on %s before the Workload left it: %d", from.name, n)
	}
	listed := false
	for _, o := range p.Status.Objects {
		listed = listed || (o.Cluster == from.cluster && o.Kind == "Deployment")
	}
	if !listed {
		t.Fatalf("the inventory lost the old side's Deployment: %+v", p.Status.Objects)
	}
	eventWith(t, key.Namespace, key.Name, "Placed", placed)
	for _, e := range events(t, key.Namespace, key.Name) {
		if len(e) > 6 && e[:6] == "Moved:" {
			t.Fatalf("a Moved event before the new side is healthy: %s", e)
		}
	}

	serve(t, to.c, to.name, key.Namespace, key.Name)
	gone(t, key, from)
	eventWith(t, key.Namespace, key.Name, "Moved", fmt.Sprintf("from %s: the workload is healthy on %s.", from.name, to.name))
	routed(t, key, to)
	readyAt(t, key, to)
	for _, o := range planOf(t, key.Namespace, key.Name).Status.Objects {
		if o.Cluster != to.cluster {
			t.Fatalf("the inventory keeps %s %s on %q", o.Kind, o.Name, o.Cluster)
		}
	}
}

// A Workload that starts selecting a backend with placement moves from the hub to the
// member: applied there, healthy there, then deleted from the hub, with a Placed event that
// says it ran on the hub, as a move between members says the member it left (placement's
// Moved knows only a member it left).
func TestMoveHubToMember(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	w := testenv.Workload(ns, "web", testenv.WithPort("http", 80),
		testenv.WithResource("route", "route", testenv.ResourceParams(`{"host":"web.example.com","port":"http"}`)))
	testenv.Create(t, env.Client, w)
	key := client.ObjectKeyFromObject(w)
	serve(t, env.Client, "the hub", ns, "web")
	routed(t, key, hub())
	readyAt(t, key, hub())

	move(t, key, hub(), memberEU(), "Placed on cluster eu: backend k8s-members places on clusters matching env=test; the workload ran on the hub.")
}

// A Workload that stops selecting the backend with placement comes back to the hub: applied
// on the hub, healthy there, then deleted from the member, with a Placed event.
func TestMoveMemberToHub(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	w := testenv.Workload(ns, "web", testenv.WithPort("http", 80),
		testenv.WithResource("route", "route", testenv.ResourceParams(`{"host":"web.example.com","port":"http"}`)))
	w.Labels = map[string]string{"placement": "members"}
	testenv.Create(t, env.Client, w)
	key := client.ObjectKeyFromObject(w)
	serve(t, member.Client, "cluster eu", ns, "web")
	routed(t, key, memberEU())
	readyAt(t, key, memberEU())

	move(t, key, memberEU(), hub(), "Placed on the hub: backend k8s-hub runs its workloads there; the workload ran on cluster eu.")
}
