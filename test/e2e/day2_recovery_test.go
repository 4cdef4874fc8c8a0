package e2e

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// Rollback: re-applying an earlier Workload spec converges to exactly the earlier rendered
// state — the same objects, the same pod template, the same Service — with nothing left of
// the newer generation.
func TestRollbackConvergesToTheEarlierState(t *testing.T) {
	ns := "e2e-rollback"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "shop"}
	v1 := scorev1b1.WorkloadSpec{
		Containers: map[string]scorev1b1.Container{"web": {Image: "nginx:1.27", Variables: map[string]string{"MODE": "v1"}}},
		Service:    &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"http": {Port: 80, TargetPort: ptr.To(int32(8080))}}},
	}
	if err := c.Create(ctx, &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}, Spec: *v1.DeepCopy()}); err != nil {
		t.Fatal(err)
	}
	type state struct {
		objects []scorev1b1.AppliedObject
		pod     corev1.PodTemplateSpec
		ports   []corev1.ServicePort
	}
	snapshot := func() state {
		t.Helper()
		p, dep, svc := &scorev1b1.WorkloadPlan{}, &appsv1.Deployment{}, &corev1.Service{}
		for _, o := range []client.Object{p, dep, svc} {
			if err := c.Get(ctx, key, o); err != nil {
				t.Fatal(err)
			}
		}
		return state{objects: p.Status.Objects, pod: dep.Spec.Template, ports: svc.Spec.Ports}
	}
	waitWorkload(t, key, "v1", nil)
	before := snapshot()

	update(t, key, func(w *scorev1b1.Workload) {
		w.Spec.Containers["web"] = scorev1b1.Container{Image: "nginx:1.28", Variables: map[string]string{"MODE": "v2"},
			Files: map[string]scorev1b1.ContainerFile{"/etc/shop.conf": {Content: ptr.To("feature=on\n")}}}
		w.Spec.Service.Ports["admin"] = scorev1b1.ServicePort{Port: 9090}
	})
	waitWorkload(t, key, "v2", func(*scorev1b1.Workload) error {
		if s := snapshot(); len(s.ports) != 2 || len(s.objects) != 3 {
			return fmt.Errorf("v2 not applied: %d ports, %d objects", len(s.ports), len(s.objects))
		}
		return nil
	})
	v2 := snapshot()

	update(t, key, func(w *scorev1b1.Workload) { w.Spec = *v1.DeepCopy() })
	waitWorkload(t, key, "rolled back", func(*scorev1b1.Workload) error {
		after := snapshot()
		if !equality.Semantic.DeepEqual(after.objects, before.objects) {
			return fmt.Errorf("objects %+v, want %+v", after.objects, before.objects)
		}
		if !equality.Semantic.DeepEqual(after.pod, before.pod) || !equality.Semantic.DeepEqual(after.ports, before.ports) {
			return fmt.Errorf("the pod template or the Service differ from v1's")
		}
		return nil
	})
	for _, o := range v2.objects {
		if o.Kind != "ConfigMap" {
			continue
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.Name}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Fatalf("v2's %s %s is left over: %v", o.Kind, o.Name, err)
		}
	}
}

// The lifecycle document's timing promises, measured on the simulated cluster: status within
// 30 s of a spec change, the endpoint within 60 s of the exposure, an error within 15 s of
// the failure, recovery within 30 s of the fix. The test asserts the document's bounds; the
// log shows how far inside them we are.
func TestStatusTimingPromises(t *testing.T) {
	ns := "e2e-timing"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	// until polls cond every 10 ms and returns when it held, failing after limit.
	until := func(what string, limit time.Duration, cond func() bool) time.Time {
		t.Helper()
		deadline := time.Now().Add(limit)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %s", what, limit)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return time.Now()
	}
	get := func(name string) *scorev1b1.Workload {
		w := &scorev1b1.Workload{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	ready := func(w *scorev1b1.Workload) *metav1.Condition {
		return meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
	}

	// Endpoint reflection: from the runtime publishing the exposure to the Workload's endpoint.
	if err := c.Create(ctx, &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: scorev1b1.WorkloadSpec{
		Containers: map[string]scorev1b1.Container{"main": {Image: "nginx:1.27"}},
		Service:    &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"http": {Port: 80}}},
	}}); err != nil {
		t.Fatal(err)
	}
	published := until("the exposure published", time.Minute, func() bool {
		e := &scorev1b1.WorkloadExposure{}
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, e) == nil && len(e.Status.Exposures) > 0
	})
	endpoint := until("the endpoint mirrored", 60*time.Second, func() bool { return get("web").Status.Endpoint != nil }).Sub(published)
	until("web Ready", time.Minute, func() bool { r := ready(get("web")); return r != nil && r.Status == metav1.ConditionTrue })

	// Status: from a spec change to every condition reflecting the new generation.
	update(t, client.ObjectKey{Namespace: ns, Name: "web"}, func(w *scorev1b1.Workload) {
		w.Spec.Containers["main"] = scorev1b1.Container{Image: "nginx:1.28"}
	})
	changed := time.Now()
	status := until("the status of the new generation", 30*time.Second, func() bool {
		w := get("web")
		return w.Status.ObservedGeneration == w.Generation && ready(w) != nil && ready(w).ObservedGeneration == w.Generation
	}).Sub(changed)

	// Error propagation: from a claim failing to the Workload saying so.
	if err := c.Create(ctx, &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken"}, Spec: scorev1b1.WorkloadSpec{
		Containers: map[string]scorev1b1.Container{"main": {Image: "nginx:1.27"}},
		Resources:  map[string]scorev1b1.Resource{"db": {Type: "no-such-database"}},
	}}); err != nil {
		t.Fatal(err)
	}
	failed := until("the claim failed", time.Minute, func() bool {
		var claims scorev1b1.ResourceClaimList
		if err := c.List(ctx, &claims, client.InNamespace(ns), client.MatchingLabels{scorev1b1.LabelWorkload: "broken"}); err != nil || len(claims.Items) != 1 {
			return false
		}
		return claims.Items[0].Status.Phase == scorev1b1.ClaimPhaseFailed
	})
	errorTime := until("the failure on the Workload", 15*time.Second, func() bool {
		r := ready(get("broken"))
		return r != nil && r.Reason == string(scorev1b1.ReasonClaimFailed)
	}).Sub(failed)

	// Recovery detection: from the failure cleared (the dependency dropped) to Ready.
	update(t, client.ObjectKey{Namespace: ns, Name: "broken"}, func(w *scorev1b1.Workload) { w.Spec.Resources = nil })
	fixed := time.Now()
	recovery := until("Ready after the fix", 30*time.Second, func() bool {
		w := get("broken")
		r := ready(w)
		return r != nil && r.Status == metav1.ConditionTrue && r.ObservedGeneration == w.Generation
	}).Sub(fixed)

	t.Logf("status %s (promised 30s), endpoint %s (60s), error %s (15s), recovery %s (30s)",
		status.Round(time.Millisecond), endpoint.Round(time.Millisecond), errorTime.Round(time.Millisecond), recovery.Round(time.Millisecond))
}

