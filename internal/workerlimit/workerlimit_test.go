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
		{"grows by one while work waits and latency is near the floor", State{4, 10 * ms}, waiting(4, 50, 14*ms), State{5, 10*ms + 4*ms/32}, Grew},
		{"grows when latency is not judged (too few requests)", State{4, 10 * ms}, waiting(4, 3, 500*ms), State{5, 10 * ms}, Grew},
		{"grows before any floor is known, which the window sets", State{4, 0}, waiting(4, 50, 12*ms), State{5, 12 * ms}, Grew},
		{"grows while a rise stays within the slack, whatever its ratio", State{6, 1 * ms}, waiting(6, 50, 4*ms), State{7, 1*ms + 3*ms/32}, Grew},
		{"stops at the cap", State{16, 10 * ms}, waiting(16, 50, 10*ms), State{16, 10 * ms}, ""},
		{"does not grow with nothing waiting", State{4, 10 * ms}, Window{Waiting: 0, Busy: 4, Samples: 50, Latency: 10 * ms}, State{4, 10 * ms}, ""},
		{"does not grow while workers are left idle (the limit held nothing back)", State{8, 10 * ms}, Window{Waiting: 3, Busy: 5, Samples: 50, Latency: 10 * ms}, State{8, 10 * ms}, ""},
		{"halves on a 429", State{16, 10 * ms}, Window{Waiting: 10, Busy: 16, Throttled: 1, Samples: 50, Latency: 10 * ms}, State{8, 10 * ms}, Throttled},
		{"halves on a 429 even with nothing waiting", State{9, 10 * ms}, Window{Throttled: 3}, State{4, 10 * ms}, Throttled},
		{"a 429 wins over latency near the floor", State{6, 10 * ms}, Window{Waiting: 1, Busy: 6, Throttled: 1, Samples: 50, Latency: 10 * ms}, State{3, 10 * ms}, Throttled},
		{"a 429 takes it below where it started", State{3, 10 * ms}, Window{Throttled: 1}, State{1, 10 * ms}, Throttled},
		{"never below the floor on a 429", State{1, 10 * ms}, Window{Throttled: 5}, State{1, 10 * ms}, ""},
		{"shrinks by a quarter when latency is well above the floor", State{16, 10 * ms}, waiting(16, 50, 25*ms), State{12, 10*ms + 15*ms/32}, Slow},
		{"shrinks by one at least", State{5, 10 * ms}, waiting(5, 50, 25*ms), State{4, 10*ms + 15*ms/32}, Slow},
		{"latency alone stops where it started", State{4, 10 * ms}, waiting(4, 50, 100*ms), State{4, 10*ms + 90*ms/32}, ""},
		{"latency alone does not lower a limit 429s took below the start", State{2, 10 * ms}, waiting(2, 50, 100*ms), State{2, 10*ms + 90*ms/32}, ""},
		{"holds while latency rises between near and far", State{6, 10 * ms}, waiting(6, 50, 18*ms), State{6, 10*ms + 8*ms/32}, ""},
		{"a rise well above the floor in ratio but within the slack is no pushback", State{8, 1 * ms}, waiting(8, 50, 5*ms), State{9, 1*ms + 4*ms/32}, Grew},
		{"a lower latency lowers the floor", State{6, 10 * ms}, waiting(6, 50, 4*ms), State{7, 4 * ms}, Grew},
		{"a quiet window's latency sets no floor", State{6, 0}, Window{Samples: 2, Latency: 1 * ms}, State{6, 0}, ""},
		{"a limit above a lowered cap comes down to it", State{20, 10 * ms}, Window{}, State{16, 10 * ms}, ""},
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

// A run of windows: the limit grows to the cap under demand, halves on a 429, shrinks while
// latency stays high (down to where it started), falls to the floor under 429s, and recovers,
// one worker a window, once the API server has room again — never leaving [Min, Max].
func TestLimitOverARun(t *testing.T) {
	p := Defaults(16, 4)
	s := Start(p, 4)
	run := func(n int, w func(limit int) Window) {
		for range n {
			s, _ = Next(p, s, w(s.Limit))
			if s.Limit < p.Min || s.Limit > p.Max {
				t.Fatalf("limit %d out of [%d, %d]", s.Limit, p.Min, p.Max)
			}
		}
	}
	steady := func(limit int) Window { return waiting(limit, 100, 10*ms) }
	run(30, steady)
	if s.Limit != 16 {
		t.Fatalf("after 30 windows of demand: limit %d, want the cap 16", s.Limit)
	}
	run(1, func(limit int) Window { w := steady(limit); w.Throttled = 2; return w })
	if s.Limit != 8 {
		t.Fatalf("after a 429: limit %d, want 8", s.Limit)
	}
	run(10, func(limit int) Window { return waiting(limit, 100, 40*ms) })
	if s.Limit != 4 {
		t.Fatalf("after ten slow windows: limit %d, want the start 4", s.Limit)
	}
	run(2, func(limit int) Window { w := steady(limit); w.Throttled = 1; return w })
	if s.Limit != 1 {
		t.Fatalf("after two windows of 429s: limit %d, want the floor 1", s.Limit)
	}
	run(5, steady)
	if s.Limit != 6 {
		t.Fatalf("after five good windows: limit %d, want 6 (one a window)", s.Limit)
	}
	run(20, steady)
	if s.Limit != 16 {
		t.Fatalf("recovered to %d, want the cap 16", s.Limit)
	}
}

// A floor from a quiet moment is forgotten: latency that stays at 3× the floor first shrinks
// the limit, then, as the floor follows it, stops doing so and lets it grow again.
func TestTheFloorFollowsALastingChange(t *testing.T) {
	p := Defaults(16, 4)
	s := State{Limit: 8, Floor: 5 * ms}
	grew := false
	for range 400 {
		var reason Reason
		s, reason = Next(p, s, waiting(s.Limit, 100, 15*ms))
		grew = grew || reason == Grew
	}
	if !grew || s.Limit != 16 {
		t.Fatalf("limit %d (grew %v), floor %v: want growth to the cap once the floor followed", s.Limit, grew, s.Floor)
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
