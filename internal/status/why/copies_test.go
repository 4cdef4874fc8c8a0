package why

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
)

// scorectl why on a Workload placed on two clusters names the copies' clusters in placement
// order, and why the others run none.
func TestSeveralClustersWhy(t *testing.T) {
	w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", UID: "u1"}}
	plan := func(name, cluster string) scorev1b1.WorkloadPlan {
		return scorev1b1.WorkloadPlan{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
			Spec: scorev1b1.WorkloadPlanSpec{WorkloadRef: scorev1b1.LocalWorkloadRef{Name: "web", UID: "u1"}, Cluster: cluster}}
	}
	first, second := plan("web", "eu-2"), plan("web.1", "eu-1")
	other := plan("web.1", "eu-3")
	other.Spec.WorkloadRef.UID = "someone-else"
	backend := &orchconfig.Backend{Placement: &orchconfig.Placement{ClusterSelector: orchconfig.Selector{MatchLabels: map[string]string{"env": "prod"}}, Policy: orchconfig.PlacementOrdered, Clusters: "2"}}
	in := Input{Workload: w, Plan: &first, Copies: CopiesOf(w, []scorev1b1.WorkloadPlan{second, other}), Clusters: map[string]clusters.Status{
		"eu-1": {Labels: map[string]string{"env": "prod"}, Reachable: true},
		"eu-2": {Labels: map[string]string{"env": "prod"}, Reachable: true},
		"eu-3": {Labels: map[string]string{"env": "prod"}, Reachable: true},
		"us-1": {Labels: map[string]string{"env": "dev"}, Reachable: true},
	}}
	var out bytes.Buffer
	printPlacement(&out, placementOf(in, backend))
	for _, want := range []string{
		"Placement: a copy on 2 clusters matching env=prod, policy Ordered",
		"✓ eu-1 — Chosen: a copy of the workload runs there and it still matches.",
		"✓ eu-2 — Chosen: a copy of the workload runs there and it still matches.",
		"· eu-3 — Matches; the workload's 2 copies run on other clusters (Ordered; copies stay where they are while they match).",
		"✗ us-1 — Its labels (env=dev) do not match the selector.",
		"copies in placement order: eu-1 (web.1), eu-2 (web); the endpoint is the first's",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}

// scorectl why on copies whose backend fails over: the lost cluster's copy fails over to the
// free cluster that answers, and says so; the copy that answers stays.
func TestSeveralClustersFailoverWhy(t *testing.T) {
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", UID: "u1"}}
	plan := func(name, cluster string) scorev1b1.WorkloadPlan {
		return scorev1b1.WorkloadPlan{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
			Spec: scorev1b1.WorkloadPlanSpec{WorkloadRef: scorev1b1.LocalWorkloadRef{Name: "web", UID: "u1"}, Cluster: cluster}}
	}
	first, second := plan("web", "eu-1"), plan("web.1", "eu-2")
	backend := &orchconfig.Backend{Placement: &orchconfig.Placement{ClusterSelector: orchconfig.Selector{MatchLabels: map[string]string{"env": "prod"}},
		Policy: orchconfig.PlacementOrdered, Clusters: "2", Failover: &orchconfig.Failover{After: "2m", HoldDown: "10m"}}}
	since := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-d)); return &t }
	prod := map[string]string{"env": "prod"}
	in := Input{Workload: w, Plan: &first, Copies: CopiesOf(w, []scorev1b1.WorkloadPlan{second}), Now: now, Clusters: map[string]clusters.Status{
		"eu-1": {Labels: prod, Since: since(3 * time.Minute)},
		"eu-2": {Labels: prod, Reachable: true, Since: since(time.Hour)},
		"eu-3": {Labels: prod, Reachable: true, Since: since(time.Hour)},
	}}
	var out bytes.Buffer
	printPlacement(&out, placementOf(in, backend))
	for _, want := range []string{
		"Placement: a copy on 2 clusters matching env=prod, policy Ordered, failover after 2m0s (hold-down 10m0s)",
		"· eu-1 (does not answer) — Matches, but has not answered for 3m0s (failover after 2m0s): its copy fails over to eu-3.",
		"✓ eu-2 — Chosen: a copy of the workload runs there and it still matches.",
		"✓ eu-3 — Chosen: a copy of the workload fails over from eu-1; the first free matching cluster under Ordered that has answered for the hold-down.",
		"copies in placement order: eu-2 (web.1), eu-3 (web, failing over from eu-1); the endpoint is the first's",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}
