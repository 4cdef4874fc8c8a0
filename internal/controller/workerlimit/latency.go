package workerlimit

import (
	"math"
	"time"
)

// Latencies are counted in Buckets buckets of growing width: bucket 0 holds what took at most
// 250 µs, bucket i what took at most 250 µs × 2^(i/8) (9 % wider than the one before), the last
// everything longer (about 32 s and up). A window's median is read from two cumulative
// counts, so any number of windows can be read from one histogram that only ever grows.
const Buckets = 8*17 + 1

const firstBound = 250 * time.Microsecond

// Bucket is the bucket a request that took d is counted in.
func Bucket(d time.Duration) int {
	if d <= firstBound {
		return 0
	}
	i := int(math.Ceil(8 * math.Log2(float64(d)/float64(firstBound))))
	return min(i, Buckets-1)
}

// UpperBound is the longest latency bucket i counts.
func UpperBound(i int) time.Duration {
	return time.Duration(float64(firstBound) * math.Exp2(float64(i)/8))
}

// Median is the median of the requests counted between two readings of the same cumulative
// histogram, before and after, as its bucket's upper bound, and how many there were.
func Median(before, after *[Buckets]uint64) (time.Duration, int) {
	var counts [Buckets]uint64
	total := uint64(0)
	for i := range counts {
		counts[i] = after[i] - before[i]
		total += counts[i]
	}
	if total == 0 {
		return 0, 0
	}
	seen := uint64(0)
	for i, n := range counts {
		seen += n
		if 2*seen >= total {
			return UpperBound(i), int(total)
		}
	}
	return UpperBound(Buckets - 1), int(total)
}
