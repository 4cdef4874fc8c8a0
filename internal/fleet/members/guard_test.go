package members

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
)

// silent is a server that answers /ok (and /unavailable with a 503) and holds every other
// request until the test ends: a member that stopped answering. seen receives each held
// request as it arrives.
type silent struct {
	*httptest.Server
	requests atomic.Int32
	seen     chan struct{}
}

func newSilent(t *testing.T) *silent {
	s := &silent{seen: make(chan struct{}, 16)}
	done := make(chan struct{})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		switch r.URL.Path {
		case "/ok":
			return
		case "/unavailable": // what an API server whose etcd is gone answers
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		s.seen <- struct{}{}
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(done); s.Close() })
	return s
}

// guarded is a member that answered its probe, and a client of it through its guard.
func guarded(timeout time.Duration) (*Member, *http.Client, *atomic.Int32) {
	mem := &Member{Name: "b"}
	mem.answering, mem.end = context.WithCancel(context.Background())
	mem.probedAs(clusters.Status{Reachable: true})
	suspicions := &atomic.Int32{}
	mem.suspected = func() { suspicions.Add(1) }
	return mem, &http.Client{Timeout: timeout, Transport: &guard{next: http.DefaultTransport.(*http.Transport).Clone(), mem: mem}}, suspicions
}

