package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/score-orchestrator/score-orchestrator/internal/fleet/hosts"
)

// A host answers while its agent renewed its Lease within three renewals; an agent's text is
// escaped.
func TestPrintHosts(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	recent, stale := now.Add(-30*time.Second), now.Add(-5*time.Minute)
	var out bytes.Buffer
	if err := printHosts(&out, []hosts.Host{
		{Name: "edge-1", Namespaces: []string{"shop", "blog"}, Address: "10.0.0.1", Renewed: &recent, Engine: "Docker 20.10.24"},
		{Name: "edge-2", Namespaces: []string{"ops"}, Address: "10.0.0.2", Renewed: &stale, Engine: "Docker \x1b[31m"},
		{Name: "edge-3", Namespaces: []string{"lab"}, Address: "10.0.0.3"},
	}, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	for i, want := range []string{"edge-1  shop,blog   10.0.0.1  yes", "edge-2  ops         10.0.0.2  no ", "edge-3  lab         10.0.0.3  no agent yet"} {
		if !strings.HasPrefix(lines[i+1], want) {
			t.Errorf("line %d: %q, want it to start with %q", i+1, lines[i+1], want)
		}
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Error("an agent's text reached the terminal unescaped")
	}
}
