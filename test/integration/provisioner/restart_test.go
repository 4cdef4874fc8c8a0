package provisioner

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// restartNamespace and stateNamespace are each served by a provisioner of their own, which the
// tests here stop and start.
const (
	restartNamespace = "restart"
	stateNamespace   = "restart-state"
)

// TestReleaseAfterARestartIsWokenByTheDeletion: a provisioner restarted while a claim's
// objects are being deleted learns of their deletion and lets the claim go. It watched a kind
// only from its first apply, and a restarted process applies nothing for a deleted claim: the
// release waited for a deletion event that never came (an N=1,000 deletion stalled with every
// controller idle after a provisioner crash).
func TestReleaseAfterARestartIsWokenByTheDeletion(t *testing.T) {
	testenv.Create(t, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: restartNamespace}})
	only := fields.OneTermEqualSelector("metadata.namespace", restartNamespace)
	first, stopFirst := context.WithCancel(ctx)
	if err := startController(first, false, only, 0); err != nil {
		t.Fatal(err)
	}
	c := newClaim(restartNamespace, "web-db", "web", "db", "kv", "", scorev1b1.DeprovisionDelete)
	testenv.Create(t, env.Client, c)
	c = waitPhase(t, c, scorev1b1.ClaimPhaseBound)
	var cm *corev1.ConfigMap
	for _, o := range c.Status.Resources {
		if o.Kind == "ConfigMap" {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name}}
		}
	}
	if cm == nil {
		t.Fatalf("no ConfigMap in %v", c.Status.Resources)
	}
	// Someone else's finalizer holds the ConfigMap once it is deleted.
	const hold = "test.score.dev/hold"
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatal(err)
	}
	controllerutil.AddFinalizer(cm, hold)
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	stopFirst()
	second, stopSecond := context.WithCancel(ctx)
	defer stopSecond()
	if err := startController(second, false, only, 0); err != nil {
		t.Fatal(err)
	}

	if err := env.Client.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "the restarted provisioner waiting for the ConfigMap", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return err
		}
		if !strings.Contains(c.Status.Message, "waiting for ConfigMap "+cm.Name) {
			return fmt.Errorf("message %q", c.Status.Message)
		}
		return nil
	})
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatal(err)
	}
	controllerutil.RemoveFinalizer(cm, hold)
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	gone(t, c)
}

// TestReleasingAClaimNeverProvisionedKeepsTheState: a Delete claim released before the
// provisioner ever ran it leaves the state of its identity alone. It deleted the state Secret,
// and under the same identity that was a retained instance's: its credentials were lost, and
// the next claim of the instance got new ones.
func TestReleasingAClaimNeverProvisionedKeepsTheState(t *testing.T) {
	ns := stateNamespace
	testenv.Create(t, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	only := fields.OneTermEqualSelector("metadata.namespace", ns)
	running, stop := context.WithCancel(ctx)
	if err := startController(running, false, only, 0); err != nil {
		t.Fatal(err)
	}
	_, password := boundThenDeleted(t, newClaim(ns, "web-db-1", "web", "db", "kv", "", scorev1b1.DeprovisionRetain))
	stop()

	// A claim of the same identity, Delete, created and deleted while no provisioner runs.
	never := newClaim(ns, "web-db-2", "web", "db", "kv", "", scorev1b1.DeprovisionDelete)
	never.Finalizers = []string{scorev1b1.ClaimFinalizer}
	testenv.Create(t, env.Client, never)
	if err := env.Client.Delete(ctx, never); err != nil {
		t.Fatal(err)
	}
	running, stop = context.WithCancel(ctx)
	defer stop()
	if err := startController(running, false, only, 0); err != nil {
		t.Fatal(err)
	}
	gone(t, never)

	again := newClaim(ns, "web-db-3", "web", "db", "kv", "", scorev1b1.DeprovisionRetain)
	testenv.Create(t, env.Client, again)
	again = waitPhase(t, again, scorev1b1.ClaimPhaseBound)
	if got := secretValue(t, ns, again.Status.SecretRef.Name, "password"); got != password {
		t.Fatalf("the retained instance's credentials were lost: the next claim got new ones")
	}
}