// Claim reset: deleting a Workload's ResourceClaim makes the orchestrator create it again and
// the provisioner bind it — to the same data and credentials under Retain, to fresh ones under
// Delete — and the Workload converges by itself, its pods rolled onto the new outputs Secret.
func TestClaimResetRebinds(t *testing.T) {
	ns := "e2e-claim-reset"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	retain := jsonObject(`{"annotations": {"` + scorev1b1.AnnotationDeprovisionPolicy + `": "Retain"}}`)
	w := &scorev1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ledger"},
		Spec: scorev1b1.WorkloadSpec{
			Containers: map[string]scorev1b1.Container{"main": {Image: "busybox", Variables: map[string]string{
				"KEPT_PASSWORD": "${resources.kept.password}", "FRESH_PASSWORD": "${resources.fresh.password}"}}},
			Resources: map[string]scorev1b1.Resource{
				"kept":  {Type: "postgres", Metadata: retain},
				"fresh": {Type: "redis"},
			},
		},
	}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(w)
	// find is the claim of a resource, nil while there is none (between a reset and the new claim).
	find := func(res string) (*scorev1b1.ResourceClaim, error) {
		var list scorev1b1.ResourceClaimList
		if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{scorev1b1.LabelWorkload: "ledger"}); err != nil {
			return nil, err
		}
		for i := range list.Items {
			if list.Items[i].Spec.Key == res {
				return &list.Items[i], nil
			}
		}
		return nil, nil
	}
	claim := func(res string) *scorev1b1.ResourceClaim {
		t.Helper()
		cl, err := find(res)
		if err != nil || cl == nil {
			t.Fatalf("no claim for %s: %v", res, err)
		}
		return cl
	}
	podRevision := func() string {
		t.Helper()
		dep := &appsv1.Deployment{}
		if err := c.Get(ctx, key, dep); err != nil {
			t.Fatal(err)
		}
		return dep.Spec.Template.Labels["score.dev/secrets-revision"]
	}
	waitWorkload(t, key, "first Ready", nil)

	for _, tc := range []struct {
		res  string
		same bool
	}{{"kept", true}, {"fresh", false}} {
		t.Run(tc.res, func(t *testing.T) {
			old := claim(tc.res)
			_, oldSecret := outputsOf(t, old)
			revision := podRevision()
			if err := c.Delete(ctx, old); err != nil {
				t.Fatal(err)
			}
			var now *scorev1b1.ResourceClaim
			waitWorkload(t, key, "Ready on a new claim", func(*scorev1b1.Workload) error {
				var err error
				if now, err = find(tc.res); err != nil || now == nil {
					return fmt.Errorf("no claim yet: %v", err)
				}
				if now.UID == old.UID || now.Status.Phase != scorev1b1.ClaimPhaseBound {
					return fmt.Errorf("claim %s %s", now.UID, now.Status.Phase)
				}
				if podRevision() == revision {
					return fmt.Errorf("the pods still read the old outputs Secret")
				}
				return nil
			})
			_, newSecret := outputsOf(t, now)
			if oldSecret["password"] == "" || (newSecret["password"] == oldSecret["password"]) != tc.same {
				t.Fatalf("same credentials after the reset: %v, want %v", newSecret["password"] == oldSecret["password"], tc.same)
			}
		})
	}
}
