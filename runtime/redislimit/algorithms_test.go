package redislimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// This file checks each Algorithm against what algorithm.go documents for
// it, on both backends: hand-computed decisions on a fake clock, long
// random walks compared decision by decision with reference models written
// from the documentation alone, the bound each algorithm promises checked
// by brute force over the admissions the walk recorded, and the same bounds
// under concurrency on Redis's own clock.

// refAdmission is one admitted call as its caller saw it: the time it was
// decided (µs) and its cost.
type refAdmission struct{ at, cost int64 }

// refModel is an independent reading of one Algorithm's documentation, for
// a clock that never goes backwards. decide returns the Decision the
// documentation implies and records the call when it is admitted. It shares
// no code with the backends: a disagreement means that the code or this
// reading of the documentation is wrong.
type refModel interface {
	decide(now, cost int64) runtime.Decision
}

type refParams struct{ w, max, burst int64 }

func newRefModel(l runtime.Limit) refModel {
	p := refParams{w: l.Window.Microseconds(), max: int64(l.Max), burst: int64(l.Burst)}
	if p.burst == 0 {
		p.burst = p.max
	}
	switch l.Algorithm {
	case runtime.SlidingLog, "":
		return &refLog{p: p}
	case runtime.SlidingWindow:
		return &refBuckets{p: p, counts: map[int64]int64{}}
	case runtime.FixedWindow:
		return &refFixed{p: p, counts: map[int64]int64{}}
	case runtime.TokenBucket:
		return &refTokens{p: p}
	case runtime.GCRA:
		return &refGCRA{p: p}
	}
	panic("no reference model for " + string(l.Algorithm))
}

func refCeil(a, b int64) int64 { return (a + b - 1) / b } // a >= 0, b > 0

// refLog: one entry per admitted unit; a call of cost n is admitted if at
// most Max-n units lie in (now-W, now]. The units of one call share its
// time, later than every unit before it (the package doc).
type refLog struct {
	p     refParams
	units []int64
}

func (m *refLog) decide(now, cost int64) runtime.Decision {
	// The units are in time order: those that stopped counting come first.
	stale := 0
	for stale < len(m.units) && m.units[stale] <= now-m.p.w {
		stale++
	}
	live := m.units[stale:]
	count := int64(len(live))
	d := runtime.Decision{Remaining: int(max(0, m.p.max-count))}
	if count > 0 {
		d.ResetAfter = us(live[count-1] + m.p.w - now)
	}
	if count+cost > m.p.max {
		m.units = live
		d.RetryAfter = us(live[count+cost-m.p.max-1] + m.p.w - now)
		return d
	}
	t := now
	if count > 0 && live[count-1] >= t {
		t = live[count-1] + 1
	}
	// As documented for runtime.SlidingLog: an admission in the quarter
	// window of the newest unit keeps up to three units that stopped
	// counting, while one still counts and the log has room for them, up
	// to 128 units.
	q := max(1, m.p.w/4)
	quarter := func(x int64) int64 { return x - (x%q+q)%q }
	if count == 0 || stale > 3 || int64(len(m.units))+cost > min(m.p.max, 128) ||
		quarter(m.units[len(m.units)-1]) != quarter(t) {
		m.units = live
	}
	for range cost {
		m.units = append(m.units, t)
	}
	return runtime.Decision{Allowed: true, Remaining: int(m.p.max - count - cost), ResetAfter: us(t + m.p.w - now)}
}

// refBuckets: buckets of b = ceil(W/10) µs aligned to the epoch; the
// current bucket and the 10 before it count. Bucket j counts while the
// current index is at most j+10, i.e. until (j+11)*b.
type refBuckets struct {
	p      refParams
	counts map[int64]int64
}

func (m *refBuckets) decide(now, cost int64) runtime.Decision {
	b := refCeil(m.p.w, 10)
	cur := now / b
	var count int64
	newest := int64(-1)
	for j := cur - 10; j <= cur; j++ {
		if m.counts[j] > 0 {
			count += m.counts[j]
			newest = j
		}
	}
	d := runtime.Decision{Remaining: int(max(0, m.p.max-count))}
	if newest >= 0 {
		d.ResetAfter = us((newest+11)*b - now)
	}
	if count+cost > m.p.max {
		left := count
		for j := cur - 10; j <= cur; j++ {
			left -= m.counts[j]
			if left+cost <= m.p.max {
				d.RetryAfter = us((j+11)*b - now)
				break
			}
		}
		return d
	}
	m.counts[cur] += cost
	return runtime.Decision{Allowed: true, Remaining: int(m.p.max - count - cost), ResetAfter: us((cur+11)*b - now)}
}

// refFixed: windows [k*W, (k+1)*W) aligned to the epoch.
type refFixed struct {
	p      refParams
	counts map[int64]int64
}

func (m *refFixed) decide(now, cost int64) runtime.Decision {
	k := now / m.p.w
	ends := (k+1)*m.p.w - now
	count := m.counts[k]
	d := runtime.Decision{Remaining: int(max(0, m.p.max-count))}
	if count > 0 {
		d.ResetAfter = us(ends)
	}
	if count+cost > m.p.max {
		d.RetryAfter = us(ends)
		return d
	}
	m.counts[k] += cost
	return runtime.Decision{Allowed: true, Remaining: int(m.p.max - count - cost), ResetAfter: us(ends)}
}

// refTokens: a bucket of Burst tokens, full at first, refilled at Max per
// W. Counted exactly in 1/W token: a token is W units, the bucket holds
// Burst*W and gains Max per µs.
type refTokens struct {
	p       refParams
	level   int64
	last    int64
	started bool
}

