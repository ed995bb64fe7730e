package redislimit

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// The fault suite's checks (failoversuite_test.go) read only what callers
// saw: an admission is known by when its Decide was invoked and when it
// returned, on the app's clock, which is Redis's too (one machine). The
// decision happened somewhere in that interval, so a span that holds an
// admission's whole interval holds its decision, and counting only such
// admissions can undercount a span but never overcount it: none of the
// checks can report a violation a correct limiter did not commit.

// failoverAdmission is one call a caller was told was admitted.
type failoverAdmission struct {
	ID       int64  `json:"id"`
	Limit    int    `json:"l"` // index into the suite's limits
	Key      string `json:"k"`
	Invoke   int64  `json:"a"` // UnixNano before Decide
	Complete int64  `json:"c"` // UnixNano after it returned
}

// byInvoke returns adms sorted by invoke time.
func byInvoke(adms []failoverAdmission) []failoverAdmission {
	out := slices.Clone(adms)
	slices.SortFunc(out, func(a, b failoverAdmission) int { return int(a.Invoke - b.Invoke) })
	return out
}

// storeTick is the resolution of the limiter's clock (Redis TIME, in
// µs): two decisions less than a window apart on the app's clock can be a
// whole window apart once their times are truncated to it, so the checks
// give every span that much slack.
const storeTick = int64(time.Microsecond)

// spanCount returns the most admissions of one key whose whole interval
// lies inside one span [s, s+window-storeTick), in which a sliding window
// sees them all at once. A span holding the most can start at an
// admission's invoke time (move its start right until it does), so those
// are the only starts tried.
func spanCount(adms []failoverAdmission, window int64) int {
	sorted := byInvoke(adms)
	best := 0
	for i, first := range sorted {
		end, n := first.Invoke+window-storeTick, 0
		for _, a := range sorted[i:] {
			if a.Invoke >= end {
				break
			}
			if a.Complete < end {
				n++
			}
		}
		best = max(best, n)
	}
	return best
}

// fixedWindowCount returns the most admissions of one key whose whole
// interval lies inside one epoch-aligned window [k·window, (k+1)·window).
// An admission that straddles a boundary is counted in none, as its window
// is not known.
func fixedWindowCount(adms []failoverAdmission, window int64) int {
	counts := map[int64]int{}
	best := 0
	for _, a := range adms {
		k := floorDiv(a.Invoke, window)
		if floorDiv(a.Complete, window) != k {
			continue
		}
		counts[k]++
		best = max(best, counts[k])
	}
	return best
}

// bucketExcess returns by how much one key's admissions exceed a bucket's
// bound, Burst + rate·t for any span of length t, at worst: the most, over
// spans [s, e], of the admissions whose interval lies inside minus the
// bound rounded down; 0 when none does. Spans from an invoke time to a
// complete time are enough: any other span can shrink to one of those,
// holding the same admissions and a lower bound. Each span is given
// storeTick more in the bound.
func bucketExcess(adms []failoverAdmission, burst int, perNano float64) int {
	sorted := byInvoke(adms)
	worst := 0
	ends := make([]int64, 0, len(sorted))
	for i, first := range sorted {
		ends = ends[:0]
		for _, a := range sorted[i:] {
			ends = append(ends, a.Complete)
		}
		slices.Sort(ends)
		for k, e := range ends {
			// The k+1 admissions completed by e were all invoked at or
			// after first's invoke.
			bound := float64(burst) + perNano*float64(e-first.Invoke+storeTick)
			worst = max(worst, k+1-int(math.Floor(bound)))
		}
	}
	return worst
}

// overAdmissions returns by how much one key's admissions under l exceed
// what l allows in any span the checks can see, or 0.
func overAdmissions(l runtime.Limit, adms []failoverAdmission) int {
	w := l.Window.Nanoseconds()
	switch algorithmOf(l) {
	case runtime.FixedWindow:
		return max(0, fixedWindowCount(adms, w)-l.Max)
	case runtime.TokenBucket, runtime.GCRA:
		return bucketExcess(adms, int(burstOf(l)), float64(l.Max)/float64(w))
	default: // SlidingLog, and SlidingWindow, which never admits more
		return max(0, spanCount(adms, w)-l.Max)
	}
}

// lostAdmissions returns how many of one key's admissions under l the
// state a Peek read does not account for: remaining is what it reported,
// peekInvoke and peekComplete when it was invoked and returned. Counted
// are admissions that completed before the Peek and must still weigh on
// it. For the window algorithms those invoked inside the window the Peek
// read (after peekComplete−Window, or from the start of peekComplete's
// fixed window): Max−remaining must be at least their number, up to Max.
// For the buckets, every admission invoked at or after the first one s: the
// level can have refilled by at most rate·(peekComplete−s) since, so
// Burst−remaining must be at least their number less that.
func lostAdmissions(l runtime.Limit, adms []failoverAdmission, remaining int, peekInvoke, peekComplete int64) int {
	w := l.Window.Nanoseconds()
	var from int64
	switch algorithmOf(l) {
	case runtime.FixedWindow:
		from = floorDiv(peekComplete, w) * w
	case runtime.TokenBucket, runtime.GCRA:
		n, first := 0, int64(math.MaxInt64)
		for _, a := range adms {
			if a.Complete <= peekInvoke {
				n++
				first = min(first, a.Invoke)
			}
		}
		if n == 0 {
			return 0
		}
		refill := float64(l.Max) / float64(w) * float64(peekComplete-first+storeTick)
		return max(0, n-(int(burstOf(l))-remaining)-int(math.Ceil(refill)))
	default:
		from = peekComplete - w + storeTick
	}
	n := 0
	for _, a := range adms {
		if a.Invoke >= from && a.Complete <= peekInvoke {
			n++
		}
	}
	return max(0, min(n, l.Max)-(l.Max-remaining))
}

