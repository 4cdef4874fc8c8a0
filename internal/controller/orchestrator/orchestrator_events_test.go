package orchestrator

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/events"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/status/workloaddecision"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/termtest"
)

// TestEventsAreRecordedEscaped: an event whose message quotes a claim's words full of terminal
// escapes is recorded escaped, so kubectl describe and the dashboard print no control.
func TestEventsAreRecordedEscaped(t *testing.T) {
	rec := events.NewFakeRecorder(1)
	r := &Reconciler{Recorder: rec}
	r.record(&scorev1b1.Workload{}, workloaddecision.Event{Type: "Warning", Reason: "ClaimFailed", Action: "Ready", Message: termtest.Hostile})
	got := <-rec.Events
	termtest.Safe(t, "the event", got)
	if !strings.Contains(got, termtest.Marker) {
		t.Errorf("event %q", got)
	}
}
