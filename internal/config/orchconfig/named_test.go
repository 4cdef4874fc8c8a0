package orchconfig

import (
	"strings"
	"testing"
)

// A Workload mounts by name only the volumes a rule that selects its namespace admits; with
// no rules, none (otherwise a plain name mounts a colleague's database volume).
func TestNamedVolumeAllowed(t *testing.T) {
	cfg := &Config{NamedVolumes: []NamedVolumeRule{
		{Names: []string{"{namespace}-scratch"}},
		{NamespaceSelector: &Selector{MatchLabels: map[string]string{"reports": "yes"}}, Names: []string{"reports-*", "shared-archive"}},
	}}
	reports := map[string]string{"reports": "yes"}
	for _, tc := range []struct {
		name, namespace, volume string
		labels                  map[string]string
		want                    bool
		admits                  string
	}{
		{"its own scratch volume", "team-a", "team-a-scratch", nil, true, ""},
		{"another namespace's scratch volume", "team-b", "team-a-scratch", nil, false, "team-b-scratch"},
		{"a pattern, selected by label", "finance", "reports-2026", reports, true, ""},
		{"a name, selected by label", "finance", "shared-archive", reports, true, ""},
		{"a pattern from a namespace without the label", "team-a", "reports-2026", nil, false, "team-a-scratch"},
		{"a colleague's database volume", "team-a", "data-pg-1a2b3c4d5e6f-0", reports, false, "team-a-scratch reports-* shared-archive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, admits := cfg.NamedVolumeAllowed(tc.namespace, tc.labels, tc.volume)
			if got != tc.want || strings.Join(admits, " ") != tc.admits {
				t.Fatalf("allowed %v admitting %v, want %v admitting %q", got, admits, tc.want, tc.admits)
			}
		})
	}
	if ok, admits := (&Config{}).NamedVolumeAllowed("team-a", nil, "anything"); ok || len(admits) != 0 {
		t.Fatal("without rules, no volume is mounted by name")
	}
}

// A definition's references name the platform's Secrets it lists, by name or pattern.
func TestMayReferToPlatformSecret(t *testing.T) {
	def := Provisioner{PlatformSecrets: []string{"score-environment", "platform-*"}}
	for name, want := range map[string]bool{"score-environment": true, "platform-token": true, "platform-": true, "score-environment-2": false, "pg-1a2b": false} {
		if got := def.MayReferToPlatformSecret(name); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}
