package dashboardview

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// A Workload on two clusters: the graph shows each copy's plan on its cluster and each copy's
// endpoint, every node once; the fleet row lists both clusters.
func TestSeveralClustersGraphAndFleet(t *testing.T) {
	w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", UID: "u1"}}
	plan := func(name, cluster string) *scorev1b1.WorkloadPlan {
		return &scorev1b1.WorkloadPlan{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
			Spec:   scorev1b1.WorkloadPlanSpec{WorkloadRef: scorev1b1.LocalWorkloadRef{Name: "web", UID: "u1"}, Cluster: cluster},
			Status: scorev1b1.WorkloadPlanStatus{Objects: []scorev1b1.AppliedObject{{Kind: "Deployment", Namespace: "team", Name: "web", Cluster: cluster}}}}
	}
	exposure := func(name, url string) *scorev1b1.WorkloadExposure {
		return &scorev1b1.WorkloadExposure{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
			Status: scorev1b1.WorkloadExposureStatus{Exposures: []scorev1b1.Exposure{{URL: url}}}}
	}
	claim := func(name string) scorev1b1.ResourceClaim {
		return scorev1b1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}, Spec: scorev1b1.ResourceClaimSpec{Key: "db", Type: "kv"}}
	}
	g := BuildGraph(GraphInput{Workload: w, Claims: []scorev1b1.ResourceClaim{claim("web-db-1234abcd"), claim("web-db-1234abcd.1")},
		Plan: plan("web", "alpha"), Exposure: exposure("web", "http://10.0.0.1:80"),
		Copies: []Copy{{Plan: plan("web.1", "beta"), Exposure: exposure("web.1", "http://10.0.0.2:80")}}})
	ids := map[string]bool{}
	var text []string
	for _, n := range g.Nodes {
		if ids[n.ID] {
			t.Fatalf("node %s twice", n.ID)
		}
		ids[n.ID] = true
		text = append(text, n.Name+" "+n.Detail)
	}
	all := strings.Join(text, "\n")
	for _, want := range []string{"web.1  →  on beta", "web on beta", "http://10.0.0.2:80", "http://10.0.0.1:80", "web-db-1234abcd.1 db"} {
		if !strings.Contains(all, want) {
			t.Errorf("the graph has no %q:\n%s", want, all)
		}
	}
	for _, id := range []string{"plan/web.1", "plan/web.1/beta:Deployment/team/web", "exposure/web.1/0", "claim/db", "claim/db.1"} {
		if !ids[id] {
			t.Errorf("no node %s among %v", id, ids)
		}
	}

	rows := Fleet([]scorev1b1.Workload{*w}, []scorev1b1.WorkloadPlan{*plan("web.1", "beta"), *plan("web", "alpha")})
	if len(rows) != 1 || rows[0].Cluster != "alpha, beta" {
		t.Fatalf("fleet %+v", rows)
	}
}
