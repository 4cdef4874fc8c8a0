package workers

import (
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/score-orchestrator/score-orchestrator/internal/controller/workerlimit"
)

// Pushback is the API server's pushback as one process sees it: the latency of its requests
// and the 429s it is answered with. It is the process's, not a controller's: every controller
// of a process sends its requests with the same user, which Priority and Fairness classifies
// into one flow of one priority level, so a 429 or a queue building up there answers all of
// them, whichever happened to send the request that saw it. Each controller's gate reads it
// (Window) and halves on the same 429s; additive growth from there shares the room.
//
// It counts and never blocks: requests go on as they would without it.
type Pushback struct {
	// latencies is a cumulative histogram (workerlimit.Bucket) of the answered requests.
	latencies [workerlimit.Buckets]atomic.Uint64
	throttled atomic.Uint64
	now       func() time.Time
}

// NewPushback returns an empty record.
func NewPushback() *Pushback { return &Pushback{now: time.Now} }

// Wrap is a rest.Config's WrapTransport: rt, recording each request's latency (to its
// response's headers) and each 429. Watches are left out: they last as long as the server
// keeps them open. The client's own rate limit waits before the transport and is left out too:
// it is not the server's pushback.
func (p *Pushback) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper{p: p, next: rt}
}

type roundTripper struct {
	p    *Pushback
	next http.RoundTripper
}

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if isWatch(req) {
		return t.next.RoundTrip(req)
	}
	start := t.p.now()
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	// A 429 is the max-in-flight filter's or Priority and Fairness's rejection (the latter
	// carries X-Kubernetes-PF-* headers and a Retry-After): counted, not timed, since a
	// rejection is quick and would lower the floor.
	if resp.StatusCode == http.StatusTooManyRequests {
		t.p.throttled.Add(1)
		return resp, nil
	}
	t.p.latencies[workerlimit.Bucket(t.p.now().Sub(start))].Add(1)
	return resp, nil
}

func isWatch(req *http.Request) bool {
	q := req.URL.Query()
	return q.Get("watch") == "true" || q.Get("watch") == "1" || strings.Contains(req.URL.Path, "/watch/")
}

// reading is a Pushback's cumulative counts at one moment.
type reading struct {
	latencies [workerlimit.Buckets]uint64
	throttled uint64
}

func (p *Pushback) read() reading {
	var r reading
	for i := range r.latencies {
		r.latencies[i] = p.latencies[i].Load()
	}
	r.throttled = p.throttled.Load()
	return r
}

// between fills w's pushback from two readings: the 429s, the requests answered and their
// median latency.
func between(before, after *reading, w *workerlimit.Window) {
	w.Throttled = int(after.throttled - before.throttled)
	w.Latency, w.Samples = workerlimit.Median(&before.latencies, &after.latencies)
}
