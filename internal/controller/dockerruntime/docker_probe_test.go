package dockerruntime

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/score-orchestrator/score-orchestrator/internal/rendering/compose"
)

// A probe's path is the Workload's: whatever it says, the probe goes to the container's
// address and port, never to another host (user information, a scheme-relative path).
func TestHostileProbePathNamesNoOtherHost(t *testing.T) {
	for _, tc := range []struct {
		path, want, wantErr string
	}{
		{path: "/ready", want: "http://172.17.0.2:8080/ready"},
		{path: "/ready?full=1", want: "http://172.17.0.2:8080/ready?full=1"},
		{path: "/a b", want: "http://172.17.0.2:8080/a%20b"},
		{path: "@169.254.169.254/latest/meta-data/", wantErr: "does not start with /"},
		{path: "//169.254.169.254/latest", want: "http://172.17.0.2:8080//169.254.169.254/latest"},
		{path: "", wantErr: "does not start with /"},
	} {
		got, err := probeURL("172.17.0.2", compose.HTTPProbe{Port: 8080, Path: tc.path, Scheme: "http"})
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%q: %q, %v; want the error %q", tc.path, got, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("%q: %q, %v; want %q", tc.path, got, err, tc.want)
		case err == nil && !strings.HasPrefix(got, "http://172.17.0.2:8080/"):
			t.Errorf("%q reaches %q", tc.path, got)
		}
	}
}

// A redirect is the probe's answer, not followed to wherever it points.
func TestHostileProbeFollowsNoRedirect(t *testing.T) {
	elsewhere := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("the probe followed a redirect") }))
	defer elsewhere.Close()
	container := httptest.NewServer(http.RedirectHandler(elsewhere.URL, http.StatusFound))
	defer container.Close()
	resp, err := NewProbeClient().Get(container.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Errorf("status %d", resp.StatusCode)
	}
}
