package rollout

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/ownwrites"
)

// A rollout this controller created is waited for until the cache shows it, and no longer than
// ownwrites.MaxAge: a restart is never needed to get unstuck.
func TestCreationPending(t *testing.T) {
	now := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	r := &Reconciler{Now: func() time.Time { return now }}
	listed := func(names ...string) []scorev1b1.ConfigRollout {
		var out []scorev1b1.ConfigRollout
		for _, n := range names {
			out = append(out, scorev1b1.ConfigRollout{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
		return out
	}
	if r.creationPending(listed("rollout-0001")) {
		t.Fatal("pending with nothing created")
	}
	r.created, r.createdAt = "rollout-0002", now
	if !r.creationPending(listed("rollout-0001")) {
		t.Fatal("not pending while the cache lacks the rollout created")
	}
	if r.creationPending(listed("rollout-0001", "rollout-0002")) || r.created != "" {
		t.Fatal("still pending once the cache shows it")
	}
	r.created, r.createdAt = "rollout-0003", now
	now = now.Add(ownwrites.MaxAge)
	if r.creationPending(listed("rollout-0001")) || r.created != "" {
		t.Fatal("pending past ownwrites.MaxAge (a rollout deleted before the cache showed it)")
	}
}
