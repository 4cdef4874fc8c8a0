package workerlimit

import (
	"testing"
	"time"
)

const ms = time.Millisecond

// waiting is a window in which requests waited while every one of limit workers was busy, and
// n requests were answered in a median of latency.
func waiting(limit, n int, latency time.Duration) Window {
	return Window{Waiting: 10, Busy: limit, Samples: n, Latency: latency}
}

func TestNext(t *testing.T) {
	p := Defaults(16, 4)
	for _, tc := range []struct {
		name   string
		state  State
		window Window
		want   State
		reason Reason
	}{
		{"grows by one while work waits and latency is near the reference", State{4, 10 * ms, 4}, waiting(4, 50, 14*ms), State{5, 11 * ms, 4}, Grew},
		{"grows when latency is not judged (too few requests)", State{4, 10 * ms, 4}, waiting(4, 3, 500*ms), State{5, 10 * ms, 4}, Grew},
		{"grows before any reference is known, which the window sets", State{4, 0, 0}, waiting(4, 50, 12*ms), State{5, 12 * ms, 4}, Grew},
		{"grows while a rise stays within the slack, whatever its ratio", State{6, 1 * ms, 5}, waiting(6, 50, 4*ms), State{7, 1*ms + 3*ms/4, 6}, Grew},
		{"stops at the cap", State{16, 10 * ms, 16}, waiting(16, 50, 10*ms), State{16, 10 * ms, 16}, ""},
		{"does not grow with nothing waiting", State{4, 10 * ms, 4}, Window{Waiting: 0, Busy: 4, Samples: 50, Latency: 10 * ms}, State{4, 10 * ms, 4}, ""},
		{"does not grow while workers are left idle (the limit held nothing back)", State{8, 10 * ms, 8}, Window{Waiting: 3, Busy: 5, Samples: 50, Latency: 10 * ms}, State{8, 10 * ms, 8}, ""},
		{"halves on a 429", State{16, 10 * ms, 16}, Window{Waiting: 10, Busy: 16, Throttled: 1, Samples: 50, Latency: 10 * ms}, State{8, 10 * ms, 8}, Throttled},
		{"halves on a 429 even with nothing waiting", State{9, 10 * ms, 9}, Window{Throttled: 3}, State{4, 10 * ms, 4}, Throttled},
		{"a 429 wins over latency near the reference", State{6, 10 * ms, 5}, Window{Waiting: 1, Busy: 6, Throttled: 1, Samples: 50, Latency: 10 * ms}, State{3, 10 * ms, 3}, Throttled},
		{"a 429 takes it below where it started", State{3, 10 * ms, 3}, Window{Throttled: 1}, State{1, 10 * ms, 1}, Throttled},
		{"never below the floor on a 429", State{1, 10 * ms, 1}, Window{Throttled: 5}, State{1, 10 * ms, 1}, ""},
		{"latency that doubled as the limit grew takes the growth back", State{16, 10 * ms, 12}, waiting(16, 50, 26*ms), State{12, 14 * ms, 12}, Slow},
		{"a quarter at most", State{16, 10 * ms, 4}, waiting(16, 50, 26*ms), State{12, 14 * ms, 4}, Slow},
		{"one at least", State{5, 10 * ms, 4}, waiting(5, 50, 26*ms), State{4, 14 * ms, 4}, Slow},
		{"latency that doubled at a limit where it was near is the cluster's: held", State{8, 10 * ms, 8}, waiting(8, 50, 26*ms), State{8, 14 * ms, 8}, ""},
		{"latency alone stops where it started", State{4, 10 * ms, 0}, waiting(4, 50, 100*ms), State{4, 10*ms + 90*ms/4, 0}, ""},
		{"latency alone does not lower a limit 429s took below the start", State{2, 10 * ms, 2}, waiting(2, 50, 100*ms), State{2, 10*ms + 90*ms/4, 2}, ""},
		{"holds while latency rises between near and far", State{6, 10 * ms, 5}, waiting(6, 50, 18*ms), State{6, 12 * ms, 5}, ""},
		{"a rise well above the reference in ratio but within the slack is no pushback", State{8, 1 * ms, 8}, waiting(8, 50, 5*ms), State{9, 2 * ms, 8}, Grew},
		{"a lower latency moves the reference down", State{6, 10 * ms, 6}, waiting(6, 50, 2*ms), State{7, 8 * ms, 6}, Grew},
		{"a quiet window's latency moves no reference", State{6, 0, 0}, Window{Samples: 2, Latency: 1 * ms}, State{6, 0, 0}, ""},
		{"a limit above a lowered cap comes down to it", State{20, 10 * ms, 20}, Window{}, State{16, 10 * ms, 20}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := Next(p, tc.state, tc.window)
			if got != tc.want || reason != tc.reason {
				t.Fatalf("Next(%+v, %+v) = %+v, %q; want %+v, %q", tc.state, tc.window, got, reason, tc.want, tc.reason)
			}
		})
	}
}

func TestStartWithinBounds(t *testing.T) {
	p := Defaults(16, 4)
	for start, want := range map[int]int{0: 1, 4: 4, 16: 16, 40: 16} {
		if got := Start(p, start).Limit; got != want {
			t.Errorf("Start(%d) = %d, want %d", start, got, want)
		}
	}
	if got := Start(Params{Min: 2, Max: 2}, 8).Limit; got != 2 {
		t.Errorf("pinned: Start = %d, want 2", got)
	}
}