func (m *refTokens) decide(now, cost int64) runtime.Decision {
	full := m.p.burst * m.p.w
	switch {
	case !m.started:
		m.level, m.started = full, true
	case now-m.last >= refCeil(full-m.level, m.p.max):
		m.level = full
	default:
		m.level += (now - m.last) * m.p.max
	}
	m.last = now
	need := cost * m.p.w
	if m.level < need {
		return runtime.Decision{Remaining: int(m.level / m.p.w), RetryAfter: us(refCeil(need-m.level, m.p.max)),
			ResetAfter: us(refCeil(full-m.level, m.p.max))}
	}
	m.level -= need
	return runtime.Decision{Allowed: true, Remaining: int(m.level / m.p.w), ResetAfter: us(refCeil(full-m.level, m.p.max))}
}

// refGCRA: emission interval T = ceil(W/Max), tolerance Burst*T; a call of
// cost n is admitted if max(TAT, now) + n*T - now <= Burst*T.
type refGCRA struct {
	p   refParams
	tat int64
}

func (m *refGCRA) decide(now, cost int64) runtime.Decision {
	T := refCeil(m.p.w, m.p.max)
	tau := m.p.burst * T
	base := max(m.tat, now)
	next := base + cost*T
	if next-now > tau {
		return runtime.Decision{Remaining: int((tau - (base - now)) / T), RetryAfter: us(next - tau - now), ResetAfter: us(base - now)}
	}
	m.tat = next
	return runtime.Decision{Allowed: true, Remaining: int((tau - (next - now)) / T), ResetAfter: us(next - now)}
}

// refViolation checks, by brute force over the admissions (any order), the
// bound l's Algorithm promises, and describes the first breach, or returns
// "". It does not use the reference models.
func refViolation(l runtime.Limit, adm []refAdmission) string {
	if len(adm) == 0 {
		return ""
	}
	adm = slices.Clone(adm)
	slices.SortStableFunc(adm, func(a, b refAdmission) int { return int(a.at - b.at) })
	w, maxN := l.Window.Microseconds(), int64(l.Max)
	burst := burstOf(l)
	// windowed reports the first window (end-length, end] ending at an
	// admission that holds more than maxN units.
	windowed := func(length int64, what string) string {
		var sum int64
		lo := 0
		for hi, a := range adm {
			sum += a.cost
			for adm[lo].at <= a.at-length {
				sum -= adm[lo].cost
				lo++
			}
			if hi+1 < len(adm) && adm[hi+1].at == a.at {
				continue // end the window after every admission at this instant
			}
			if sum > maxN {
				return fmt.Sprintf("%s (%v, %v] holds %d > Max %d", what, us(a.at-length), us(a.at), sum, maxN)
			}
		}
		return ""
	}
	switch algorithmOf(l) {
	case runtime.SlidingLog:
		return windowed(w, "window")
	case runtime.SlidingWindow:
		if v := windowed(w, "window"); v != "" {
			return v
		}
		return refBucketViolation(l, adm)
	case runtime.FixedWindow:
		per := map[int64]int64{}
		for _, a := range adm {
			k := a.at / w
			per[k] += a.cost
			if per[k] > maxN {
				return fmt.Sprintf("fixed window %d holds %d > Max %d", k, per[k], maxN)
			}
		}
		return ""
	case runtime.TokenBucket, runtime.GCRA:
		// Between admissions at s <= t, at most Burst units plus what
		// refills in t-s: Max/W per µs for the token bucket, 1/T for GCRA.
		num, den := maxN, w
		if algorithmOf(l) == runtime.GCRA {
			num, den = 1, refCeil(w, maxN)
		}
		for i := range adm {
			if i > 0 && adm[i-1].at == adm[i].at {
				continue
			}
			var sum int64
			for j := i; j < len(adm); j++ {
				sum += adm[j].cost
				if j+1 < len(adm) && adm[j+1].at == adm[j].at {
					continue
				}
				if sum*den > burst*den+(adm[j].at-adm[i].at)*num {
					return fmt.Sprintf("%d units admitted in [%v, %v], more than Burst %d plus the refill", sum, us(adm[i].at), us(adm[j].at), burst)
				}
			}
		}
		return ""
	}
	return "unknown algorithm"
}

// refBucketViolation checks the sliding window's own rule: the admissions
// in any 11 consecutive buckets total at most Max.
func refBucketViolation(l runtime.Limit, adm []refAdmission) string {
	b := refCeil(l.Window.Microseconds(), 10)
	per := map[int64]int64{}
	for _, a := range adm {
		per[a.at/b] += a.cost
	}
	for j := range per {
		var sum int64
		for i := j; i <= j+10; i++ {
			sum += per[i]
		}
		if sum > int64(l.Max) {
			return fmt.Sprintf("buckets %d..%d hold %d > Max %d", j, j+10, sum, l.Max)
		}
	}
	return ""
}

