// Package workerlimit is the control law of a controller's worker count: how many requests it
// reconciles at once, moved window by window between a floor and the cap its flag sets, from
// what the window observed — work waiting, and the API server's pushback.
//
// The law is additive increase, multiplicative decrease (AIMD), as TCP's congestion window,
// with latency read as a gradient, as TCP Vegas and Netflix's concurrency limits read it:
//
//   - a window in which the API server answered 429 (Priority and Fairness rejected a request,
//     or the max-in-flight filter did) halves the limit;
//   - a window whose median request latency is well above the recent reference (more than
//     Far × it, and more than Slack above it) takes a quarter off it, at least one — but only
//     what was added since latency was last near its reference (At), and never below Base;
//   - otherwise a window in which requests waited while every worker was busy, and latency
//     stayed near the reference (at most Near × it, or within Slack of it) or was not judged,
//     adds one;
//   - anything else holds it.
//
// The reference is a moving average of the windows' medians (each window moves it 1/Follow
// of the way), not the lowest ever seen: latency that rises because the cluster is busier —
// the volume binder, the scheduler, other clients of the API server — is learned within a few
// windows, and a deep queue keeps the limit growing through it. What latency still answers is
// a rise the limit's own growth made: a median that doubles within a few windows of workers
// added. One that doubles at a limit where latency was near its reference (At: the limit
// never grew past it) is the cluster's, and holds the limit rather than lowering it.
//
// The two signals are not trusted alike: a 429 is the API server's own verdict (Priority and
// Fairness found the process's share of its seats full), latency is an inference from a mix
// of requests on a server other clients load too. So latency alone never takes the limit
// below Base (where the controller started); only 429s take it further, down to Min. Several
// controllers in one process each run the law over their own demand and the process's shared
// pushback: on a 429 each halves, and additive growth from there converges on equal shares of
// what the API server gives the process, as TCP flows do.
//
// The package holds no clock: a window is whatever the caller made it, and tests inject them.
package workerlimit

import "time"

// Params bound and tune the law.
type Params struct {
	// Min and Max bound the limit: never below Min (at least 1), never above Max, the flag's
	// cap.
	Min, Max int
	// Base is as low as latency alone takes the limit (429s take it down to Min).
	Base int
	// Near and Far are multiples of the latency reference: a window's median at most Near × the
	// reference lets the limit grow, one above Far × the reference shrinks it.
	Near, Far float64
	// Slack is a rise above the reference too small to count, whatever its ratio: a loopback
	// API server answering in 5 ms instead of 2 is not pushing back.
	Slack time.Duration
	// MinSamples is the fewest requests a window's latency is judged on: a quieter window (a
	// leader election renewal, a trickle of events) tells nothing about the API server's load,
	// and must not move the reference either.
	MinSamples int
	// Follow is how fast the reference follows the windows' medians: each judged window moves
	// it 1/Follow of the way to its median, up or down. Small enough that one window's spike
	// stands out against it; large enough that a cluster getting busier over a few seconds is
	// learned, not read as pushback for ever.
	Follow int
}

// Defaults are the documented parameters for a cap of max workers, starting from base:
// latency near the reference up to 1.5× (or 5 ms above it), well above it from 2× (and 5 ms),
// judged on 10 requests, the reference following the medians by a quarter a window (half the
// way in under three windows).
func Defaults(max, base int) Params {
	return Params{Min: 1, Max: max, Base: base, Near: 1.5, Far: 2, Slack: 5 * time.Millisecond, MinSamples: 10, Follow: 4}
}

// Window is what one interval observed.
type Window struct {
	// Waiting counts the requests ready in the queue at the window's end, handed out to no
	// worker yet: the demand.
	Waiting int
	// Busy is the most workers reconciling at once during the window: at the limit, the limit
	// is what held the waiting work back.
	Busy int
	// Throttled counts the API server's 429 answers in the window.
	Throttled int
	// Samples counts the requests answered in the window, Latency is their median.
	Samples int
	Latency time.Duration
}

// State is the law's memory from one window to the next.
type State struct {
	// Limit is the number of workers that may reconcile at once.
	Limit int
	// Reference is the moving average of the judged windows' medians (Params.Follow); zero
	// until a window was judged.
	Reference time.Duration
	// At is the limit of the last judged window whose latency was near the reference: what
	// the limit grew by since is what a rise of latency may take back. Zero until one was.
	At int
}

// Reason says why the limit moved.
type Reason string

// The reasons a limit moves; none when it holds.
const (
	Grew      Reason = "grew"
	Throttled Reason = "throttled"
	Slow      Reason = "latency"
)

// Start is the state before the first window: limit start, within the bounds.
func Start(p Params, start int) State {
	return State{Limit: bound(p, start)}
}

// Next is the state after window w, and why the limit moved (empty: it did not).
func Next(p Params, s State, w Window) (State, Reason) {
	limit := bound(p, s.Limit)
	judged := w.Samples >= max(p.MinSamples, 1) && w.Latency > 0
	// ratio is the window's median over the reference; 0, which counts as near, when latency
	// was not judged, no reference is known yet, or the rise is within Slack.
	ratio := 0.0
	if judged && s.Reference > 0 && w.Latency-s.Reference > p.Slack {
		ratio = float64(w.Latency) / float64(s.Reference)
	}
	next := State{Limit: limit, Reference: follow(p, s.Reference, w.Latency, judged), At: s.At}
	if judged && ratio <= p.Near {
		next.At = limit
	}
	// Latency takes back only what the limit grew by since latency was last near its
	// reference, and never goes below Base.
	floor := max(p.Base, s.At)
	switch {
	case w.Throttled > 0:
		next.Limit = bound(p, limit/2)
		next.At = min(next.At, next.Limit) // the API server's verdict: at most this many was fine
	case ratio > p.Far && limit > floor:
		next.Limit = bound(p, max(min(limit-1, limit*3/4), floor))
	case w.Waiting > 0 && w.Busy >= limit && ratio <= p.Near:
		next.Limit = bound(p, limit+1)
	}
	switch {
	case next.Limit > limit:
		return next, Grew
	case next.Limit < limit && w.Throttled > 0:
		return next, Throttled
	case next.Limit < limit:
		return next, Slow
	}
	return next, ""
}

// follow is the reference after a window whose median was latency: the first judged window
// sets it, each later one moves it 1/Follow of the way.
func follow(p Params, reference, latency time.Duration, judged bool) time.Duration {
	switch {
	case !judged:
		return reference
	case reference == 0:
		return latency
	}
	return reference + (latency-reference)/time.Duration(max(p.Follow, 1))
}

func bound(p Params, n int) int {
	return max(min(n, p.Max), p.Min, 1)
}
