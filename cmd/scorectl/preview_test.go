package main

import (
	"maps"
	"testing"
)

// TestAPreviewKeepsItsNamespacesRestrictions: a preview carries the labels of the namespace it
// previews that restrict it — Pod Security's and the allowed profiles, without which a preview
// could run a profile its namespace refuses — and none of the control plane's own or the
// namespace's name.
func TestAPreviewKeepsItsNamespacesRestrictions(t *testing.T) {
	got := carriedLabels(map[string]string{
		"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/warn": "restricted",
		"score.dev/allowed-profiles": "web-service", "team": "payments", "share": "yes",
		"score.dev/preview": "pr-1", "score.dev/preview-of": "team-a", "score.dev/shard": "a", "kubernetes.io/metadata.name": "team-a",
	})
	want := map[string]string{
		"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/warn": "restricted",
		"score.dev/allowed-profiles": "web-service", "team": "payments", "share": "yes",
	}
	if !maps.Equal(got, want) {
		t.Errorf("carried %v, want %v", got, want)
	}
}