func TestRefViolation(t *testing.T) {
	log := runtime.Limit{Name: "n", Window: 100 * time.Microsecond, Max: 2}
	require.Empty(t, refViolation(log, []refAdmission{{0, 1}, {99, 1}, {100, 1}, {199, 1}}))
	require.NotEmpty(t, refViolation(log, []refAdmission{{0, 1}, {50, 1}, {99, 1}}))
	require.NotEmpty(t, refViolation(log, []refAdmission{{0, 1}, {0, 2}}))
	fixed := runtime.Limit{Name: "n", Window: 100 * time.Microsecond, Max: 2, Algorithm: runtime.FixedWindow}
	require.Empty(t, refViolation(fixed, []refAdmission{{98, 1}, {99, 1}, {100, 2}}))
	require.NotEmpty(t, refViolation(fixed, []refAdmission{{0, 1}, {99, 2}}))
	tb := runtime.Limit{Name: "n", Window: time.Second, Max: 10, Burst: 5, Algorithm: runtime.TokenBucket}
	sec := int64(time.Second / time.Microsecond)
	require.Empty(t, refViolation(tb, []refAdmission{{0, 5}, {sec / 10, 1}, {sec / 5, 1}}))
	require.NotEmpty(t, refViolation(tb, []refAdmission{{0, 5}, {sec/10 - 1, 1}}))
	gc := runtime.Limit{Name: "n", Window: time.Second, Max: 3, Burst: 1, Algorithm: runtime.GCRA}
	require.Empty(t, refViolation(gc, []refAdmission{{0, 1}, {333334, 1}}))
	require.NotEmpty(t, refViolation(gc, []refAdmission{{0, 1}, {333333, 1}}))
	sw := runtime.Limit{Name: "n", Window: 100 * time.Microsecond, Max: 2, Algorithm: runtime.SlidingWindow}
	require.Empty(t, refBucketViolation(sw, []refAdmission{{0, 2}, {110, 2}}))
	require.NotEmpty(t, refBucketViolation(sw, []refAdmission{{0, 2}, {109, 1}}))
}

// TestAlgorithms holds each algorithm's documented behaviour, with values
// computed by hand, on every backend of the conformance suite.
func TestAlgorithms(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, lim testLimiter, clock *fakeClock)
	}{
		{"fixed-window resets at the epoch-aligned boundary", testFixedWindowBoundary},
		{"fixed-window windows are epoch-aligned", testFixedWindowAligned},
		{"sliding-window counts 11 buckets", testSlidingWindowBuckets},
		{"sliding-window weighs buckets as they leave", testSlidingWindowPartial},
		{"token-bucket burst then refill rate", testTokenBucketRate},
		{"token-bucket exact with a rate that does not divide", testTokenBucketExact},
		{"token-bucket burst above max", testTokenBucketBigBurst},
		{"gcra spacing and burst", testGCRASpacing},
		{"gcra rounds the interval up", testGCRARoundsUp},
		{"gcra burst 1 is strict spacing", testGCRABurstOne},
		{"reset-after empties every algorithm", testResetAfterEveryAlgorithm},
		{"cost above capacity is an error", testCostAboveCapacity},
		{"burst is ignored by the window algorithms", testBurstIgnored},
		{"large max and windows", testLargeNumbers},
	}
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					clock := newFakeClock()
					c.run(t, b.new(t, clock), clock)
				})
			}
		})
	}
}

func allowN(t *testing.T, lim testLimiter, l runtime.Limit, key string, n int) runtime.Decision {
	t.Helper()
	d, err := decideN(lim, l, key, n)
	require.NoError(t, err)
	return d
}

// requireRetryExact waits RetryAfter-1µs (still denied), then 1µs more
// (admitted), for a call of cost n.
func requireRetryExact(t *testing.T, lim testLimiter, clock *fakeClock, l runtime.Limit, key string, n int, d runtime.Decision) runtime.Decision {
	t.Helper()
	require.False(t, d.Allowed)
	require.Positive(t, d.RetryAfter)
	clock.Advance(d.RetryAfter - time.Microsecond)
	early := allowN(t, lim, l, key, n)
	require.False(t, early.Allowed, "1µs before RetryAfter %v must still be denied", d.RetryAfter)
	require.Equal(t, time.Microsecond, early.RetryAfter)
	clock.Advance(time.Microsecond)
	ok := allowN(t, lim, l, key, n)
	require.True(t, ok.Allowed, "waiting exactly RetryAfter %v must admit", d.RetryAfter)
	return ok
}

func testFixedWindowBoundary(t *testing.T, lim testLimiter, clock *fakeClock) {
	// The fake clock starts on a minute boundary of the Unix epoch.
	l := runtime.Limit{Name: "fw", Window: time.Minute, Max: 3, Algorithm: runtime.FixedWindow}
	clock.Advance(time.Minute - time.Microsecond)
	for i := 0; i < 3; i++ {
		require.Equal(t, runtime.Decision{Allowed: true, Remaining: 2 - i, ResetAfter: time.Microsecond}, allow(t, lim, l, "k"))
	}
	require.Equal(t, runtime.Decision{RetryAfter: time.Microsecond, ResetAfter: time.Microsecond}, allow(t, lim, l, "k"))
	clock.Advance(time.Microsecond)
	// 2*Max within 2µs: the price of fixed windows.
	for i := 0; i < 3; i++ {
		require.Equal(t, runtime.Decision{Allowed: true, Remaining: 2 - i, ResetAfter: time.Minute}, allow(t, lim, l, "k"))
	}
	d := allow(t, lim, l, "k")
	require.Equal(t, runtime.Decision{RetryAfter: time.Minute, ResetAfter: time.Minute}, d)
	clock.Advance(25 * time.Second)
	d = allow(t, lim, l, "k")
	require.Equal(t, runtime.Decision{RetryAfter: 35 * time.Second, ResetAfter: 35 * time.Second}, d)
	d = requireRetryExact(t, lim, clock, l, "k", 1, d)
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 2, ResetAfter: time.Minute}, d)
}

