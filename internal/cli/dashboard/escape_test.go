package dashboard

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/termtest"
)

// TestThePagesShowTerminalEscapesEscaped: a Ready message, a dependency's message, an applied
// object's and an event's, each full of terminal escapes and bidi overrides (a tenant's param,
// an image's termination message), reach the fleet table and the Workload's page escaped:
// nothing in them reorders the page, so a tenant's text cannot disguise what an operator reads.
func TestThePagesShowTerminalEscapesEscaped(t *testing.T) {
	h := termtest.Hostile
	yes := true
	w := workloadWithReady("team-a", "web", "ClaimFailed", h)
	w.UID = "u"
	w.Status.Endpoint = &[]string{"http://web/" + h}[0]
	claim := &scorev1b1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web-db", Labels: map[string]string{scorev1b1.LabelWorkload: "web"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "score.dev/v1b1", Kind: "Workload", Name: "web", UID: "u", Controller: &yes}}},
		Spec: scorev1b1.ResourceClaimSpec{Key: "db", Type: "postgres"},
		Status: scorev1b1.ResourceClaimStatus{Phase: scorev1b1.ClaimPhaseFailed, Message: h,
			Resources: []scorev1b1.AppliedObject{{APIVersion: "batch/v1", Kind: "Job", Namespace: "team-a", Name: "init", Health: scorev1b1.HealthFailed, Message: h}}},
	}
	event := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web.1"}, Type: corev1.EventTypeWarning, Reason: "ClaimFailed", Message: h,
		InvolvedObject: corev1.ObjectReference{Kind: "Workload", Namespace: "team-a", Name: "web"}}
	s, _ := testServer(t, Options{}, w, claim, event)
	ctx := context.Background()
	fleet, err := s.fleetFragment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	page, err := s.workloadFragment(ctx, "team-a", "web")
	if err != nil {
		t.Fatal(err)
	}
	for what, html := range map[string]string{"the fleet": string(fleet), "the Workload's page": string(page)} {
		termtest.Safe(t, what, html)
		if !strings.Contains(html, `\x1b]0;pwned`) {
			t.Errorf("%s does not show the message escaped:\n%s", what, html)
		}
	}
	if n := strings.Count(string(page), `\u202edesrever`); n < 4 {
		t.Errorf("the Workload's page shows the escaped message %d times, want Ready, the dependency, its object and the event:\n%s", n, page)
	}
}
