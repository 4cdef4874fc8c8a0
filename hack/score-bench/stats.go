package main

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// percentile returns the p-th percentile (0 < p ≤ 100) of ds by the nearest-rank method, or
// 0 for none.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// mixEntry is one kind of Workload and its share of the mix.
type mixEntry struct {
	Kind   string
	Weight float64
}

// The kinds of Workload the benchmark creates.
const (
	kindPostgres = "postgres" // one container, one port, a postgres dependency
	kindNone     = "none"     // one container, one port
	kindThree    = "three"    // one container, one port, postgres, redis and dns
	kindBatch    = "batch"    // a batch job
)

// parseMix reads "postgres", or weighted kinds "postgres=3,none=1".
func parseMix(s string) ([]mixEntry, error) {
	var out []mixEntry
	for _, part := range strings.Split(s, ",") {
		kind, weight, hasWeight := strings.Cut(strings.TrimSpace(part), "=")
		w := 1.0
		if hasWeight {
			var err error
			if w, err = strconv.ParseFloat(weight, 64); err != nil || w <= 0 {
				return nil, fmt.Errorf("mix %q: the weight of %s must be a positive number", s, kind)
			}
		}
		switch kind {
		case kindPostgres, kindNone, kindThree, kindBatch:
		default:
			return nil, fmt.Errorf("mix %q: unknown kind %q (postgres, none, three, batch)", s, kind)
		}
		out = append(out, mixEntry{Kind: kind, Weight: w})
	}
	return out, nil
}

// assign spreads n Workloads over the mix, deterministically and evenly interleaved: the
// i-th Workload takes the kind that is furthest behind its share.
func assign(mix []mixEntry, n int) []string {
	total := 0.0
	for _, m := range mix {
		total += m.Weight
	}
	counts := make([]int, len(mix))
	out := make([]string, n)
	for i := range out {
		best, bestLag := 0, math.Inf(-1)
		for j, m := range mix {
			lag := m.Weight/total*float64(i+1) - float64(counts[j])
			if lag > bestLag+1e-9 {
				best, bestLag = j, lag
			}
		}
		counts[best]++
		out[i] = mix[best].Kind
	}
	return out
}