func testFixedWindowAligned(t *testing.T, lim testLimiter, clock *fakeClock) {
	// Windows start at multiples of Window since the Unix epoch, whatever
	// the time of the first call: 12:00:20 is 20s into a one-minute window.
	clock.Advance(20 * time.Second)
	l := runtime.Limit{Name: "fw", Window: time.Minute, Max: 2, Algorithm: runtime.FixedWindow}
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 1, ResetAfter: 40 * time.Second}, allow(t, lim, l, "k"))
	odd := runtime.Limit{Name: "fw7", Window: 7*time.Second + 3*time.Microsecond, Max: 2, Algorithm: runtime.FixedWindow}
	now := clock.Now().UnixMicro()
	w := odd.Window.Microseconds()
	ends := us((now/w+1)*w - now)
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 1, ResetAfter: ends}, allow(t, lim, odd, "k"))
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 0, ResetAfter: ends}, allow(t, lim, odd, "k"))
	d := allow(t, lim, odd, "k")
	require.Equal(t, runtime.Decision{RetryAfter: ends, ResetAfter: ends}, d)
	requireRetryExact(t, lim, clock, odd, "k", 1, d)
}

func testSlidingWindowBuckets(t *testing.T, lim testLimiter, clock *fakeClock) {
	// Window 10s: buckets of 1s, and the fake clock starts on one.
	l := runtime.Limit{Name: "sw", Window: 10 * time.Second, Max: 5, Algorithm: runtime.SlidingWindow}
	for i := 0; i < 5; i++ {
		require.Equal(t, runtime.Decision{Allowed: true, Remaining: 4 - i, ResetAfter: 11 * time.Second}, allow(t, lim, l, "k"))
	}
	require.Equal(t, runtime.Decision{RetryAfter: 11 * time.Second, ResetAfter: 11 * time.Second}, allow(t, lim, l, "k"))
	// A sliding log would admit again now; the counter is up to one bucket
	// (Window/10) late, never early.
	clock.Advance(10 * time.Second)
	d := allow(t, lim, l, "k")
	require.Equal(t, runtime.Decision{RetryAfter: time.Second, ResetAfter: time.Second}, d)
	d = requireRetryExact(t, lim, clock, l, "k", 1, d)
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 4, ResetAfter: 11 * time.Second}, d)

	// Half-way into a bucket, the admission still counts until the end of
	// its bucket's 11th successor.
	clock.Advance(500 * time.Millisecond)
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 3, ResetAfter: 10500 * time.Millisecond}, allow(t, lim, l, "k"))
}

func testSlidingWindowPartial(t *testing.T, lim testLimiter, clock *fakeClock) {
	l := runtime.Limit{Name: "sw", Window: 10 * time.Second, Max: 5, Algorithm: runtime.SlidingWindow}
	require.True(t, allowN(t, lim, l, "k", 2).Allowed) // bucket 0
	clock.Advance(3 * time.Second)
	require.True(t, allowN(t, lim, l, "k", 2).Allowed) // bucket 3
	clock.Advance(3 * time.Second)
	d := allowN(t, lim, l, "k", 1) // bucket 6
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 0, ResetAfter: 11 * time.Second}, d)
	clock.Advance(3500 * time.Millisecond) // 9.5s
	d = allowN(t, lim, l, "k", 3)
	// Room for 3 needs buckets 0 and 3 gone: bucket 3 leaves at 14s.
	require.Equal(t, runtime.Decision{Remaining: 0, RetryAfter: 4500 * time.Millisecond, ResetAfter: 7500 * time.Millisecond}, d)
	d = allowN(t, lim, l, "k", 2)
	require.Equal(t, runtime.Decision{Remaining: 0, RetryAfter: 1500 * time.Millisecond, ResetAfter: 7500 * time.Millisecond}, d)
	d = requireRetryExact(t, lim, clock, l, "k", 2, d) // 11s: bucket 0 left
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 0, ResetAfter: 11 * time.Second}, d)
	// Never more than Max in any 10s window: at 11s, the window (1s, 11s]
	// holds 2+1+2 = 5.
}

func testTokenBucketRate(t *testing.T, lim testLimiter, clock *fakeClock) {
	// 10 per second with a burst of 5: 5 at once, then one every 100ms.
	l := runtime.Limit{Name: "tb", Window: time.Second, Max: 10, Burst: 5, Algorithm: runtime.TokenBucket}
	for i := 0; i < 5; i++ {
		require.Equal(t, runtime.Decision{Allowed: true, Remaining: 4 - i, ResetAfter: time.Duration(i+1) * 100 * time.Millisecond},
			allow(t, lim, l, "k"), "call %d", i+1)
	}
	d := allow(t, lim, l, "k")
	require.Equal(t, runtime.Decision{RetryAfter: 100 * time.Millisecond, ResetAfter: 500 * time.Millisecond}, d)
	d = requireRetryExact(t, lim, clock, l, "k", 1, d)
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 0, ResetAfter: 500 * time.Millisecond}, d)
	for i := 0; i < 10; i++ {
		clock.Advance(100 * time.Millisecond)
		require.True(t, allow(t, lim, l, "k").Allowed, "refill %d", i)
		require.Equal(t, runtime.Decision{RetryAfter: 100 * time.Millisecond, ResetAfter: 500 * time.Millisecond}, allow(t, lim, l, "k"))
	}
	// An idle bucket fills to Burst, not beyond.
	clock.Advance(time.Hour)
	d = allowN(t, lim, l, "k", 5)
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 0, ResetAfter: 500 * time.Millisecond}, d)
	d = allowN(t, lim, l, "k", 3)
	require.Equal(t, runtime.Decision{RetryAfter: 300 * time.Millisecond, ResetAfter: 500 * time.Millisecond}, d)
	clock.Advance(250 * time.Millisecond)
	// 2.5 tokens: 2 remain for a caller, and 3 need 50ms more.
	require.Equal(t, runtime.Decision{Remaining: 2, RetryAfter: 50 * time.Millisecond, ResetAfter: 250 * time.Millisecond},
		allowN(t, lim, l, "k", 3))
	requireRetryExact(t, lim, clock, l, "k", 3, allowN(t, lim, l, "k", 3))
}