// adm builds an admission of key k for the checks' tests, invoked at a and
// completed at c seconds.
func adm(k string, a, c float64) failoverAdmission {
	return failoverAdmission{Key: k, Invoke: int64(a * 1e9), Complete: int64(c * 1e9)}
}

// times builds n admissions invoked at a and completed at c seconds.
func times(n int, a, c float64) []failoverAdmission {
	out := make([]failoverAdmission, n)
	for i := range out {
		out[i] = adm("k", a, c)
	}
	return out
}

func TestFailoverChecks(t *testing.T) {
	limit := func(alg runtime.Algorithm) runtime.Limit {
		return runtime.Limit{Name: "t", Window: 10 * time.Second, Max: 3, Algorithm: alg}
	}
	cat := func(parts ...[]failoverAdmission) []failoverAdmission { return slices.Concat(parts...) }
	cases := []struct {
		name string
		alg  runtime.Algorithm
		adms []failoverAdmission
		over int
	}{
		{"log: Max in a window", runtime.SlidingLog, times(3, 1, 1.1), 0},
		{"log: Max again a window later", runtime.SlidingLog, cat(times(3, 1, 1.1), times(3, 11.2, 11.3)), 0},
		{"log: Max again exactly a window later", runtime.SlidingLog, cat(times(3, 1, 1), times(3, 11, 11)), 0},
		{"log: Max again a tick less than a window later", runtime.SlidingLog, cat(times(3, 1, 1), times(3, 10.999999, 10.999999)), 0},
		{"log: two more inside one window", runtime.SlidingLog, cat(times(3, 1, 1.1), times(2, 10.5, 10.6)), 2},
		{"log: the interval sticks out of the window, so it is not counted", runtime.SlidingLog, cat(times(3, 1, 1.1), times(2, 2, 11.5)), 0},
		{"sliding window: as the log", runtime.SlidingWindow, cat(times(3, 0, 0.1), times(1, 9, 9.1)), 1},
		{"fixed: Max on each side of a boundary", runtime.FixedWindow, cat(times(3, 9, 9.1), times(3, 10, 10.1)), 0},
		{"fixed: one window over", runtime.FixedWindow, cat(times(3, 10, 10.1), times(1, 19, 19.9)), 1},
		{"fixed: straddling the boundary counts nowhere", runtime.FixedWindow, cat(times(3, 10, 10.1), times(1, 19.9, 20.1)), 0},
		{"bucket: burst, then the rate", runtime.TokenBucket, cat(times(3, 0, 0.01), times(1, 3.4, 3.5), times(1, 6.7, 6.8)), 0},
		{"bucket: a second burst", runtime.TokenBucket, cat(times(3, 0, 0.01), times(3, 5, 5.01)), 2},
		{"gcra: the burst again at once", runtime.GCRA, cat(times(3, 0, 0.01), times(3, 0.02, 0.03)), 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.over, overAdmissions(limit(c.alg), c.adms))
		})
	}

	lost := []struct {
		name      string
		alg       runtime.Algorithm
		adms      []failoverAdmission
		remaining int
		lost      int
	}{
		{"log: all counted", runtime.SlidingLog, times(3, 5, 5.1), 0, 0},
		{"log: forgotten", runtime.SlidingLog, times(3, 5, 5.1), 3, 3},
		{"log: over-admitted, the count is capped at Max", runtime.SlidingLog, times(5, 5, 5.1), 0, 0},
		{"log: out of the window by now", runtime.SlidingLog, times(3, 0.5, 0.6), 3, 0},
		{"log: leaving the window as the Peek runs", runtime.SlidingLog, times(3, 1.1, 1.1), 3, 0},
		{"fixed: forgotten in the current window", runtime.FixedWindow, times(2, 10.5, 10.6), 3, 2},
		{"fixed: from the last window", runtime.FixedWindow, times(2, 9.5, 9.6), 3, 0},
		{"bucket: all counted", runtime.TokenBucket, times(3, 10, 10.1), 0, 0},
		{"bucket: forgotten", runtime.TokenBucket, times(3, 10, 10.1), 3, 2},
		{"gcra: forgotten, less what may have refilled", runtime.GCRA, times(3, 8, 8.1), 3, 2},
	}
	for _, c := range lost {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.lost, lostAdmissions(limit(c.alg), c.adms, c.remaining, 11e9, 11.1e9))
		})
	}
}
