package provisionerapi

import (
	"strings"
	"testing"
	"time"

	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioning"
)

func TestLookup(t *testing.T) {
	body := map[string]any{"status": map[string]any{"phase": "ready"}, "items": []any{map[string]any{"state": "up"}}, "n": 3.0}
	cases := []struct {
		path string
		want any
		ok   bool
	}{
		{"status.phase", "ready", true},
		{"items.0.state", "up", true},
		{"n", 3.0, true},
		{"items.1.state", nil, false},
		{"status.phase.x", nil, false},
		{"missing", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			got, ok := Lookup(body, tc.path)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("got %v %v", got, ok)
			}
		})
	}
}

func TestObserve(t *testing.T) {
	api := &orchconfig.API{ReadyWhen: &orchconfig.APIReadyWhen{Path: "status", Ready: []string{"ready"}, Failed: []string{"error"}}, Timeout: "1m"}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pending := State{Phase: PhasePending, Since: start}
	cases := []struct {
		name      string
		body      map[string]any
		at        time.Duration
		wantPhase string
		wantMsg   string
	}{
		{"ready", map[string]any{"status": "ready"}, time.Second, PhaseReady, ""},
		{"the API says failed", map[string]any{"status": "error"}, time.Second, PhaseFailed, "the API reports status error"},
		{"not yet", map[string]any{"status": "creating"}, time.Second, PhasePending, `status is "creating"`},
		{"no such field yet", map[string]any{}, time.Second, PhasePending, `status is ""`},
		{"not yet, and the timeout passed", map[string]any{"status": "creating"}, time.Minute, PhaseFailed, `not ready within 1m0s (status is "creating")`},
		{"ready just at the timeout still counts", map[string]any{"status": "ready"}, time.Minute, PhaseReady, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Observe(pending, api, tc.body, start.Add(tc.at))
			if got.Phase != tc.wantPhase || got.Message != tc.wantMsg || got.Polls != 1 {
				t.Fatalf("got %+v", got)
			}
		})
	}
	if _, out := TimedOut(pending, api, start.Add(59*time.Second)); out {
		t.Fatal("not yet timed out")
	}
	if s, out := TimedOut(pending, api, start.Add(time.Minute)); !out || s.Phase != PhaseFailed {
		t.Fatalf("timed out: %+v", s)
	}
	if got := Observe(State{Since: start}, &orchconfig.API{}, map[string]any{}, start); got.Phase != PhaseReady {
		t.Fatalf("without readyWhen a successful response is ready: %+v", got)
	}
}

func TestBackoff(t *testing.T) {
	cases := []struct {
		interval time.Duration
		polls    int
		want     time.Duration
	}{
		{time.Second, 0, time.Second},
		{time.Second, 1, 2 * time.Second},
		{time.Second, 4, 16 * time.Second},
		{time.Second, 5, 30 * time.Second},
		{time.Second, 50, 30 * time.Second},
		{time.Minute, 3, time.Minute},
	}
	for _, tc := range cases {
		if got := Backoff(tc.interval, tc.polls); got != tc.want {
			t.Errorf("Backoff(%s, %d) = %s, want %s", tc.interval, tc.polls, got, tc.want)
		}
	}
}

func TestRender(t *testing.T) {
	data := provisioning.Data{Guid: "g-1", Params: map[string]any{"size": "large"}, State: State{Created: map[string]any{"id": "db-7"}}.Map()}
	req := orchconfig.APIRequest{
		URL:     "https://api.example.test/dbs/{{ .State.created.id }}",
		Headers: map[string]string{"X-Request-Id": "{{ .Guid }}"},
		Body:    `{"size": {{ .Params.size | quote }}}`,
	}
	got, err := Render(req, "DELETE", data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Method != "DELETE" || got.URL != "https://api.example.test/dbs/db-7" || got.Headers["X-Request-Id"] != "g-1" || got.Body != `{"size": "large"}` {
		t.Fatalf("got %+v", got)
	}
	for name, u := range map[string]string{"plain http": "http://api.example.test/dbs", "no host": "https:///dbs", "not a url": "{{ .Guid }}"} {
		t.Run(name, func(t *testing.T) {
			if _, err := Render(orchconfig.APIRequest{URL: u}, "GET", data); err == nil || !strings.Contains(err.Error(), "not an https:// url") {
				t.Fatalf("got %v", err)
			}
		})
	}
}

func TestStateRoundTrips(t *testing.T) {
	s := State{Phase: PhasePending, Created: map[string]any{"id": "x"}, Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Polls: 2}
	back, err := StateFrom(s.Map())
	if err != nil || back.Phase != s.Phase || back.Created["id"] != "x" || !back.Since.Equal(s.Since) || back.Polls != 2 {
		t.Fatalf("got %+v, %v", back, err)
	}
	if s.Map()["created"].(map[string]any)["id"] != "x" {
		t.Fatal("templates read .State.created")
	}
}

func TestSecretOutputs(t *testing.T) {
	plain := map[string]any{"host": "h", "password": "p", "keys": []any{"a"}}
	secret := map[string]string{}
	SecretOutputs([]string{"password", "keys", "absent"}, plain, secret)
	if len(plain) != 1 || plain["host"] != "h" || secret["password"] != "p" || secret["keys"] != `["a"]` {
		t.Fatalf("plain %v secret %v", plain, secret)
	}
}
