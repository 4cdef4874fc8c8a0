package members

// A member's guard: what is sent to a member that went silent. The first request that gets no
// answer makes the member suspect; the requests in flight to it end with it, the next ones
// are refused without being sent, and only the probe, which has a client of its own, asks it
// again.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/score-orchestrator/score-orchestrator/internal/apierror"
	"github.com/score-orchestrator/score-orchestrator/internal/clusters"
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

// probedAs records a probe's result and returns the status before it and whether this was
// the first probe. An answer ends the suspicion: requests go to the member again.
func (mem *Member) probedAs(status clusters.Status) (before clusters.Status, first bool) {
	mem.state.Lock()
	defer mem.state.Unlock()
	before, first = mem.status, !mem.probed
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
	return before, first
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
	now := metav1.Now()
	mem.status.Reachable, mem.status.Message, mem.status.Since = false, "A request failed: "+describe(err)+".", &now
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
	resp.Body = &guardedBody{ReadCloser: resp.Body, g: g, ctx: req.Context(), done: done}
	return resp, nil
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
