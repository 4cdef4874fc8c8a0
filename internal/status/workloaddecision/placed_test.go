package workloaddecision

import (
	"testing"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/placement"
)

func TestPlacedEvent(t *testing.T) {
	spec := func(backend, cluster string) *scorev1b1.WorkloadPlanSpec {
		return &scorev1b1.WorkloadPlanSpec{BackendID: backend, Cluster: cluster}
	}
	cases := []struct {
		name     string
		from, to *scorev1b1.WorkloadPlanSpec
		placed   placement.Result
		want     string // "": no event
	}{
		{name: "staying on the hub", from: spec("k8s", ""), to: spec("k8s-v2", "")},
		{name: "staying on a member", from: spec("k8s-eu", "eu"), to: spec("k8s-eu", "eu"), placed: placement.Result{Cluster: "eu"}},
		{name: "between members: the cluster no longer fits", from: spec("k8s-eu", "eu"), to: spec("k8s-eu", "us"),
			placed: placement.Result{Cluster: "us", Moved: true, Selector: "env=prod"},
			want:   "Placed on cluster us: cluster eu no longer fits (env=prod)."},
		{name: "from the hub to a member", from: spec("k8s", ""), to: spec("k8s-eu", "eu"),
			placed: placement.Result{Cluster: "eu", Selector: "env=prod"},
			want:   "Placed on cluster eu: backend k8s-eu places on clusters matching env=prod; the workload ran on the hub."},
		{name: "from a member to the hub", from: spec("k8s-eu", "eu"), to: spec("k8s", ""), placed: placement.Result{OK: true},
			want: "Placed on the hub: backend k8s runs its workloads there; the workload ran on cluster eu."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			events := moveEvents(tc.from, tc.to, tc.placed)
			var e *Event
			if len(events) > 0 {
				if len(events) > 1 {
					t.Fatalf("%d events: %+v", len(events), events)
				}
				e = &events[0]
			}
			switch {
			case tc.want == "" && e != nil:
				t.Fatalf("an event: %+v", e)
			case tc.want == "":
			case e == nil:
				t.Fatal("no event")
			case e.Reason != "Placed" || e.Type != Normal || e.Message != tc.want:
				t.Fatalf("%s/%s %q, want Normal/Placed %q", e.Type, e.Reason, e.Message, tc.want)
			}
		})
	}
}