func testTokenBucketExact(t *testing.T, lim testLimiter, clock *fakeClock) {
	// 3 per second: a token every 333333.33µs. Exact arithmetic makes the
	// waits 333334, 333333 and 333333µs: three tokens in exactly 1s.
	l := runtime.Limit{Name: "tb3", Window: time.Second, Max: 3, Algorithm: runtime.TokenBucket}
	require.True(t, allowN(t, lim, l, "k", 3).Allowed)
	start := clock.Now()
	for _, wait := range []time.Duration{333334, 333333, 333333} {
		d := allow(t, lim, l, "k")
		require.Equal(t, wait*time.Microsecond, d.RetryAfter)
		requireRetryExact(t, lim, clock, l, "k", 1, d)
	}
	require.Equal(t, time.Second, clock.Now().Sub(start))
}

func testTokenBucketBigBurst(t *testing.T, lim testLimiter, clock *fakeClock) {
	l := runtime.Limit{Name: "tbb", Window: time.Second, Max: 2, Burst: 6, Algorithm: runtime.TokenBucket}
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 0, ResetAfter: 3 * time.Second}, allowN(t, lim, l, "k", 6))
	require.Equal(t, runtime.Decision{RetryAfter: 500 * time.Millisecond, ResetAfter: 3 * time.Second}, allow(t, lim, l, "k"))
	d := allowN(t, lim, l, "k", 6)
	require.Equal(t, runtime.Decision{RetryAfter: 3 * time.Second, ResetAfter: 3 * time.Second}, d)
	requireRetryExact(t, lim, clock, l, "k", 6, d)
}

func testGCRASpacing(t *testing.T, lim testLimiter, clock *fakeClock) {
	l := runtime.Limit{Name: "gc", Window: time.Second, Max: 10, Burst: 5, Algorithm: runtime.GCRA}
	for i := 0; i < 5; i++ {
		require.Equal(t, runtime.Decision{Allowed: true, Remaining: 4 - i, ResetAfter: time.Duration(i+1) * 100 * time.Millisecond},
			allow(t, lim, l, "k"), "call %d", i+1)
	}
	d := allow(t, lim, l, "k")
	require.Equal(t, runtime.Decision{RetryAfter: 100 * time.Millisecond, ResetAfter: 500 * time.Millisecond}, d)
	d = requireRetryExact(t, lim, clock, l, "k", 1, d)
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 0, ResetAfter: 500 * time.Millisecond}, d)
	for i := 0; i < 10; i++ {
		clock.Advance(100 * time.Millisecond)
		require.True(t, allow(t, lim, l, "k").Allowed, "interval %d", i)
		require.Equal(t, runtime.Decision{RetryAfter: 100 * time.Millisecond, ResetAfter: 500 * time.Millisecond}, allow(t, lim, l, "k"))
	}
	clock.Advance(250 * time.Millisecond)
	// TAT is 250ms ahead: 2 whole intervals free, and a cost of 3 waits 50ms.
	require.Equal(t, runtime.Decision{Remaining: 2, RetryAfter: 50 * time.Millisecond, ResetAfter: 250 * time.Millisecond},
		allowN(t, lim, l, "k", 3))
	d = requireRetryExact(t, lim, clock, l, "k", 3, allowN(t, lim, l, "k", 3))
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 0, ResetAfter: 500 * time.Millisecond}, d)
}

func testGCRARoundsUp(t *testing.T, lim testLimiter, clock *fakeClock) {
	// 3 per second: interval ceil(1s/3) = 333334µs, so three calls after a
	// burst take 2µs longer than a second: stricter, never looser.
	l := runtime.Limit{Name: "gc3", Window: time.Second, Max: 3, Algorithm: runtime.GCRA}
	require.True(t, allowN(t, lim, l, "k", 3).Allowed)
	start := clock.Now()
	for i := 0; i < 3; i++ {
		d := allow(t, lim, l, "k")
		require.Equal(t, 333334*time.Microsecond, d.RetryAfter)
		requireRetryExact(t, lim, clock, l, "k", 1, d)
	}
	require.Equal(t, time.Second+2*time.Microsecond, clock.Now().Sub(start))
}

func testGCRABurstOne(t *testing.T, lim testLimiter, clock *fakeClock) {
	l := runtime.Limit{Name: "gc1", Window: time.Minute, Max: 4, Burst: 1, Algorithm: runtime.GCRA}
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 0, ResetAfter: 15 * time.Second}, allow(t, lim, l, "k"))
	d := allow(t, lim, l, "k")
	require.Equal(t, runtime.Decision{RetryAfter: 15 * time.Second, ResetAfter: 15 * time.Second}, d)
	clock.Advance(5 * time.Second)
	d = allow(t, lim, l, "k")
	require.Equal(t, runtime.Decision{RetryAfter: 10 * time.Second, ResetAfter: 10 * time.Second}, d)
	requireRetryExact(t, lim, clock, l, "k", 1, d)
	_, err := decideN(lim, l, "k", 2)
	require.ErrorIs(t, err, runtime.ErrInvalidCost, "Burst 1 means no call can cost 2")
}

