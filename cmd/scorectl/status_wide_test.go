package main

import (
	"bytes"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// -o wide: the cluster of the copy whose endpoint the Workload shows, and for a Workload on
// several clusters a row per copy with its cluster and endpoint.
func TestSeveralClustersStatusWide(t *testing.T) {
	ready := []metav1.Condition{{Type: scorev1b1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "The workload is ready."}}
	items := []scorev1b1.Workload{
		{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Status: scorev1b1.WorkloadStatus{Conditions: ready, Endpoint: ptr.To("http://10.0.0.2:80")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "one"}, Status: scorev1b1.WorkloadStatus{Conditions: ready, Endpoint: ptr.To("http://10.0.0.9:80")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "home"}, Status: scorev1b1.WorkloadStatus{Conditions: ready}},
	}
	copies := map[string][]copyView{
		"web": {
			{Name: "web", Cluster: "alpha", Phase: "Planning", Endpoint: "-", Message: "Waiting for the Deployment.", slot: 0},
			{Name: "web.1", Cluster: "beta", Phase: "Projected", Endpoint: "http://10.0.0.2:80", slot: 1},
		},
		"one":  {{Name: "one", Cluster: "alpha", Phase: "Projected", Endpoint: "http://10.0.0.9:80"}},
		"home": {{Name: "home", Cluster: "hub", Phase: "Projected", Endpoint: "-"}},
	}
	var out bytes.Buffer
	if err := printWide(&out, items, copies); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := [][]string{
		{"NAME", "READY", "REASON", "CLUSTER", "ENDPOINT", "DEPENDENCIES", "MESSAGE"},
		{"web", "True", "Succeeded", "beta", "http://10.0.0.2:80", "0/0", "The", "workload", "is", "ready."},
		{"web", "Planning", "-", "alpha", "-", "-", "Waiting", "for", "the", "Deployment."},
		{"web.1", "Projected", "-", "beta", "http://10.0.0.2:80", "-"},
		{"one", "True", "Succeeded", "alpha", "http://10.0.0.9:80", "0/0", "The", "workload", "is", "ready."},
		{"home", "True", "Succeeded", "hub", "-", "0/0", "The", "workload", "is", "ready."},
	}
	if len(got) != len(want) {
		t.Fatalf("got\n%s", out.String())
	}
	for i := range want {
		if f := strings.Fields(got[i]); strings.Join(f, " ") != strings.Join(want[i], " ") {
			t.Errorf("line %d: %q, want %q", i, strings.Join(f, " "), strings.Join(want[i], " "))
		}
	}
}
