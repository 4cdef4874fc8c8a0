package provisionerapi

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
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
	if got.Method != "DELETE" || got.URL != "https://api.example.test/dbs/db-7" || got.Headers["X-Request-Id"] != "g-1" || got.Body != `{"size":"large"}` {
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

// A value a tenant gives (params, and anything else the data holds) lands in a URL as data:
// it cannot change the URL's host, add path segments or a query, or start a fragment.
func TestRenderEscapesValuesForWhereTheyLand(t *testing.T) {
	const tpl = "https://{{ .Params.region }}.api.example/v1/dbs/{{ .Params.name }}/users?owner={{ .Params.owner }}&tag={{ .Params.tag | lower }}"
	cases := []struct {
		name                   string
		region, db, owner, tag string
		wantErr                string
		wantRawSegment         string
	}{
		{name: "plain values", region: "eu", db: "orders", owner: "team-a", tag: "gold", wantRawSegment: "orders"},
		{name: "a slash and a fragment in a path segment", region: "eu", db: "a/b#frag", owner: "o", tag: "t", wantRawSegment: "a%2Fb%23frag"},
		{name: "a query in a path segment", region: "eu", db: "x?admin=true", owner: "o", tag: "t", wantRawSegment: "x%3Fadmin%3Dtrue"},
		{name: "path parameters", region: "eu", db: "x;jsessionid=1", owner: "o", tag: "t", wantRawSegment: "x%3Bjsessionid%3D1"},
		{name: "an escape escaped", region: "eu", db: "%2e%2e", owner: "o", tag: "t", wantRawSegment: "%252e%252e"},
		{name: "a traversal", region: "eu", db: "../admin?x=", owner: "o", tag: "t", wantErr: "may not be . or .."},
		{name: "a dot-segment", region: "eu", db: "..", owner: "o", tag: "t", wantErr: "may not be . or .."},
		{name: "a dot-segment behind a backslash", region: "eu", db: `a\..\b`, owner: "o", tag: "t", wantErr: "may not be . or .."},
		{name: "another query parameter", region: "eu", db: "d", owner: "x&admin=true", tag: "t", wantRawSegment: "d"},
		{name: "a fragment in the query", region: "eu", db: "d", owner: "o", tag: "a b+c#d", wantRawSegment: "d"},
		{name: "another host", region: "evil.example#", db: "d", owner: "o", tag: "t", wantErr: "only letters, digits and hyphens"},
		{name: "another domain", region: "attacker.example", db: "d", owner: "o", tag: "t", wantErr: "only letters, digits and hyphens"},
		{name: "userinfo", region: "x@attacker", db: "d", owner: "o", tag: "t", wantErr: "only letters, digits and hyphens"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := provisioning.Data{Params: map[string]any{"region": tc.region, "name": tc.db, "owner": tc.owner, "tag": tc.tag}}
			got, err := Render(orchconfig.APIRequest{URL: tpl}, "GET", data)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, %v; want an error saying %q", got.URL, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(got.URL)
			if err != nil {
				t.Fatal(err)
			}
			segments := strings.Split(u.EscapedPath(), "/")
			if u.Host != tc.region+".api.example" || len(segments) != 5 || segments[1] != "v1" || segments[2] != "dbs" || segments[3] != tc.wantRawSegment || segments[4] != "users" {
				t.Fatalf("url %s: host or path changed", got.URL)
			}
			if u.Fragment != "" || len(u.Query()) != 2 || u.Query().Get("owner") != tc.owner || u.Query().Get("tag") != strings.ToLower(tc.tag) {
				t.Fatalf("url %s: query or fragment changed", got.URL)
			}
		})
	}
}

func TestCreateDue(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name     string
		state    State
		at       time.Duration
		due      bool
		waitLeft time.Duration
	}{
		{"nothing created", State{}, 0, true, 0},
		{"a failed create request, before its next attempt", State{Attempts: 1, Next: start.Add(2 * time.Second)}, time.Second, false, time.Second},
		{"a failed create request, at its next attempt", State{Attempts: 1, Next: start.Add(2 * time.Second)}, 2 * time.Second, true, 0},
		{"another pass is sending", State{Phase: PhaseSending, Since: start}, time.Second, false, SendWindow - time.Second},
		{"the pass that was sending stopped", State{Phase: PhaseSending, Since: start}, SendWindow, true, 0},
		{"created", State{Phase: PhasePending, Since: start}, time.Hour, false, 0},
		{"ready", State{Phase: PhaseReady}, 0, false, 0},
		{"failed", State{Phase: PhaseFailed}, 0, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			due, wait := CreateDue(tc.state, start.Add(tc.at))
			if due != tc.due || wait != tc.waitLeft {
				t.Fatalf("got %v %s, want %v %s", due, wait, tc.due, tc.waitLeft)
			}
		})
	}
}

func TestCreateFailed(t *testing.T) {
	api := &orchconfig.API{PollInterval: "1s"}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sending := State{Phase: PhaseSending, Since: now.Add(-time.Second), Attempts: 2}
	got := CreateFailed(sending, api, "POST https://api.example/dbs answered 500 Internal Server Error", now)
	if got.Phase != PhaseCreating || got.Attempts != 3 || !got.Next.Equal(now.Add(4*time.Second)) || got.Created != nil || got.Message == "" {
		t.Fatalf("got %+v", got)
	}
	if due, _ := CreateDue(got, now.Add(3*time.Second)); due {
		t.Fatal("sent again before its wait")
	}
}

// TestRenderKeepsBodyValuesValues: a param cannot add a field to a JSON or form body, however
// the definition prints it (quoted, bare, inside a string).
func TestRenderKeepsBodyValuesValues(t *testing.T) {
	hostile := `x", "admin": true, "y": "` + "\n}&admin=true"
	data := provisioning.Data{Guid: "g-1", Params: map[string]any{"name": hostile, "n": 3}}
	for _, tc := range []struct {
		name, contentType, body, want string
	}{
		{"JSON, quoted", "application/json", `{"name": {{ .Params.name | quote }}, "n": {{ .Params.n }}}`, `{"n":3,"name":` + jsonString(hostile) + `}`},
		{"JSON, bare", "", `{"name": {{ .Params.name }}}`, `{"name":` + jsonString(hostile) + `}`},
		{"JSON, in a string", "application/merge-patch+json", `{"name": "db-{{ .Params.name }}"}`, `{"name":` + jsonString("db-"+hostile) + `}`},
		{"JSON, toJson", "", `{{ toJson .Params }}`, `{"n":3,"name":` + jsonString(hostile) + `}`},
		{"form", "application/x-www-form-urlencoded", `name={{ .Params.name }}&n={{ .Params.n }}`, "name=" + url.QueryEscape(hostile) + "&n=3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := orchconfig.APIRequest{URL: "https://api.example.test/dbs", Body: tc.body, Headers: map[string]string{}}
			if tc.contentType != "" {
				req.Headers["Content-Type"] = tc.contentType
			}
			got, err := Render(req, "POST", data)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.ReplaceAll(tc.want, "+", "%20")
			if got.Body != want && got.Body != tc.want {
				t.Errorf("got  %s\nwant %s", got.Body, tc.want)
			}
		})
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
