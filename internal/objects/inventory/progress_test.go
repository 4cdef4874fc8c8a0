package inventory

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

func TestHoldLeft(t *testing.T) {
	since := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		desc        string
		after       time.Duration
		detailsOnly bool
		want        time.Duration
	}{
		{"just begun", 0, false, 20 * time.Second},
		{"half way", 10 * time.Second, false, 10 * time.Second},
		{"over", 25 * time.Second, false, -5 * time.Second},
		{"only the objects' messages: three windows", 25 * time.Second, true, 35 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := HoldLeft(since, since.Add(tc.after), 20*time.Second, tc.detailsOnly); got != tc.want {
				t.Fatalf("%s left, want %s", got, tc.want)
			}
		})
	}
}

func TestWithoutProgressKeepsWhatIsNotProgress(t *testing.T) {
	objs := []scorev1b1.AppliedObject{{Kind: "StatefulSet", Name: "db", Health: "InProgress", Message: "Ready: 0/1", UID: "u"}}
	conds := []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Binding", Message: "Waiting for db."}}
	WithoutProgress(objs, conds, false)
	if objs[0].Message != "" || objs[0].Health != "InProgress" || objs[0].UID != "u" || conds[0].Message != "" || conds[0].Reason != "Binding" {
		t.Fatalf("messages only: %+v %+v", objs[0], conds[0])
	}
	WithoutProgress(objs, nil, true)
	if objs[0].Health != "" || objs[0].Name != "db" {
		t.Fatalf("with health: %+v", objs[0])
	}
}

// status is a status the hold compares: a phase, objects, conditions and a message.
type status struct {
	Phase      string
	Objects    []scorev1b1.AppliedObject
	Conditions []metav1.Condition
	Message    string
}

func waiting(health scorev1b1.Health, message, condition string) *status {
	return &status{Phase: "Waiting", Message: condition,
		Objects:    []scorev1b1.AppliedObject{{Kind: "Deployment", Name: "web", Health: health, Message: message}},
		Conditions: []metav1.Condition{{Type: "Healthy", Status: metav1.ConditionFalse, Message: condition}}}
}

// The one progress-hold rule, as claimdecision and plandecision apply it: progress alone is held
// for the window from when the status began waiting, an object's own message alone for
// DetailsHold windows, and anything else, or a status that does not wait, is written.
func TestHold(t *testing.T) {
	began := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	window := 20 * time.Second
	read := waiting(scorev1b1.HealthInProgress, "Updated: 0/1", "Waiting for Deployment web.")
	cases := []struct {
		name   string
		next   *status
		now    time.Time
		window time.Duration
		want   time.Duration
	}{
		{"progress of the objects and the messages naming them: held for the window",
			waiting(scorev1b1.HealthUnknown, "Available: 0/1", "Waiting for Deployment web (1 of 1)."), began.Add(5 * time.Second), window, 15 * time.Second},
		{"an object's own message alone: held for DetailsHold windows",
			waiting(scorev1b1.HealthInProgress, "Available: 0/1", "Waiting for Deployment web."), began.Add(5 * time.Second), window, 55 * time.Second},
		{"the window over: written", waiting(scorev1b1.HealthUnknown, "Available: 0/1", "x"), began.Add(window), window, 0},
		{"no window: written", waiting(scorev1b1.HealthUnknown, "Available: 0/1", "x"), began, 0, 0},
		{"the next step, which waits no more: written", &status{Phase: "Done"}, began, window, 0},
		{"another change than progress: written",
			func() *status {
				s := waiting(scorev1b1.HealthInProgress, "Updated: 0/1", "x")
				s.Objects[0].Name = "api"
				return s
			}(), began, window, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Hold(HoldInput[*status]{Read: read, Next: tc.next, Since: began, Now: tc.now, Window: tc.window,
				Waits: func(s *status) bool { return s.Phase == "Waiting" },
				Copy: func(s *status) (*status, []scorev1b1.AppliedObject, []metav1.Condition, *string) {
					c := *s
					c.Objects = append([]scorev1b1.AppliedObject(nil), s.Objects...)
					c.Conditions = append([]metav1.Condition(nil), s.Conditions...)
					return &c, c.Objects, c.Conditions, &c.Message
				}})
			if max(got, 0) != tc.want {
				t.Fatalf("held %s, want %s", got, tc.want)
			}
		})
	}
}
