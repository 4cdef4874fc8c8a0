package orchestrator

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// mountsByName mounts the volume name at /data.
func mountsByName(name string) testenv.WorkloadOption {
	return func(w *scorev1b1.Workload) {
		c := w.Spec.Containers["main"]
		c.Volumes = map[string]scorev1b1.ContainerVolume{"/data": {Source: name}}
		w.Spec.Containers["main"] = c
	}
}

// refusedFor waits until the Workload is PolicyViolation saying says, with no claim and no
// plan of its own.
func refusedFor(t *testing.T, ns, name, says string) {
	t.Helper()
	eventually(t, name+" refused", func() error {
		w := get(t, ns, name)
		c := testenv.Condition(w, scorev1b1.ConditionReady)
		if c.Reason != string(scorev1b1.ReasonPolicyViolation) || !strings.Contains(c.Message, says) || c.ObservedGeneration != w.Generation {
			return fmt.Errorf("ready %s: %s", c.Reason, c.Message)
		}
		return nil
	})
}

// A plain-name volume source must not mount any volume claim of the namespace, a colleague's
// database's included. On a real API server, a Workload mounts by name only the
// volumes the platform's rules admit for its namespace — relabelling the namespace admits
// them — and never a volume of a provisioned instance, even one a rule admits, whether the
// instance was there first or came after.
func TestVolumesByNameOnlyAsThePlatformAdmits(t *testing.T) {
	applyConfig(t, baseConfig+"namedVolumes:\n  - namespaceSelector: {matchLabels: {archive: \"yes\"}}\n    names: [\"archive-*\", \"data-*\"]\n")
	t.Cleanup(func() { applyConfig(t, baseConfig) })
	ns := testenv.Namespace(t, env.Client)

	testenv.Create(t, env.Client, workload(ns, "reader", mountsByName("archive-2026")))
	t.Run("a name the namespace is not admitted: nothing created, the Workload says which and why", func(t *testing.T) {
		refusedFor(t, ns, "reader", "spec.containers.main.volumes./data.source: The platform does not let namespace "+ns+" mount volume archive-2026 by name; it admits no volume by name there.")
		p := &scorev1b1.WorkloadPlan{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "reader"}, p); err == nil {
			t.Fatal("a plan was written for the refused Workload")
		}
	})

	t.Run("labelled by the platform, the namespace mounts it", func(t *testing.T) {
		namespace := &corev1.Namespace{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: ns}, namespace); err != nil {
			t.Fatal(err)
		}
		metav1.SetMetaDataLabel(&namespace.ObjectMeta, "archive", "yes")
		if err := env.Client.Update(ctx, namespace); err != nil {
			t.Fatal(err)
		}
		if p := planOf(t, ns, "reader"); len(p.Spec.Projection.Containers) != 1 || p.Spec.Projection.Containers[0].Volumes[0].Source == nil {
			t.Fatalf("plan %+v", p.Spec.Projection.Containers)
		}
	})

	// An instance of the namespace: a colleague's database on a stateful set, as its claim's
	// inventory lists it (the test plays the provisioner).
	testenv.Create(t, env.Client, workload(ns, "owner", testenv.WithResource("db", "postgres")))
	owner := claimOf(t, get(t, ns, "owner"), "db", "postgres")
	instance := func(set string) scorev1b1.ResourceClaimStatus {
		return scorev1b1.ResourceClaimStatus{Phase: scorev1b1.ClaimPhaseBound, Provisioner: "test", Instance: "0123456789abcdef",
			Resources: []scorev1b1.AppliedObject{{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: ns, Name: set}}}
	}
	setClaimStatus(t, owner, instance("pg-1a2b3c4d5e6f"))

	t.Run("a colleague's database volume, though a rule admits the name", func(t *testing.T) {
		testenv.Create(t, env.Client, workload(ns, "thief", mountsByName("data-pg-1a2b3c4d5e6f-0")))
		refusedFor(t, ns, "thief", "Volume data-pg-1a2b3c4d5e6f-0 belongs to a provisioned dependency; a workload mounts a dependency's volume with ${resources.<name>}.")
	})

	t.Run("a Workload admitted before the instance made the volume is refused once it does", func(t *testing.T) {
		testenv.Create(t, env.Client, workload(ns, "early", mountsByName("data-pg-ffeeddccbbaa-0")))
		planOf(t, ns, "early")
		setClaimStatus(t, owner, instance("pg-ffeeddccbbaa"))
		refusedFor(t, ns, "early", "Volume data-pg-ffeeddccbbaa-0 belongs to a provisioned dependency")
	})
}
