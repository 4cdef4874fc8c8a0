// Package workerlimit is the control law of a controller's worker count: how many requests it
// reconciles at once, moved window by window between a floor and the cap its flag sets, from
// what the window observed — work waiting, and the API server's pushback.
//
// The law is additive increase, multiplicative decrease (AIMD), as TCP's congestion window:
//
//   - a window in which the API server answered 429 (Priority and Fairness rejected a request,
//     or the max-in-flight filter did) halves the limit;
//   - a window whose median request latency is well above the lowest seen (more than Far ×
//     the floor, and more than Slack above it) takes a quarter off it, at least one, but not
//     below Base;
//   - otherwise a window in which requests waited while every worker was busy, and latency
//     stayed near the floor (at most Near × it, or within Slack of it) or was not judged, adds
//     one;
//   - anything else holds it.
//
// Between Near and Far the limit holds: latency is rising, but not yet by enough to give
// workers back. The two signals are not trusted alike: a 429 is the API server's own verdict
// (Priority and Fairness found the process's share of its seats full), latency is an
// inference from a mix of requests on a server other clients load too. So latency alone never
// takes the limit below Base (where the controller started, the fixed count it had before);
// only 429s take it further, down to Min. Several controllers in one process each run the law over their own demand and
// the process's shared pushback: on a 429 each halves, and additive growth from there
// converges on equal shares of what the API server gives the process, as TCP flows do.
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
	// Near and Far are multiples of the latency floor: a window's median at most Near × the
	// floor lets the limit grow, one above Far × the floor shrinks it.
	Near, Far float64
	// Slack is a rise above the floor too small to count, whatever its ratio: a loopback API
	// server answering in 5 ms instead of 2 is not pushing back.
	Slack time.Duration
	// MinSamples is the fewest requests a window's latency is judged on: a quieter window (a
	// leader election renewal, a trickle of events) tells nothing about the API server's load,
	// and must not set the floor either.
	MinSamples int
	// Drift is how slowly the floor follows latencies above it: each judged window moves it
	// 1/Drift of the way up to the window's median. The floor is the lowest median seen, so a
	// quiet moment's would otherwise hold the limit down forever after the API server's normal
	// latency changed (a new node, a different mix of requests).
	Drift int
}

// Defaults are the documented parameters for a cap of max workers, starting from base:
// latency near the floor up to 1.5× (or 5 ms above it), well above it from 2× (and 5 ms),
// judged on 10 requests, the floor following higher latencies by 1/32 a window (half the gap
// in about 22 windows).
func Defaults(max, base int) Params {
	return Params{Min: 1, Max: max, Base: base, Near: 1.5, Far: 2, Slack: 5 * time.Millisecond, MinSamples: 10, Drift: 32}
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
	// Floor is the lowest median latency seen (drifting up, Params.Drift); zero until a
	// window was judged.
	Floor time.Duration
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
	// ratio is the window's median over the floor; 0, which counts as near, when latency was
	// not judged, no floor is known yet, or the rise is within Slack.
	ratio := 0.0
	if judged && s.Floor > 0 && w.Latency-s.Floor > p.Slack {
		ratio = float64(w.Latency) / float64(s.Floor)
	}
	next := State{Limit: limit, Floor: nextFloor(p, s.Floor, w.Latency, judged)}
	switch {
	case w.Throttled > 0:
		next.Limit = bound(p, limit/2)
	case ratio > p.Far && limit > p.Base:
		next.Limit = bound(p, max(min(limit-1, limit*3/4), p.Base))
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

// nextFloor is the floor after a window whose median was latency.
func nextFloor(p Params, floor, latency time.Duration, judged bool) time.Duration {
	switch {
	case !judged:
		return floor
	case floor == 0 || latency < floor:
		return latency
	}
	return floor + (latency-floor)/time.Duration(max(p.Drift, 1))
}

func bound(p Params, n int) int {
	return max(min(n, p.Max), p.Min, 1)
}