// testResetAfterEveryAlgorithm: ResetAfter is when the full capacity is
// back: 1µs earlier a call of the full capacity is denied, at ResetAfter it
// is admitted.
func testResetAfterEveryAlgorithm(t *testing.T, lim testLimiter, clock *fakeClock) {
	for _, algo := range runtime.Algorithms() {
		l := runtime.Limit{Name: "reset-" + string(algo), Window: 3*time.Second + 7*time.Microsecond, Max: 6, Burst: 4, Algorithm: algo}
		c := l.Capacity()
		rng := rand.New(rand.NewPCG(7, uint64(len(algo))))
		var last runtime.Decision
		for i := 0; i < 12; i++ {
			clock.Advance(time.Duration(rng.IntN(400_000)) * time.Microsecond)
			last = allowN(t, lim, l, "k", 1+rng.IntN(2))
		}
		require.Positive(t, last.ResetAfter, "%s", algo)
		clock.Advance(last.ResetAfter - time.Microsecond)
		require.False(t, allowN(t, lim, l, "k", c).Allowed, "%s: full capacity 1µs before ResetAfter", algo)
		clock.Advance(time.Microsecond)
		d := allowN(t, lim, l, "k", c)
		require.True(t, d.Allowed, "%s: full capacity at ResetAfter", algo)
		require.Equal(t, 0, d.Remaining, "%s", algo)
	}
}

func testCostAboveCapacity(t *testing.T, lim testLimiter, clock *fakeClock) {
	for _, algo := range runtime.Algorithms() {
		for _, burst := range []int{0, 3, 9} {
			l := runtime.Limit{Name: fmt.Sprintf("cap-%d", burst), Window: time.Minute, Max: 6, Burst: burst, Algorithm: algo}
			c := 6
			if (algo == runtime.TokenBucket || algo == runtime.GCRA) && burst > 0 {
				c = burst
			}
			// (A cost of 0 is not among them: a Request's zero Cost
			// means 1; see the end of the loop.)
			for _, n := range []int{c + 1, 1 << 40, -1, -3} {
				_, err := decideN(lim, l, "k", n)
				require.ErrorIs(t, err, runtime.ErrInvalidCost, "%s burst %d cost %d", algo, burst, n)
				require.NotErrorIs(t, err, runtime.ErrLimited)
				require.NotContains(t, err.Error(), `"k"`, "errors never show the key")
			}
			d := allowN(t, lim, l, "fresh", c)
			require.True(t, d.Allowed, "%s burst %d: a cost of the capacity %d is admitted on a fresh key", algo, burst, c)
			require.Equal(t, 0, d.Remaining)
			// The errored calls recorded nothing.
			d = allowN(t, lim, l, "k", c)
			require.True(t, d.Allowed, "%s burst %d", algo, burst)
			// Cost 0 is a call of cost 1, which the full key denies.
			d = allowN(t, lim, l, "k", 0)
			require.False(t, d.Allowed, "%s burst %d: cost 0 means 1", algo, burst)
			require.Positive(t, d.RetryAfter, "%s burst %d", algo, burst)
		}
	}
}

func testBurstIgnored(t *testing.T, lim testLimiter, clock *fakeClock) {
	for _, algo := range []runtime.Algorithm{runtime.SlidingLog, runtime.SlidingWindow, runtime.FixedWindow} {
		l := runtime.Limit{Name: "burst-ignored", Window: time.Minute, Max: 10, Burst: 3, Algorithm: algo}
		d := allowN(t, lim, l, "k", 10)
		require.Equal(t, runtime.Decision{Allowed: true, Remaining: 0, ResetAfter: d.ResetAfter}, d, "%s", algo)
		require.False(t, allow(t, lim, l, "k").Allowed, "%s", algo)
	}
}

func testLargeNumbers(t *testing.T, lim testLimiter, clock *fakeClock) {
	// Products of now, Max, Burst and Window must not overflow or lose
	// precision in Lua's doubles.
	for _, l := range []runtime.Limit{
		{Name: "big-tb", Window: time.Hour, Max: 1_000_000, Algorithm: runtime.TokenBucket},
		{Name: "big-tb-day", Window: 24 * time.Hour, Max: 1 << 20, Burst: 50_000, Algorithm: runtime.TokenBucket},
		{Name: "big-gcra", Window: 24 * time.Hour, Max: 1 << 30, Algorithm: runtime.GCRA},
		{Name: "big-gcra-year", Window: 365 * 24 * time.Hour, Max: 7, Algorithm: runtime.GCRA},
		{Name: "big-sw", Window: 365 * 24 * time.Hour, Max: 1 << 40, Algorithm: runtime.SlidingWindow},
		{Name: "big-fw", Window: 100 * 365 * 24 * time.Hour, Max: 1 << 40, Algorithm: runtime.FixedWindow},
	} {
		m := newRefModel(l)
		now := clock.Now().UnixMicro()
		for i, n := range []int{1, 3, l.Capacity() - 4, 2} {
			want := m.decide(now, int64(n))
			require.Equal(t, want, allowN(t, lim, l, "k", n), "%s call %d cost %d", l.Name, i, n)
		}
	}
}

