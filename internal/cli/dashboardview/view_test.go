package dashboardview

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

type workloadOption func(*scorev1b1.Workload)

func workload(ns, name string, opts ...workloadOption) scorev1b1.Workload {
	w := scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for _, o := range opts {
		o(&w)
	}
	return w
}

func withReady(status metav1.ConditionStatus, reason scorev1b1.Reason) workloadOption {
	return func(w *scorev1b1.Workload) {
		w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{Type: scorev1b1.ConditionReady, Status: status, Reason: string(reason), Message: "m"})
	}
}

func withClaim(key string, phase scorev1b1.ClaimPhase) workloadOption {
	return func(w *scorev1b1.Workload) {
		if w.Spec.Resources == nil {
			w.Spec.Resources = map[string]scorev1b1.Resource{}
		}
		w.Spec.Resources[key] = scorev1b1.Resource{Type: "postgres"}
		w.Status.Claims = append(w.Status.Claims, scorev1b1.ClaimSummary{Key: key, Phase: phase})
	}
}

func withEndpoint(e string) workloadOption {
	return func(w *scorev1b1.Workload) { w.Status.Endpoint = &e }
}

func plan(ns, workload, profile, backend string, objects ...scorev1b1.AppliedObject) scorev1b1.WorkloadPlan {
	return scorev1b1.WorkloadPlan{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: workload},
		Spec:   scorev1b1.WorkloadPlanSpec{WorkloadRef: scorev1b1.LocalWorkloadRef{Name: workload}, Profile: profile, BackendID: backend},
		Status: scorev1b1.WorkloadPlanStatus{Objects: objects}}
}

func withRevision(p scorev1b1.WorkloadPlan, revision string) scorev1b1.WorkloadPlan {
	p.Spec.ConfigRevision = revision
	return p
}

func TestFleet(t *testing.T) {
	placed := plan("a", "api", "web-service", "k8s-web-eu")
	placed.Spec.Cluster = "eu-1"
	rows := Fleet([]scorev1b1.Workload{
		workload("b", "web", withReady(metav1.ConditionTrue, scorev1b1.ReasonSucceeded), withEndpoint("http://web.b"), withClaim("db", scorev1b1.ClaimPhaseBound), withClaim("cache", scorev1b1.ClaimPhaseBinding)),
		workload("a", "zeta"),
		workload("a", "api", withReady(metav1.ConditionFalse, scorev1b1.ReasonClaimFailed)),
	}, []scorev1b1.WorkloadPlan{withRevision(plan("b", "web", "web-service", "k8s-web"), "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"), plan("a", "web", "other", "other"), placed})
	want := []FleetRow{
		{Namespace: "a", Name: "api", Ready: "False", Reason: "ClaimFailed", Message: "m", Health: scorev1b1.HealthFailed, Profile: "web-service", Backend: "k8s-web-eu", Cluster: "eu-1"},
		{Namespace: "a", Name: "zeta", Ready: "Unknown", Health: scorev1b1.HealthUnknown},
		{Namespace: "b", Name: "web", Ready: "True", Reason: "Succeeded", Message: "m", Health: scorev1b1.HealthCurrent, Endpoint: "http://web.b", Profile: "web-service", Backend: "k8s-web", ConfigRevision: "sha256:0123456789ab", Cluster: "hub", Bound: 1, Dependencies: 2},
	}
	if !slices.Equal(rows, want) {
		t.Fatalf("rows:\n got %+v\nwant %+v", rows, want)
	}
}

