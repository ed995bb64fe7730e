package bench

import (
	"math"
	"math/bits"
	"testing"
	"time"
)

// latencies is a histogram of call durations, one per calling goroutine,
// merged when the benchmark ends. Recording a call is two array
// operations, so measuring every call of a row costs the timed path no
// allocation and a few ns besides the two time.Now calls.
//
// Buckets are log-linear: durations below 64 ns are exact, longer ones fall
// into one of 64 equal buckets per power of two, so a reported percentile
// (a bucket's midpoint) is within 1/128 (0.8%) of a recorded duration.
// Durations of 2^36 ns (about 69 s) and more land in the last bucket.
type latencies struct {
	counts [latencyBuckets]uint64
	n      uint64
}

const (
	subBits        = 6
	subBuckets     = 1 << subBits // per power of two
	maxLatencyBits = 36
	latencyBuckets = (maxLatencyBits - subBits + 1) * subBuckets
)

// bucketOf returns the bucket of a duration of ns nanoseconds.
func bucketOf(ns uint64) int {
	if ns < subBuckets {
		return int(ns)
	}
	shift := bits.Len64(ns) - subBits - 1 // ns>>shift is in [64, 128)
	b := (shift+1)*subBuckets + int(ns>>shift) - subBuckets
	return min(b, latencyBuckets-1)
}

// bucketMid returns the middle of bucket b's range, in ns.
func bucketMid(b int) float64 {
	if b < subBuckets {
		return float64(b)
	}
	shift := b/subBuckets - 1
	lo := uint64(b%subBuckets+subBuckets) << shift
	return float64(lo) + float64(uint64(1)<<shift)/2
}

func (l *latencies) record(d time.Duration) {
	l.counts[bucketOf(uint64(max(d, 0)))]++
	l.n++
}

func (l *latencies) merge(o *latencies) {
	for i, c := range o.counts {
		l.counts[i] += c
	}
	l.n += o.n
}

// quantile returns the duration (ns) that q of the recorded calls did not
// exceed: the bucket holding the ceil(q*n)-th smallest call.
func (l *latencies) quantile(q float64) float64 {
	if l.n == 0 {
		return math.NaN()
	}
	rank := uint64(math.Ceil(q * float64(l.n)))
	rank = min(max(rank, 1), l.n)
	seen := uint64(0)
	for b, c := range l.counts {
		seen += c
		if seen >= rank {
			return bucketMid(b)
		}
	}
	return bucketMid(latencyBuckets - 1)
}

// report adds the row's p50 and p99 in µs to the benchmark's metrics.
func (l *latencies) report(b *testing.B) {
	b.ReportMetric(l.quantile(0.50)/1e3, "p50-µs")
	b.ReportMetric(l.quantile(0.99)/1e3, "p99-µs")
}

func TestLatencyBuckets(t *testing.T) {
	// Every duration falls into a bucket whose midpoint is within 1/128 of
	// it, and buckets grow with the duration.
	prev := -1
	for _, ns := range []uint64{0, 1, 63, 64, 65, 127, 128, 129, 255, 256, 1000, 12345, 1e6, 999_999_999, 1 << 35, 1<<36 - 1} {
		b := bucketOf(ns)
		if b < prev {
			t.Fatalf("bucketOf(%d) = %d < bucketOf of a shorter duration (%d)", ns, b, prev)
		}
		prev = b
		if mid := bucketMid(b); math.Abs(mid-float64(ns)) > float64(ns)/128+0.5 {
			t.Errorf("bucketOf(%d) = %d with midpoint %v, more than 1/128 away", ns, b, mid)
		}
	}
	if b := bucketOf(math.MaxUint64); b != latencyBuckets-1 {
		t.Errorf("bucketOf(MaxUint64) = %d, want the last bucket %d", b, latencyBuckets-1)
	}
}

func TestLatencyQuantiles(t *testing.T) {
	var a, b latencies
	// 1..1000 µs, split over two goroutines' histograms.
	for i := 1; i <= 1000; i++ {
		h := &a
		if i%2 == 0 {
			h = &b
		}
		h.record(time.Duration(i) * time.Microsecond)
	}
	a.merge(&b)
	for _, c := range []struct{ q, want float64 }{{0.5, 500e3}, {0.99, 990e3}, {1, 1000e3}, {0, 1e3}} {
		got := a.quantile(c.q)
		if math.Abs(got-c.want) > c.want/128 {
			t.Errorf("quantile(%v) = %v ns, want %v within 1/128", c.q, got, c.want)
		}
	}
	var empty latencies
	if !math.IsNaN(empty.quantile(0.5)) {
		t.Error("quantile of no calls is not NaN")
	}
}
