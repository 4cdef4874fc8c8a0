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
