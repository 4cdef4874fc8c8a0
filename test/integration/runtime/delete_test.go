package runtime

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/members"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/apply"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/prepare"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// Deleting by name, with no UID precondition, would let an inventory entry whose object went
// and whose name another owner (a tenant, another Workload) took since delete that owner's
// object on the next prune or release. An entry records the UID it was
// applied as, and deletes that object only.
func TestAnObjectReplacedUnderItsNameIsNotDeleted(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	a := &apply.Applier{Client: env.Client, FieldManager: scorev1b1.FieldManagerRuntime}
	marks := prepare.PlanMarks(&scorev1b1.WorkloadPlan{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: scorev1b1.WorkloadPlanSpec{WorkloadRef: scorev1b1.LocalWorkloadRef{Name: "web", UID: "u-web"}}})
	configMap := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetName(name)
		u.SetNamespace(ns)
		return u
	}
	res, err := a.Apply(ctx, []*unstructured.Unstructured{configMap("pruned"), configMap("released")}, marks)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range res.Objects {
		if o.UID == "" {
			t.Fatalf("the inventory entry of %s records no UID", o.Name)
		}
	}
	// Ours went; a tenant's took each name.
	tenants := map[string]*corev1.ConfigMap{}
	for _, o := range res.Objects {
		if err := env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: o.Name}}); err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: o.Name}, Data: map[string]string{"owner": "tenant"}}
		testenv.Create(t, env.Client, cm)
		tenants[o.Name] = cm
	}
	if err := a.Prune(ctx, res.Objects[:1], nil, nil); err != nil {
		t.Fatal(err)
	}
	released, err := a.Release(ctx, res.Objects[1:], nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(released.Remaining) != 0 {
		t.Errorf("the release waits for %v, which is not ours", released.Remaining)
	}
	for name, cm := range tenants {
		live := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), live); err != nil {
			t.Errorf("the tenant's ConfigMap %s: %v", name, err)
		} else if live.UID != cm.UID {
			t.Errorf("the tenant's ConfigMap %s was replaced", name)
		}
	}
	// An entry from before UIDs were recorded is still deleted by name.
	legacy := res.Objects[0]
	legacy.UID = ""
	if _, err := a.Release(ctx, []scorev1b1.AppliedObject{legacy}, nil); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: legacy.Name}, &corev1.ConfigMap{}); err == nil {
		t.Error("an entry without a UID was not deleted")
	}
}

// What Release reports is what it did: a release that kept an object for another consumer
// must not count it as deleted, or a moved claim then deletes the instance's state on the
// cluster it left, from under the consumer that stayed.
func TestAReleaseCountsWhatItKept(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	a := &apply.Applier{Client: env.Client, FieldManager: scorev1b1.FieldManagerProvisioner}
	var objs []*unstructured.Unstructured
	for _, name := range []string{"shared", "own"} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetName(name)
		objs = append(objs, u)
	}
	res, err := a.Apply(ctx, objs, prepare.InstanceMarks(ns, "0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	var pool *members.Pool // the hub only
	released, err := pool.Release(ctx, a, res.Objects, func(o scorev1b1.AppliedObject) (bool, error) { return o.Name == "shared", nil })
	if err != nil {
		t.Fatal(err)
	}
	if released.Deleted[""] != 1 || released.Kept[""] != 1 {
		t.Fatalf("deleted %v, kept %v: want one of each on the hub", released.Deleted, released.Kept)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shared"}, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("the kept object: %v", err)
	}
}