func TestWorkloadHealth(t *testing.T) {
	for name, tc := range map[string]struct {
		w    scorev1b1.Workload
		want Health
	}{
		"not reported":          {workload("a", "w"), scorev1b1.HealthUnknown},
		"ready":                 {workload("a", "w", withReady(metav1.ConditionTrue, scorev1b1.ReasonSucceeded)), scorev1b1.HealthCurrent},
		"waiting for a claim":   {workload("a", "w", withReady(metav1.ConditionFalse, scorev1b1.ReasonClaimPending)), scorev1b1.HealthInProgress},
		"rolling out":           {workload("a", "w", withReady(metav1.ConditionFalse, scorev1b1.ReasonRuntimeProvisioning)), scorev1b1.HealthInProgress},
		"an output not yet out": {workload("a", "w", withReady(metav1.ConditionFalse, scorev1b1.ReasonProjectionError)), scorev1b1.HealthInProgress},
		"invalid":               {workload("a", "w", withReady(metav1.ConditionFalse, scorev1b1.ReasonSpecInvalid)), scorev1b1.HealthFailed},
		"degraded":              {workload("a", "w", withReady(metav1.ConditionFalse, scorev1b1.ReasonRuntimeDegraded)), scorev1b1.HealthFailed},
	} {
		t.Run(name, func(t *testing.T) {
			if got := WorkloadHealth(&tc.w); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestPlanHealth(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason}
	}
	for name, tc := range map[string]struct {
		phase      scorev1b1.PlanPhase
		conditions []metav1.Condition
		want       Health
	}{
		"new":      {"", nil, scorev1b1.HealthInProgress},
		"failed":   {scorev1b1.PlanPhaseFailed, nil, scorev1b1.HealthFailed},
		"conflict": {scorev1b1.PlanPhaseProjected, []metav1.Condition{cond(scorev1b1.PlanConditionApplied, metav1.ConditionFalse, scorev1b1.PlanReasonObjectConflict)}, scorev1b1.HealthFailed},
		"becoming healthy": {scorev1b1.PlanPhaseProjected, []metav1.Condition{cond(scorev1b1.PlanConditionApplied, metav1.ConditionTrue, scorev1b1.PlanReasonApplied),
			cond(scorev1b1.PlanConditionHealthy, metav1.ConditionFalse, scorev1b1.PlanReasonInProgress)}, scorev1b1.HealthInProgress},
		"healthy":  {scorev1b1.PlanPhaseProjected, []metav1.Condition{cond(scorev1b1.PlanConditionHealthy, metav1.ConditionTrue, scorev1b1.PlanReasonCurrent)}, scorev1b1.HealthCurrent},
		"degraded": {scorev1b1.PlanPhaseProjected, []metav1.Condition{cond(scorev1b1.PlanConditionHealthy, metav1.ConditionFalse, scorev1b1.PlanReasonDegraded)}, scorev1b1.HealthFailed},
	} {
		t.Run(name, func(t *testing.T) {
			p := plan("a", "w", "", "")
			p.Status.Phase, p.Status.Conditions = tc.phase, tc.conditions
			if got := PlanHealth(&p); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func ids(g Graph) []string {
	var out []string
	for _, n := range g.Nodes {
		out = append(out, n.ID+" "+n.Health)
	}
	return out
}

func TestBuildGraph(t *testing.T) {
	w := workload("shop", "web", withReady(metav1.ConditionFalse, scorev1b1.ReasonRuntimeProvisioning), withClaim("db", scorev1b1.ClaimPhaseBound), withClaim("cache", scorev1b1.ClaimPhasePending), withEndpoint("http://web.shop"))
	claims := []scorev1b1.ResourceClaim{
		{ObjectMeta: metav1.ObjectMeta{Name: "web-db"}, Spec: scorev1b1.ResourceClaimSpec{Key: "db", Type: "postgres"},
			Status: scorev1b1.ResourceClaimStatus{Phase: scorev1b1.ClaimPhaseBound, Resources: []scorev1b1.AppliedObject{
				{Kind: "StatefulSet", Namespace: "shop", Name: "pg-1", Health: scorev1b1.HealthCurrent},
				{Kind: "Service", Namespace: "shop", Name: "pg-1", Health: scorev1b1.HealthCurrent}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web-cache"}, Spec: scorev1b1.ResourceClaimSpec{Key: "cache", Type: "redis"}},
	}
	p := plan("shop", "web", "web-service", "k8s-web", scorev1b1.AppliedObject{Kind: "Deployment", Namespace: "shop", Name: "web", Health: scorev1b1.HealthInProgress, Message: "1 of 2 replicas"})
	x := &scorev1b1.WorkloadExposure{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Status: scorev1b1.WorkloadExposureStatus{Exposures: []scorev1b1.Exposure{{URL: "http://web.shop", Reachable: ptr.To(false)}}}}

	for name, tc := range map[string]struct {
		in   GraphInput
		want []string
	}{
		"a platform engineer sees every object": {
			GraphInput{Workload: &w, Claims: claims, Plan: &p, Exposure: x},
			[]string{"workload InProgress", "claim/cache Unknown", "claim/db Current", "claim/db/StatefulSet/shop/pg-1 Current", "claim/db/Service/shop/pg-1 Current",
				"plan InProgress", "plan/Deployment/shop/web InProgress", "exposure Current", "exposure/0 Failed"},
		},
		"a Workload moving from eu to us: each object where it is": {
			GraphInput{Workload: &w, Plan: func() *scorev1b1.WorkloadPlan {
				moving := plan("shop", "web", "web-service", "k8s-web",
					scorev1b1.AppliedObject{Cluster: "eu", Kind: "Deployment", Namespace: "shop", Name: "web", Health: scorev1b1.HealthCurrent},
					scorev1b1.AppliedObject{Cluster: "us", Kind: "Deployment", Namespace: "shop", Name: "web", Health: scorev1b1.HealthInProgress})
				moving.Spec.Cluster = "us"
				return &moving
			}()},
			[]string{"workload InProgress", "plan InProgress", "plan/eu:Deployment/shop/web Current", "plan/us:Deployment/shop/web InProgress"},
		},
		"nothing emitted yet": {
			GraphInput{Workload: &w, Claims: nil},
			[]string{"workload InProgress", "plan Unknown"},
		},
		"a developer sees the Workload's status and what is hidden": {
			GraphInput{Workload: &w, ClaimsHidden: true, PlanHidden: true, ExposureHidden: true},
			[]string{"workload InProgress", "claim/db Current", "claim/cache InProgress", "plan Hidden", "endpoint Current"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := BuildGraph(tc.in)
			if got := ids(g); !slices.Equal(got, tc.want) {
				t.Fatalf("nodes:\n got %q\nwant %q", got, tc.want)
			}
			if len(g.Edges) != len(g.Nodes)-1 {
				t.Fatalf("%d edges for %d nodes: a tree has one fewer", len(g.Edges), len(g.Nodes))
			}
			seen := map[[2]int]string{}
			for _, n := range g.Nodes {
				if other, ok := seen[[2]int{n.X, n.Y}]; ok {
					t.Fatalf("%s and %s overlap", n.ID, other)
				}
				seen[[2]int{n.X, n.Y}] = n.ID
				if n.X+NodeWidth > g.Width || n.Y+NodeHeight > g.Height {
					t.Fatalf("%s lies outside the %dx%d graph", n.ID, g.Width, g.Height)
				}
			}
		})
	}
}