// run steps the law over n windows, each made by w from the limit, and checks the bounds.
func run(t *testing.T, p Params, s *State, n int, w func(limit int) Window) {
	t.Helper()
	for range n {
		*s, _ = Next(p, *s, w(s.Limit))
		if s.Limit < p.Min || s.Limit > p.Max {
			t.Fatalf("limit %d out of [%d, %d]", s.Limit, p.Min, p.Max)
		}
	}
}

// A run of windows: the limit grows to the cap under demand, halves on a 429, gives back what
// it grew by when latency doubles right after, holds while the cluster's latency stays high,
// falls to the floor under 429s, and recovers, one worker a window, once the API server has
// room again — never leaving [Min, Max].
func TestLimitOverARun(t *testing.T) {
	p := Defaults(16, 4)
	s := Start(p, 4)
	steady := func(limit int) Window { return waiting(limit, 100, 10*ms) }
	run(t, p, &s, 30, steady)
	if s.Limit != 16 {
		t.Fatalf("after 30 windows of demand: limit %d, want the cap 16", s.Limit)
	}
	run(t, p, &s, 1, func(limit int) Window { w := steady(limit); w.Throttled = 2; return w })
	if s.Limit != 8 {
		t.Fatalf("after a 429: limit %d, want 8", s.Limit)
	}
	run(t, p, &s, 3, steady)
	if s.Limit != 11 {
		t.Fatalf("after three good windows: limit %d, want 11", s.Limit)
	}
	run(t, p, &s, 1, func(limit int) Window { return waiting(limit, 100, 40*ms) })
	if s.Limit != 10 {
		t.Fatalf("latency doubled right after growing to 11: limit %d, want 10 (where it was near)", s.Limit)
	}
	run(t, p, &s, 2, func(limit int) Window { return waiting(limit, 100, 40*ms) })
	if s.Limit != 10 {
		t.Fatalf("latency still high at a limit where it was near: limit %d, want it held at 10", s.Limit)
	}
	run(t, p, &s, 2, func(limit int) Window { w := steady(limit); w.Throttled = 1; return w })
	if s.Limit != 2 {
		t.Fatalf("after two windows of 429s: limit %d, want 2", s.Limit)
	}
	run(t, p, &s, 1, func(limit int) Window { w := steady(limit); w.Throttled = 1; return w })
	if s.Limit != 1 {
		t.Fatalf("after three windows of 429s: limit %d, want the floor 1", s.Limit)
	}
	run(t, p, &s, 30, steady)
	if s.Limit != 16 {
		t.Fatalf("recovered to %d, want the cap 16", s.Limit)
	}
}

// The cluster's own work raises the API server's latency while the queue is deep (at N=200
// the volume binder, the scheduler and kwok with the controllers). A latency that rises by a
// millisecond every window, from 5 to 40 ms, is learned as it comes: the limit grows from its
// start to the cap. A baseline that only drifts up slowly (the lowest median seen, up by 1/32
// a window) would hold it at its start.
func TestADeepQueueGrowsThroughTheClustersRisingLatency(t *testing.T) {
	p := Defaults(16, 4)
	s := Start(p, 4)
	latency := 5 * ms
	for range 36 {
		s, _ = Next(p, s, waiting(s.Limit, 100, latency))
		latency += ms
	}
	if s.Limit != 16 {
		t.Fatalf("limit %d, reference %v after latency rose to %v: want the cap 16", s.Limit, s.Reference, latency)
	}
}

// A reference from a quiet moment is forgotten: latency that stays at 3× it first takes back
// what the limit grew by, then, as the reference follows, lets it grow again to the cap.
func TestTheReferenceFollowsALastingChange(t *testing.T) {
	p := Defaults(16, 4)
	s := State{Limit: 8, Reference: 5 * ms, At: 6}
	var reasons []Reason
	for range 40 {
		var reason Reason
		s, reason = Next(p, s, waiting(s.Limit, 100, 15*ms))
		reasons = append(reasons, reason)
	}
	if reasons[0] != Slow || s.Limit != 16 {
		t.Fatalf("limit %d (reasons %v), reference %v: want the growth taken back first, then growth to the cap", s.Limit, reasons, s.Reference)
	}
}

func TestMedian(t *testing.T) {
	var before, after [Buckets]uint64
	if d, n := Median(&before, &after); d != 0 || n != 0 {
		t.Fatalf("no requests: %v, %d", d, n)
	}
	before[Bucket(1*ms)] = 7 // earlier windows
	after[Bucket(1*ms)] = 7 + 1
	after[Bucket(10*ms)] = 3
	after[Bucket(time.Minute)] = 1
	d, n := Median(&before, &after)
	if n != 5 || d < 10*ms || d > 11*ms {
		t.Fatalf("median %v of %d, want about 10ms of 5", d, n)
	}
	for _, d := range []time.Duration{0, 100 * time.Microsecond, 250 * time.Microsecond, 3 * ms, 777 * ms, time.Hour} {
		if i := Bucket(d); d > UpperBound(i) && i != Buckets-1 || i > 0 && d <= UpperBound(i-1) {
			t.Errorf("%v in bucket %d (%v, %v]", d, i, UpperBound(i-1), UpperBound(i))
		}
	}
}
