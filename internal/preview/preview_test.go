package preview

import (
	"strings"
	"testing"
	"time"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
)

var t0 = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

func ns(name, preview, of string, created time.Time, more ...string) Namespace {
	n := Namespace{Name: name, Created: created, Labels: map[string]string{}, Annotations: map[string]string{}}
	if preview != "" {
		n.Labels[scorev1b1.LabelPreview] = preview
	}
	if of != "" {
		n.Labels[scorev1b1.LabelPreviewOf] = of
	}
	for i := 0; i+1 < len(more); i += 2 {
		if strings.Contains(more[i], "expires") {
			n.Annotations[more[i]] = more[i+1]
		} else {
			n.Labels[more[i]] = more[i+1]
		}
	}
	return n
}

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ns      Namespace
		policy  orchconfig.Previews
		want    bool
		expires time.Time
		of      string
		deprov  scorev1b1.DeprovisionPolicy
	}{
		{name: "not labelled", ns: ns("preview-a", "", "", t0)},
		{name: "a label alone does not make any namespace a preview", ns: ns("production", "a", "team-a", t0)},
		{name: "the name must be the prefix and the label", ns: ns("preview-b", "a", "team-a", t0)},
		{name: "default lifetime and Delete", ns: ns("preview-a", "a", "team-a", t0), want: true, expires: t0.Add(24 * time.Hour), of: "team-a", deprov: scorev1b1.DeprovisionDelete},
		{name: "the expiry it names", ns: ns("preview-a", "a", "team-a", t0, scorev1b1.AnnotationPreviewExpires, t0.Add(2*time.Hour).Format(time.RFC3339)),
			want: true, expires: t0.Add(2 * time.Hour), of: "team-a", deprov: scorev1b1.DeprovisionDelete},
		{name: "an expiry past maxTTL is cut to it", ns: ns("preview-a", "a", "team-a", t0, scorev1b1.AnnotationPreviewExpires, t0.Add(9999*time.Hour).Format(time.RFC3339)),
			want: true, expires: t0.Add(7 * 24 * time.Hour), of: "team-a", deprov: scorev1b1.DeprovisionDelete},
		{name: "an expiry that does not parse is the default", ns: ns("preview-a", "a", "team-a", t0, scorev1b1.AnnotationPreviewExpires, "tomorrow"),
			want: true, expires: t0.Add(24 * time.Hour), of: "team-a", deprov: scorev1b1.DeprovisionDelete},
		{name: "the platform's lifetime and policy", ns: ns("preview-a", "a", "team-a", t0),
			policy: orchconfig.Previews{DefaultTTL: "2h", MaxTTL: "1h", DeprovisionPolicy: "Retain"},
			want:   true, expires: t0.Add(time.Hour), of: "team-a", deprov: scorev1b1.DeprovisionRetain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := Read(tc.ns, tc.policy)
			if ok != tc.want {
				t.Fatalf("Read = %v, want %v", ok, tc.want)
			}
			if !ok {
				return
			}
			if !p.Expires.Equal(tc.expires) || p.Of != tc.of || p.Policy != tc.deprov {
				t.Errorf("got expires %s of %q policy %s, want %s %q %s", p.Expires, p.Of, p.Policy, tc.expires, tc.of, tc.deprov)
			}
		})
	}
}

func TestStanding(t *testing.T) {
	a := ns("preview-a", "a", "team-a", t0)
	b := ns("preview-b", "b", "team-a", t0.Add(time.Minute))
	c := ns("preview-c", "c", "team-a", t0.Add(2*time.Minute))
	other := ns("preview-x", "x", "team-b", t0.Add(-time.Hour))
	// Same creation second: the name orders them.
	c2 := ns("preview-c2", "c2", "team-a", t0.Add(2*time.Minute))
	teamA := ns("preview-t1", "t1", "ns-1", t0, "team", "blue")
	teamB := ns("preview-t2", "t2", "ns-2", t0.Add(time.Minute), "team", "blue")
	all := []Namespace{a, b, c, c2, other}
	for _, tc := range []struct {
		name    string
		ns      Namespace
		all     []Namespace
		policy  orchconfig.Previews
		refused string
	}{
		{name: "within the default limit", ns: c, all: all},
		{name: "the oldest are admitted", ns: b, all: all, policy: orchconfig.Previews{Max: 2}},
		{name: "a newer one is refused", ns: c, all: all, policy: orchconfig.Previews{Max: 2},
			refused: "Preview c is over the platform's limit of 2 previews of namespace team-a (the config's previews.max): a, b are older"},
		{name: "by name within a second", ns: c2, all: all, policy: orchconfig.Previews{Max: 3}, refused: "limit of 3"},
		{name: "by name within a second, the first", ns: c, all: all, policy: orchconfig.Previews{Max: 3}},
		{name: "another namespace's previews do not count", ns: other, all: all, policy: orchconfig.Previews{Max: 1}},
		{name: "itself absent from the list", ns: b, all: []Namespace{a}, policy: orchconfig.Previews{Max: 1}, refused: "a is older"},
		{name: "disabled", ns: a, all: all, policy: orchconfig.Previews{Disabled: true}, refused: "does not allow preview environments"},
		{name: "by team", ns: teamB, all: []Namespace{teamA, teamB}, policy: orchconfig.Previews{Max: 1, TeamLabel: "team"},
			refused: "limit of 1 previews per team (team=blue)"},
		{name: "by namespace, the teams do not count", ns: teamB, all: []Namespace{teamA, teamB}, policy: orchconfig.Previews{Max: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := Standing(tc.ns, tc.all, tc.policy)
			if !ok {
				t.Fatal("not a preview")
			}
			if tc.refused == "" && p.Refused != "" || tc.refused != "" && !strings.Contains(p.Refused, tc.refused) {
				t.Errorf("Refused = %q, want %q", p.Refused, tc.refused)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	p, _ := Read(ns("preview-a", "a", "team-a", t0), orchconfig.Previews{})
	if got := p.Describe(t0.Add(time.Hour)); !strings.Contains(got, "preview a of namespace team-a, expires 2026-11-28T10:00:00Z (in 23h0m0s)") || !strings.Contains(got, "(Delete)") {
		t.Errorf("Describe = %q", got)
	}
	if got := p.Describe(t0.Add(25 * time.Hour)); !strings.Contains(got, "expired; the control plane is deleting it") {
		t.Errorf("Describe = %q", got)
	}
}
