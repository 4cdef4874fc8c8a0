package ownwrites

import (
	"testing"

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
		obj   *corev1.ConfigMap
		stale bool
	}{
		{"nothing written yet", obj("a", "10"), false},
		{"the version the write replaced", obj("a", "10"), true},
		{"still the old version", obj("a", "10"), true},
		{"the cache caught up", obj("a", "11"), false},
		{"the old version again, after the record was dropped", obj("a", "10"), false},
		{"another object", obj("b", "10"), false},
	}
	for i, s := range steps {
		if i == 1 {
			tr.Wrote("a", "10")
		}
		if got := tr.Stale(s.obj); got != s.stale {
			t.Errorf("%s: stale=%v, want %v", s.what, got, s.stale)
		}
	}
	tr.Wrote("c", "5")
	tr.Forget("c")
	if tr.Stale(obj("c", "5")) {
		t.Error("a forgotten object is stale")
	}
}
