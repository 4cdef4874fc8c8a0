package integration

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// A WorkloadTrace names a Workload of its own namespace, by name only, for good; its answer
// keeps to the bounds a trace is cut to (why.Bound), which the API server enforces too.
func TestWorkloadTraceNamesAWorkloadOfItsNamespace(t *testing.T) {
	ctx := context.Background()
	trace := func(workload string) *scorev1b1.WorkloadTrace {
		return &scorev1b1.WorkloadTrace{ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "why-"}, Spec: scorev1b1.WorkloadTraceSpec{Workload: workload}}
	}
	for _, other := range []string{"team-a/owner", "owner.team-a", "", strings.Repeat("a", 64)} {
		if err := env.Client.Create(ctx, trace(other)); err == nil {
			t.Errorf("a trace of %q was accepted", other)
		}
	}
	tr := trace("web")
	testenv.Create(t, env.Client, tr)
	tr.Spec.Workload = "api"
	wantRejected(t, env.Client.Update(ctx, tr), "spec is immutable")

	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(tr), tr); err != nil {
		t.Fatal(err)
	}
	tr.Status.Trace = &scorev1b1.Trace{InTheWay: []scorev1b1.TraceBlocker{{What: strings.Repeat("x", scorev1b1.TraceMaxText+1)}}}
	wantRejected(t, env.Client.Status().Update(ctx, tr), "Too long")
	tr.Status.Trace.InTheWay = make([]scorev1b1.TraceBlocker, scorev1b1.TraceMaxBlockers+1)
	wantRejected(t, env.Client.Status().Update(ctx, tr), "Too many")
	tr.Status.Trace.InTheWay = []scorev1b1.TraceBlocker{{What: strings.Repeat("é", scorev1b1.TraceMaxText/2)}}
	if err := env.Client.Status().Update(ctx, tr); err != nil {
		t.Fatalf("an answer within the bounds: %v", err)
	}
}
