package ownwrites

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestStale(t *testing.T) {
	obj := func(uid, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), ResourceVersion: rv}}
	}
	var tr Tracker
	steps := []struct {
		what  string
		wrote [2]string // replaced, produced: a write of ours before the read
		obj   *corev1.ConfigMap
		stale bool
	}{
		{"nothing written yet", [2]string{}, obj("a", "10"), false},
		{"the version a write replaced", [2]string{"10", "11"}, obj("a", "10"), true},
		{"a second write, from the stale copy", [2]string{"10", "12"}, obj("a", "10"), true},
		{"the version in between", [2]string{}, obj("a", "11"), true},
		{"the cache caught up", [2]string{}, obj("a", "12"), false},
		{"an old version after the record was dropped", [2]string{}, obj("a", "11"), false},
		{"another object", [2]string{}, obj("b", "10"), false},
	}
	for _, s := range steps {
		if s.wrote[0] != "" {
			tr.Wrote(s.obj.UID, s.wrote[0], s.wrote[1])
		}
		if got := tr.Stale(s.obj); got != s.stale {
			t.Errorf("%s: stale=%v, want %v", s.what, got, s.stale)
		}
	}
	tr.Wrote("c", "5", "6")
	tr.Forget("c")
	if tr.Stale(obj("c", "5")) {
		t.Error("a forgotten object is stale")
	}
}

// A record no watch event ever clears (the cache stuck on a replaced version, say after a
// re-list that lost the event) stops steering decisions after MaxAge: no pass is skipped for
// ever.
func TestARecordExpires(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tr := Tracker{Now: func() time.Time { return now }}
	tr.Wrote("a", "10", "11")
	now = now.Add(MaxAge - time.Second)
	if !tr.Behind("a", "10") {
		t.Fatal("a fresh record is not trusted")
	}
	now = now.Add(time.Second)
	if tr.Behind("a", "10") {
		t.Fatal("a record older than MaxAge still steers")
	}
	if tr.Behind("a", "10") {
		t.Fatal("an expired record is not dropped")
	}
}

// Records of objects that are never read again (deleted without a Forget) do not pile up.
func TestOldRecordsAreSwept(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tr := Tracker{Now: func() time.Time { return now }}
	tr.Wrote("gone", "1", "2")
	now = now.Add(MaxAge)
	tr.Wrote("live", "1", "2")
	if _, ok := tr.objs["gone"]; ok || len(tr.objs) != 1 {
		t.Fatalf("records %v, want only live", tr.objs)
	}
}
