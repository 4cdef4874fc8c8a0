package orchestrator

import (
	"testing"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// The cache may show any version our own writes replaced, not only the last one: a pass that
// read a stale copy writes over the stale version, and the cache may next show the version
// in between. Each must read as our last status.
func TestStatusAsOfAnySupersededVersion(t *testing.T) {
	var m memory
	status := func(reason string) *scorev1b1.WorkloadStatus {
		return &scorev1b1.WorkloadStatus{LastHandledReconcileAt: reason}
	}
	s1, s2 := status("s1"), status("s2")
	cachedAt := func(version string) string {
		return m.statusAsOf("w", version, status("cache@"+version)).LastHandledReconcileAt
	}
	m.wroteMetadata("w", "1", "2") // the finalizer, before any status: nothing to remember yet
	if got := cachedAt("1"); got != "cache@1" {
		t.Fatalf("no status written yet: %s", got)
	}
	m.wroteStatus("w", "2", "3", s1)
	if got := cachedAt("2"); got != "s1" {
		t.Fatalf("the version our write replaced: %s", got)
	}
	m.wroteStatus("w", "2", "4", s2) // written from the stale copy at 2
	for _, v := range []string{"2", "3"} {
		if got := cachedAt(v); got != "s2" {
			t.Fatalf("cache at %s, behind our last write: %s", v, got)
		}
	}
	if got := cachedAt("4"); got != "cache@4" {
		t.Fatalf("the cache caught up: %s", got)
	}
	if got := cachedAt("3"); got != "cache@3" {
		t.Fatalf("after catching up the record is dropped: %s", got)
	}
	m.wroteStatus("w", "4", "5", s1)
	m.wroteMetadata("w", "5", "6") // the finalizer after a status write
	for _, v := range []string{"4", "5"} {
		if got := cachedAt(v); got != "s1" {
			t.Fatalf("cache at %s, behind the finalizer write: %s", v, got)
		}
	}
}