// modelWalkLimits are the limits the random walks exercise: several per
// algorithm, with windows that are and are not multiples of 10 and of Max.
// Windows are long because a Limiter on a fake clock still expires its
// keys on Redis's real clock, after the fake ResetAfter in milliseconds:
// with long windows that real time is never reached while the fake clock
// still needs the key.
func modelWalkLimits() []runtime.Limit {
	const day = 24 * time.Hour
	return []runtime.Limit{
		{Name: "log-5", Window: time.Hour, Max: 5},
		{Name: "log-1", Window: day + 7*time.Microsecond, Max: 1},
		{Name: "sw-7", Window: time.Hour, Max: 7, Algorithm: runtime.SlidingWindow},
		{Name: "sw-20", Window: day + 3*time.Microsecond, Max: 20, Algorithm: runtime.SlidingWindow},
		{Name: "sw-1", Window: 2 * time.Hour, Max: 1, Algorithm: runtime.SlidingWindow},
		{Name: "fw-4", Window: time.Hour, Max: 4, Algorithm: runtime.FixedWindow},
		{Name: "fw-9", Window: day + 13*time.Microsecond, Max: 9, Algorithm: runtime.FixedWindow},
		{Name: "tb-10-5", Window: time.Hour, Max: 10, Burst: 5, Algorithm: runtime.TokenBucket},
		{Name: "tb-3", Window: day + time.Microsecond, Max: 3, Algorithm: runtime.TokenBucket},
		{Name: "tb-2-7", Window: time.Hour, Max: 2, Burst: 7, Algorithm: runtime.TokenBucket},
		{Name: "gcra-10-5", Window: time.Hour, Max: 10, Burst: 5, Algorithm: runtime.GCRA},
		{Name: "gcra-3", Window: day + time.Microsecond, Max: 3, Algorithm: runtime.GCRA},
		{Name: "gcra-7-1", Window: time.Hour, Max: 7, Burst: 1, Algorithm: runtime.GCRA},
		{Name: "gcra-2-6", Window: time.Hour, Max: 2, Burst: 6, Algorithm: runtime.GCRA},
	}
}

// TestAlgorithmsAgainstModel walks each limit through a random sequence of
// clock advances and costs on both backends, checking every decision
// against the reference model, the RetryAfter and ResetAfter each decision
// promises, and finally the algorithm's bound over everything admitted.
func TestAlgorithmsAgainstModel(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			for i, l := range modelWalkLimits() {
				t.Run(l.Name, func(t *testing.T) {
					clock := newFakeClock()
					runModelWalk(t, b.new(t, clock), clock, l, uint64(100+i), 1000)
				})
			}
		})
	}
}

// runModelWalk is the random walk of TestAlgorithmsAgainstModel; the
// cluster test runs it too.
func runModelWalk(t *testing.T, lim testLimiter, clock *fakeClock, l runtime.Limit, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	m := newRefModel(l)
	w := l.Window.Microseconds()
	c := l.Capacity()
	var adm []refAdmission
	var trail []string

	call := func(step int, n int, what string) runtime.Decision {
		t.Helper()
		now := clock.Now().UnixMicro()
		got, err := decideN(lim, l, "walk", n)
		require.NoError(t, err, "step %d", step)
		want := m.decide(now, int64(n))
		trail = append(trail, fmt.Sprintf("step %d %s t=%d cost %d: %+v", step, what, now, n, got))
		if got != want {
			t.Fatalf("%s step %d (%s) at t=%d cost %d:\n got  %+v\n want %+v\nlast steps:\n%s",
				l.Name, step, what, now, n, got, want, strings.Join(trail[max(0, len(trail)-15):], "\n"))
		}
		if got.Allowed {
			adm = append(adm, refAdmission{now, int64(n)})
		} else if l.Algorithm == runtime.SlidingWindow {
			// Denied at most one bucket early: a sliding log over the
			// window stretched by one bucket would deny too.
			b := refCeil(w, 10)
			require.LessOrEqual(t, 11*b-w, w/10+10, "one bucket is about Window/10")
			var inStretched int64
			for _, a := range adm {
				if a.at > now-11*b {
					inStretched += a.cost
				}
			}
			require.Greater(t, inStretched+int64(n), int64(l.Max), "step %d: denied although no window of W+W/10 is full", step)
		}
		return got
	}

	var last runtime.Decision
	lastCost := 1
	for step := 0; step < steps; step++ {
		r := rng.Float64()
		switch {
		case !last.Allowed && last.RetryAfter > 0 && r < 0.2:
			// Waiting RetryAfter-1µs is not enough; RetryAfter is.
			clock.Advance(last.RetryAfter - time.Microsecond)
			require.False(t, call(step, lastCost, "retry-1µs").Allowed, "step %d", step)
			clock.Advance(time.Microsecond)
			last = call(step, lastCost, "retry")
			require.True(t, last.Allowed, "step %d: waiting RetryAfter must admit", step)
			continue
		case last.ResetAfter > 0 && r < 0.25:
			// After ResetAfter the full capacity is back, not before.
			clock.Advance(last.ResetAfter - time.Microsecond)
			require.False(t, call(step, c, "reset-1µs").Allowed, "step %d", step)
			clock.Advance(time.Microsecond)
			last = call(step, c, "reset")
			require.True(t, last.Allowed, "step %d: ResetAfter must empty the key", step)
			lastCost = c
			continue
		case r < 0.27:
			_, err := decideN(lim, l, "walk", c+1+rng.IntN(3))
			require.ErrorIs(t, err, runtime.ErrInvalidCost, "step %d", step)
			continue
		}
		switch r = rng.Float64(); {
		case r < 0.35:
		case r < 0.45:
			clock.Advance(time.Microsecond)
		case r < 0.85:
			clock.Advance(us(rng.Int64N(2*w/int64(l.Max) + 2)))
		default:
			clock.Advance(us(rng.Int64N(2 * w)))
		}
		lastCost = 1
		if rng.IntN(3) == 0 {
			lastCost = 1 + rng.IntN(c)
		}
		last = call(step, lastCost, "random")
	}
	require.NotEmpty(t, adm)
	require.Empty(t, refViolation(l, adm), "%s: the algorithm's bound", l.Name)
	if l.Algorithm == runtime.SlidingWindow {
		require.Empty(t, refBucketViolation(l, adm))
	}
}

