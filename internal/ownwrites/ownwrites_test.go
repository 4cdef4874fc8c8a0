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
