package orchestrator

import (
	"fmt"
	"strings"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// publishClusters writes the clusters' status as the runtime publishes it.
func publishClusters(t *testing.T, statuses map[string]clusters.Status) {
	t.Helper()
	putConfigMap(t, clusters.StatusConfigMap, clusters.Encode(statuses))
}

func TestPlacement(t *testing.T) {
	placed := strings.Replace(baseConfig, `values: {replicas: 1}}`, `values: {replicas: 1}}
        placement: {clusterSelector: {matchLabels: {env: prod}}, policy: Ordered}`, 1)
	applyConfig(t, placed)
	defer applyConfig(t, baseConfig)
	ns := testenv.Namespace(t, env.Client)
	testenv.Create(t, env.Client, workload(ns, "web"))

	t.Run("no matching cluster: a neutral reason, and no plan", func(t *testing.T) {
		publishClusters(t, map[string]clusters.Status{"us": {Labels: map[string]string{"env": "dev"}, Reachable: true}})
		w := conditionIs(t, ns, "web", scorev1b1.ConditionRuntimeReady, metav1.ConditionFalse, scorev1b1.ReasonRuntimeSelecting)
		if msg := testenv.Condition(w, scorev1b1.ConditionRuntimeReady).Message; msg != "No runtime location the platform offers for this workload is available." {
			t.Fatalf("message %q", msg)
		}
		checkNeutral(t, w)
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &scorev1b1.WorkloadPlan{}); !apierrors.IsNotFound(err) {
			t.Fatalf("a plan without a cluster: %v", err)
		}
	})

	t.Run("a matching cluster is recorded in the plan", func(t *testing.T) {
		publishClusters(t, map[string]clusters.Status{"us": {Labels: map[string]string{"env": "dev"}}, "eu-b": {Labels: map[string]string{"env": "prod"}}, "eu-a": {Labels: map[string]string{"env": "prod"}}})
		eventually(t, "the plan placed on eu-a", func() error {
			p := &scorev1b1.WorkloadPlan{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, p); err != nil {
				return err
			}
			if p.Spec.Cluster != "eu-a" {
				return fmt.Errorf("placed on %q", p.Spec.Cluster)
			}
			return nil
		})
	})

	t.Run("the cluster is kept while it matches, even when another would rank first", func(t *testing.T) {
		publishClusters(t, map[string]clusters.Status{"eu-0": {Labels: map[string]string{"env": "prod"}}, "eu-a": {Labels: map[string]string{"env": "prod"}}})
		w := requestReconcile(t, ns, "web")
		if p := planOf(t, ns, "web"); p.Spec.Cluster != "eu-a" {
			t.Fatalf("moved to %q (workload generation %d)", p.Spec.Cluster, w.Generation)
		}
	})

	t.Run("a cluster that stops matching is left, with an event on the plan", func(t *testing.T) {
		publishClusters(t, map[string]clusters.Status{"eu-0": {Labels: map[string]string{"env": "prod"}}, "eu-a": {Labels: map[string]string{"env": "dev"}}})
		eventually(t, "the plan placed on eu-0", func() error {
			if c := planOf(t, ns, "web").Spec.Cluster; c != "eu-0" {
				return fmt.Errorf("placed on %q", c)
			}
			return nil
		})
		eventually(t, "a Placed event on the plan", func() error {
			var events eventsv1.EventList
			if err := env.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
				return err
			}
			for _, e := range events.Items {
				if e.Regarding.Kind == "WorkloadPlan" && e.Reason == "Placed" && strings.Contains(e.Note, "eu-0") {
					return nil
				}
			}
			return fmt.Errorf("none among %d events", len(events.Items))
		})
	})
}