// TestAlgorithmsConcurrent hammers one key per algorithm from several
// clients and goroutines, on Redis's clock, and checks the bound each
// algorithm promises over the whole run. Every admission happened at a
// server time between two readings of TIME taken before the first call and
// after the last, so the bound is computed for that span; with a short
// window the key is saturated throughout, so the bound is close to what is
// admitted and a race that let extra calls through would break it.
func TestAlgorithmsConcurrent(t *testing.T) {
	srv := redistest.StartServer(t)
	var lims []runtime.Limiter
	for i := 0; i < 3; i++ {
		lims = append(lims, New(srv.Client(t), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second)))
	}
	admin := srv.Client(t)
	serverNow := func() int64 {
		tm, err := admin.Time(context.Background()).Result()
		require.NoError(t, err)
		return tm.UnixMicro()
	}
	for _, algo := range runtime.Algorithms() {
		t.Run(string(algo), func(t *testing.T) {
			runConcurrentBound(t, algo, lims, serverNow)
		})
	}
	t.Run("memory", func(t *testing.T) {
		mem := memlimit.New()
		for _, algo := range runtime.Algorithms() {
			runConcurrentBound(t, algo, []runtime.Limiter{mem}, func() int64 { return time.Now().UnixMicro() })
		}
	})
}

// concurrentBound is the most units l can admit between from and to (µs),
// inclusive, starting from an unused key.
func concurrentBound(l runtime.Limit, from, to int64) int64 {
	w, m, b := l.Window.Microseconds(), int64(l.Max), burstOf(l)
	switch algorithmOf(l) {
	case runtime.SlidingLog:
		return m * ((to - from + w) / w) // windows of length w cover [from, to]
	case runtime.SlidingWindow:
		bk := refCeil(w, 10)
		buckets := to/bk - from/bk + 1
		return m * refCeil(buckets, 11)
	case runtime.FixedWindow:
		return m * (to/w - from/w + 1)
	case runtime.TokenBucket:
		return b + (to-from)*m/w
	case runtime.GCRA:
		return b + (to-from)/refCeil(w, m)
	}
	return 0
}

func runConcurrentBound(t *testing.T, algo runtime.Algorithm, lims []runtime.Limiter, now func() int64) {
	l := runtime.Limit{Name: "concurrent-" + string(algo), Window: 20 * time.Millisecond, Max: 5, Algorithm: algo}
	// Each goroutine calls until about 8 windows have passed on its own
	// clock (or a cap of calls is reached), so the key stays saturated
	// across several windows; nothing asserts how long that takes.
	const goroutines, maxCalls, span = 6, 50000, 8 * 20 * time.Millisecond
	key := fmt.Sprintf("hot-%d", time.Now().UnixNano())
	from := now()
	start := time.Now()
	var mu sync.Mutex
	var admitted, denied int64
	var wg sync.WaitGroup
	for li, lim := range lims {
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(li), uint64(g)))
				var a, d int64
				for i := 0; i < maxCalls && time.Since(start) < span; i++ {
					n := 1 + rng.IntN(2)
					dec, err := decideN(lim, l, key, n)
					if err != nil {
						t.Error(err)
						return
					}
					if dec.Allowed {
						a += int64(n)
					} else {
						d++
					}
				}
				mu.Lock()
				admitted += a
				denied += d
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	to := now()
	bound := concurrentBound(l, from, to)
	t.Logf("%s: %d units admitted, %d calls denied in %v; bound %d", algo, admitted, denied, us(to-from), bound)
	require.Positive(t, admitted)
	require.LessOrEqual(t, admitted, bound, "%s admitted more than its bound over the run", algo)
}

// TestAlgorithmsHugeWindows: a Limit that Validate accepts must get sane
// decisions whatever its size. A window of centuries is silly but valid,
// and the waits it implies can exceed what a time.Duration holds (292
// years) or what Lua's doubles hold exactly (2^53 µs, 285 years, counted
// from the epoch). Such a limit must either be rejected with an error or
// be decided alike by both backends, with waits that are never negative.
func TestAlgorithmsHugeWindows(t *testing.T) {
	const year = 365 * 24 * time.Hour
	var limits []runtime.Limit
	for _, algo := range runtime.Algorithms() {
		limits = append(limits,
			runtime.Limit{Name: "max-" + string(algo), Window: time.Duration(1<<63 - 1), Max: 3, Algorithm: algo},
			runtime.Limit{Name: "280y-" + string(algo), Window: 280 * year, Max: 2, Algorithm: algo})
	}
	limits = append(limits,
		runtime.Limit{Name: "gcra-burst", Window: 100*year + time.Microsecond, Max: 1, Burst: 100, Algorithm: runtime.GCRA},
		runtime.Limit{Name: "tb-burst", Window: 10 * year, Max: 1, Burst: 14, Algorithm: runtime.TokenBucket})

	srv := redistest.StartServer(t)
	h := newDiffHarness(t, srv.Client(t))
	step := 0
	for _, l := range limits {
		for i := 0; i < 4; i++ {
			d := h.single(step, l, "k", 1)
			step++
			if l.Validate() != nil {
				break // rejected on both backends alike: fine
			}
			require.GreaterOrEqual(t, d.RetryAfter, time.Duration(0), "%s call %d: %+v", l.Name, i, d)
			require.GreaterOrEqual(t, d.ResetAfter, time.Duration(0), "%s call %d: %+v", l.Name, i, d)
			require.Equal(t, !d.Allowed, d.RetryAfter > 0, "%s call %d: a denial must say how long to wait: %+v", l.Name, i, d)
		}
	}
}
