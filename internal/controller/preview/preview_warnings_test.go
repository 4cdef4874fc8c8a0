package preview

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// A warning is news once per transition: the same note about the same namespace is not, a new
// note, a namespace made anew under the name, or a note after forget is.
func TestNotEndedWarningsAreNewsOncePerTransition(t *testing.T) {
	var w notEndedWarnings
	for _, step := range []struct {
		name   string
		forget bool
		uid    string
		note   string
		news   bool
	}{
		{name: "first said", uid: "u1", note: "expired at 1", news: true},
		{name: "the same again", uid: "u1", note: "expired at 1"},
		{name: "another note", uid: "u1", note: "expired at 2", news: true},
		{name: "the namespace made anew", uid: "u2", note: "expired at 2", news: true},
		{name: "forgotten (not expired, trusted, gone)", forget: true},
		{name: "said again after it", uid: "u2", note: "expired at 2", news: true},
	} {
		if step.forget {
			w.forget("preview-a")
			continue
		}
		if got := w.news("preview-a", types.UID(step.uid), step.note); got != step.news {
			t.Fatalf("%s: news %v, want %v", step.name, got, step.news)
		}
	}
	if !w.news("preview-b", "u1", "expired at 1") {
		t.Fatal("another namespace's warning is its own")
	}
}
