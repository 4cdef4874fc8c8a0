package configsource

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// doc is a valid config whose backend version is v, so each v is another revision.
func doc(v int) []byte {
	return []byte(fmt.Sprintf(`apiVersion: score.dev/v1b1
kind: OrchestratorConfig
profiles:
  - name: web-service
    backends:
      - backendId: k8s-web
        runtimeClass: kubernetes
        version: 1.0.%d
        template: {kind: manifests, ref: "oci://registry.example/web@sha256:0000000000000000000000000000000000000000000000000000000000000000"}
defaults:
  profile: web-service
`, v))
}

func TestRevisions(t *testing.T) {
	s := NewStore()
	changed, err := s.Offer("configmap", doc(0))
	if err != nil || !changed {
		t.Fatalf("the first document: changed %v, %v", changed, err)
	}
	first, _ := s.Get()
	if first.Revision != orchconfig.Revision(doc(0)) || !strings.HasPrefix(first.Revision, "sha256:") || len(orchconfig.ShortRevision(first.Revision)) != len("sha256:")+12 {
		t.Fatalf("revision %q (short %q)", first.Revision, orchconfig.ShortRevision(first.Revision))
	}

	t.Run("the same document again is no change, from any source", func(t *testing.T) {
		if changed, _ := s.Offer("oci/sha256:abc", doc(0)); changed {
			t.Fatal("the same content was a change")
		}
		if l, _ := s.Get(); l != first || l.Source != "oci/sha256:abc" {
			t.Fatalf("current %s from %s", l.Revision, l.Source)
		}
	})

	t.Run("an invalid document is no revision", func(t *testing.T) {
		if _, err := s.Offer("configmap", []byte("kind: nothing")); err == nil {
			t.Fatal("an invalid document was admitted")
		}
		if got := s.Revisions(); !slices.Equal(got, []string{first.Revision}) {
			t.Fatalf("revisions %q", got)
		}
	})

	t.Run("the last revisions are kept, the current one last", func(t *testing.T) {
		for v := 1; v <= KeptRevisions+2; v++ {
			if _, err := s.Offer("configmap", doc(v)); err != nil {
				t.Fatal(err)
			}
		}
		got := s.Revisions()
		if len(got) != KeptRevisions || got[len(got)-1] != orchconfig.Revision(doc(KeptRevisions+2)) || got[0] != orchconfig.Revision(doc(3)) {
			t.Fatalf("kept %d revisions, oldest %s, newest %s", len(got), orchconfig.ShortRevision(got[0]), orchconfig.ShortRevision(got[len(got)-1]))
		}
		if _, ok := s.Revision(first.Revision); ok {
			t.Fatal("the oldest revision is still kept")
		}
		old, ok := s.Revision(orchconfig.Revision(doc(5)))
		if !ok || old.Config.Profiles[0].Backends[0].Version != "1.0.5" {
			t.Fatalf("a kept revision: %v", ok)
		}
	})

	t.Run("going back to a kept revision makes it current without a copy", func(t *testing.T) {
		if changed, _ := s.Offer("configmap", doc(5)); !changed {
			t.Fatal("going back was no change")
		}
		got := s.Revisions()
		if len(got) != KeptRevisions || got[len(got)-1] != orchconfig.Revision(doc(5)) || slices.Index(got, orchconfig.Revision(doc(5))) != len(got)-1 {
			t.Fatalf("revisions after going back: %d, current %s", len(got), orchconfig.ShortRevision(got[len(got)-1]))
		}
	})
}
