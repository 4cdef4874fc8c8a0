package members

// A member's guard: what is sent to a member that went silent. The first request that gets no
// answer makes the member suspect; the requests in flight to it end with it, the next ones
// are refused without being sent, and only the probe, which has a client of its own, asks it
// again.
//
// A member whose API server answers the probe (its version) but not the requests (etcd gone
// under it: a 503 or 504 for every read and write, or requests that hang) would be let back in
// by every probe and hold the workers talking to it once per probe interval. So each suspicion
// since a request to it last got an answer is a strike, and a member with strikes is let back
// in only after readmitProbes(strikes) probes answered in a row: 1, 2, 4, then at most
// maxReadmitProbes (two minutes at the default interval). An answered request clears them.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/score-orchestrator/score-orchestrator/internal/apierror"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
)

// ErrSuspect is the error of a request to a member that is suspect: not sent.
var ErrSuspect = errors.New("the cluster did not answer a request: nothing is sent to it until it answers the probe")

// Status returns the member's last probe's result (or that a request got no answer since),
// and whether it was probed yet.
func (mem *Member) Status() (clusters.Status, bool) {
	mem.state.Lock()
	defer mem.state.Unlock()
	return mem.status, mem.probed
}

// maxReadmitProbes bounds the probes a member with strikes must answer in a row before
// requests go to it again.
const maxReadmitProbes = 8

// readmitProbes is how many probes in a row a member must answer to be let back in after its
// strikes-th suspicion in a row (0: it was only found silent by a probe).
func readmitProbes(strikes int) int {
	if strikes <= 1 {
		return 1
	}
	return min(1<<(strikes-1), maxReadmitProbes)
}

// probedAs records a probe's result and returns the status before it, the status now and
// whether this was the first probe. An answer ends the suspicion: requests go to the member
// again — after as many answers in a row as its strikes ask (readmitProbes), the status
// saying so meanwhile.
func (mem *Member) probedAs(status clusters.Status) (before, now clusters.Status, first bool) {
	mem.state.Lock()
	defer mem.state.Unlock()
	before, first = mem.status, !mem.probed
	if !status.Reachable {
		mem.answered = 0
	} else if !first && !before.Reachable {
		mem.answered++
		if need := readmitProbes(mem.strikes); mem.answered < need {
			held := before
			held.Labels, held.Version = status.Labels, status.Version
			held.Message = fmt.Sprintf("A request failed: %s. It answers its probe, but not the requests sent since it was last let back in (%d suspicions in a row): requests go to it again after %d answered probes in a row (%d so far).",
				mem.failure, mem.strikes, need, mem.answered)
			mem.status = held
			return before, held, first
		}
	}
	status.Since = before.Since
	if first || before.Reachable != status.Reachable {
		now := metav1.Now()
		status.Since = &now
	}
	mem.status, mem.probed = status, true
	switch {
	case !status.Reachable:
		mem.end()
	case mem.answering.Err() != nil:
		mem.answering, mem.end = context.WithCancel(context.Background())
	}
	return before, status, first
}

// suspect records that a request got no answer: the member is unreachable until the probe
// says otherwise, and every request in flight to it ends.
func (mem *Member) suspect(err error) {
	mem.state.Lock()
	defer mem.state.Unlock()
	mem.end()
	if !mem.status.Reachable {
		return
	}
	mem.strikes++
	mem.answered, mem.failure = 0, describe(err)
	now := metav1.Now()
	mem.status.Reachable, mem.status.Message, mem.status.Since = false, "A request failed: "+mem.failure+".", &now
	if mem.suspected != nil {
		mem.suspected()
	}
}

// inFlight returns the context a request to the member runs under, ended when the member
// becomes suspect, or ErrSuspect.
func (mem *Member) inFlight() (context.Context, error) {
	mem.state.Lock()
	defer mem.state.Unlock()
	if mem.answering.Err() != nil {
		return nil, ErrSuspect
	}
	return mem.answering, nil
}

// guard is the transport of a member's client: requests to a suspect member are refused
// unsent, and one that gets no answer makes the member suspect.
type guard struct {
	next http.RoundTripper
	mem  *Member
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	answering, err := g.mem.inFlight()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	stop := context.AfterFunc(answering, func() { cancel(ErrSuspect) })
	done := func() { stop(); cancel(nil) }
	resp, err := g.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		if errors.Is(context.Cause(ctx), ErrSuspect) {
			err = ErrSuspect // ended by another request's failure, or the probe's
		}
		g.failed(req.Context(), err)
		done()
		return nil, err
	}
	if resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusGatewayTimeout {
		g.mem.answeredRequest()
	}
	resp.Body = &guardedBody{ReadCloser: resp.Body, g: g, ctx: req.Context(), done: done}
	return resp, nil
}

// answeredRequest records that a request got an answer (not a 503 or 504, which say nothing
// answered behind the API server): the member's strikes are cleared.
func (mem *Member) answeredRequest() {
	mem.state.Lock()
	mem.strikes = 0
	mem.state.Unlock()
}

// failed makes the member suspect when a request got no answer: the request's timeout
// (RequestTimeout) passed, or the connection failed. A request its caller gave up on (a
// worker stopping) says nothing of the member, nor does one ended by the suspicion.
func (g *guard) failed(ctx context.Context, err error) {
	deadline, bounded := ctx.Deadline()
	switch {
	case errors.Is(err, ErrSuspect):
	case errors.Is(ctx.Err(), context.DeadlineExceeded), bounded && !time.Now().Before(deadline):
		// Its timeout passed (http.Client's own timer may end it a moment before its
		// context's).
		g.mem.suspect(context.DeadlineExceeded)
	case ctx.Err() == nil && apierror.Unanswered(err):
		g.mem.suspect(err)
	}
}

// guardedBody is a response's body: a read that gets no more answer makes the member suspect
// too, and the request's context ends when it is closed.
type guardedBody struct {
	io.ReadCloser
	g    *guard
	ctx  context.Context
	done func()
}

func (b *guardedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.g.failed(b.ctx, err)
	}
	return n, err
}

func (b *guardedBody) Close() error {
	err := b.ReadCloser.Close()
	b.done()
	return err
}