func get(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// A request that gets no answer within its timeout makes the member suspect, once; the next
// requests are refused without being sent; the probe's answer lets them through again.
func TestGuardSuspectsAMemberThatDoesNotAnswer(t *testing.T) {
	s := newSilent(t)
	mem, c, suspicions := guarded(300 * time.Millisecond)
	if err := get(context.Background(), c, s.URL+"/ok"); err != nil {
		t.Fatal(err)
	}
	if err := get(context.Background(), c, s.URL+"/hang"); err == nil {
		t.Fatal("a request the member holds answered")
	}
	if st, _ := mem.Status(); st.Reachable || st.Message == "" || suspicions.Load() != 1 {
		t.Fatalf("after a request timed out: %+v, %d suspicions", st, suspicions.Load())
	}
	sent := s.requests.Load()
	if err := get(context.Background(), c, s.URL+"/ok"); !errors.Is(err, ErrSuspect) || s.requests.Load() != sent {
		t.Fatalf("a request to a suspect member: %v, %d sent", err, s.requests.Load()-sent)
	}
	mem.suspect(errors.New("again"))
	if suspicions.Load() != 1 {
		t.Fatalf("a suspect member suspected again: %d", suspicions.Load())
	}
	mem.probedAs(clusters.Status{Reachable: true})
	if err := get(context.Background(), c, s.URL+"/ok"); err != nil {
		t.Fatalf("after the probe's answer: %v", err)
	}
}

// The requests in flight when the member becomes suspect (another request's timeout, or the
// probe's verdict) end at once: no worker waits out its own timeout on the same member.
func TestGuardEndsTheRequestsInFlight(t *testing.T) {
	for _, by := range []string{"a request", "the probe"} {
		t.Run(by, func(t *testing.T) {
			s := newSilent(t)
			mem, c, _ := guarded(time.Hour)
			errs := make(chan error, 1)
			go func() { errs <- get(context.Background(), c, s.URL+"/hang") }()
			<-s.seen
			if by == "the probe" {
				mem.probedAs(clusters.Status{Message: "The API server does not answer."})
			} else {
				mem.suspect(context.DeadlineExceeded)
			}
			if err := <-errs; !errors.Is(err, ErrSuspect) {
				t.Fatalf("the request in flight: %v", err)
			}
		})
	}
}

// A request its caller gives up on (a worker stopping) says nothing of the member.
func TestGuardIgnoresACallerGivingUp(t *testing.T) {
	s := newSilent(t)
	mem, c, _ := guarded(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() { errs <- get(ctx, c, s.URL+"/hang") }()
	<-s.seen
	cancel()
	if err := <-errs; err == nil {
		t.Fatal("a cancelled request answered")
	}
	if st, _ := mem.Status(); !st.Reachable {
		t.Fatalf("a request its caller cancelled made the member suspect: %+v", st)
	}
}

// Since when a member has (not) answered changes only when whether it answers does: a
// failover counts from it. A suspicion starts a silence; a probe that agrees keeps its time.
func TestMemberFailoverSinceChangesOnTransitionsOnly(t *testing.T) {
	mem, _, _ := guarded(time.Second)
	first, _ := mem.Status()
	if !first.Reachable || first.Since == nil {
		t.Fatalf("first probe: %+v", first)
	}
	mem.probedAs(clusters.Status{Reachable: true, Version: "v1.37.1"})
	if st, _ := mem.Status(); !st.Since.Equal(first.Since) {
		t.Fatalf("an answer after an answer moved since: %v → %v", first.Since, st.Since)
	}
	mem.suspect(context.DeadlineExceeded)
	silent, _ := mem.Status()
	if silent.Reachable || silent.Since == nil || silent.Since.Before(first.Since) {
		t.Fatalf("suspected: %+v", silent)
	}
	mem.probedAs(clusters.Status{Message: "The API server does not answer."})
	if st, _ := mem.Status(); !st.Since.Equal(silent.Since) {
		t.Fatalf("a probe confirming the silence moved since: %v → %v", silent.Since, st.Since)
	}
}

// A member that answers its probe but not its requests (its API server up, etcd gone under
// it) is let back in after more probes answered in a row each time its requests fail again —
// 1, 2, 4, then 8 at most — instead of by every probe; its requests are refused unsent
// meanwhile, its status says why, and since when it has not answered does not move (a
// failover counts from it). A request answered clears its strikes; a 503 is no answer.
func TestGuardHoldsBackAMemberThatAnswersOnlyItsProbe(t *testing.T) {
	s := newSilent(t)
	mem, c, _ := guarded(200 * time.Millisecond)
	ctx := context.Background()
	// letBackAfter probes until the member is let back in, and returns how many probes that took.
	letBackAfter := func() int {
		t.Helper()
		suspected, _ := mem.Status()
		for n := 1; n <= 2*maxReadmitProbes; n++ {
			if _, now, _ := mem.probedAs(clusters.Status{Reachable: true}); now.Reachable {
				return n
			} else if !now.Since.Equal(suspected.Since) || !strings.Contains(now.Message, "It answers its probe, but not the requests") {
				t.Fatalf("held back: %+v, since %v before", now, suspected.Since)
			}
			sent := s.requests.Load()
			if err := get(ctx, c, s.URL+"/ok"); !errors.Is(err, ErrSuspect) || s.requests.Load() != sent {
				t.Fatalf("a request while held back: %v, %d sent", err, s.requests.Load()-sent)
			}
		}
		t.Fatal("never let back in")
		return 0
	}
	fail := func() {
		t.Helper()
		if err := get(ctx, c, s.URL+"/hang"); err == nil {
			t.Fatal("a request the member holds answered")
		}
	}
	for i, want := range []int{1, 2, 4, 8, 8} {
		fail()
		if got := letBackAfter(); got != want {
			t.Fatalf("suspicion %d: let back in after %d probes, want %d", i+1, got, want)
		}
	}
	// A 503 says nothing answered behind the API server: the strikes stay.
	if err := get(ctx, c, s.URL+"/unavailable"); err != nil {
		t.Fatal(err)
	}
	fail()
	if got := letBackAfter(); got != maxReadmitProbes {
		t.Fatalf("after a 503: let back in after %d probes, want %d", got, maxReadmitProbes)
	}
	// An answered request clears them: the next suspicion is let back in by the next probe.
	if err := get(ctx, c, s.URL+"/ok"); err != nil {
		t.Fatal(err)
	}
	fail()
	if got := letBackAfter(); got != 1 {
		t.Fatalf("after an answer: let back in after %d probes, want 1", got)
	}
	// A probe that gets no answer meanwhile starts the count again.
	fail()
	if _, now, _ := mem.probedAs(clusters.Status{Reachable: true}); now.Reachable {
		t.Fatal("let back in by one probe after a second suspicion in a row")
	}
	mem.probedAs(clusters.Status{Message: "The API server does not answer."})
	if got := letBackAfter(); got != 2 {
		t.Fatalf("after a probe without answer: let back in after %d more probes, want 2", got)
	}
}
