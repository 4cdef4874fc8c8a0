package blackhole

import (
	"testing"

	"github.com/score-orchestrator/score-orchestrator/internal/testing/blackhole"
)

// newProxy forwards to server (an API server URL) until the test ends, and returns its own URL.
func newProxy(t *testing.T, server string) (*blackhole.Proxy, string) {
	t.Helper()
	p, url, err := blackhole.New(server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p, url
}
