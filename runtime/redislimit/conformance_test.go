package redislimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// testLimiter is what both backends are: a runtime.Limiter, whose Decide
// takes any number of limits and costs, with the one-line Allow for a
// single limit of cost 1.
type testLimiter interface {
	runtime.Limiter
	Allow(ctx context.Context, l runtime.Limit, key string) (runtime.Decision, error)
}

// decideN asks lim to admit a call of cost n under l for key: Decide with
// one Request, the way to pass a cost (the old AllowN). A one-request
// answer must be consistent, and an error must come with no decision.
func decideN(lim runtime.Limiter, l runtime.Limit, key string, n int) (runtime.Decision, error) {
	ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: key, Cost: int64(n)})
	if err != nil {
		if ds.Allowed || ds.Each != nil {
			return runtime.Decision{}, fmt.Errorf("an error (%w) came with a decision %+v", err, ds)
		}
		return runtime.Decision{}, err
	}
	if len(ds.Each) != 1 || ds.Each[0].Allowed != ds.Allowed {
		return runtime.Decision{}, fmt.Errorf("inconsistent Decisions for one request: %+v", ds)
	}
	return ds.Each[0], nil
}

// backend builds a fresh, isolated limiter on the given clock.
type backend struct {
	name string
	new  func(t *testing.T, clock *fakeClock) testLimiter
}

// backends returns every backend the conformance suite must hold for. The
// Redis one shares one server across subtests; a per-subtest prefix keeps
// their keys apart.
func backends(t *testing.T) []backend {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	return []backend{
		{"memory", func(t *testing.T, clock *fakeClock) testLimiter {
			return memlimit.New(memlimit.WithClock(clock.Now))
		}},
		{"redis", func(t *testing.T, clock *fakeClock) testLimiter {
			// The deny cache is off: these suites expect the script's exact
			// answer to every call (denycache_test.go runs the conformance
			// cases with it on).
			return New(client, WithClock(clock.Now), WithPrefix("conf:"+t.Name()+":"),
				WithFailurePolicy(FailClosed), WithTimeout(5*time.Second), WithDenyCache(0))
		}},
	}
}

// TestConformance runs one set of expectations against every backend: the
// backends must make identical decisions on the same clock.
func TestConformance(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, lim testLimiter, clock *fakeClock)
	}{
		{"exactly max per window", testExactlyMax},
		{"waiting retry-after admits", testRetryAfterExact},
		{"denied calls are not recorded", testDeniedNotRecorded},
		{"window slides", testWindowSlides},
		{"keys and names are independent", testIndependentKeys},
		{"cost", testCost},
		{"invalid requests are errors", testInvalid},
		{"clock going backwards never over-admits", testClockBackwards},
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

func allow(t *testing.T, lim testLimiter, l runtime.Limit, key string) runtime.Decision {
	t.Helper()
	d, err := lim.Allow(ctx, l, key)
	require.NoError(t, err)
	return d
}

func testExactlyMax(t *testing.T, lim testLimiter, clock *fakeClock) {
	l := runtime.Limit{Name: "Notifier.SendCode", Window: time.Minute, Max: 3}
	for i := 0; i < 3; i++ {
		d := allow(t, lim, l, "a@example.com")
		require.True(t, d.Allowed, "call %d", i+1)
		require.Equal(t, 2-i, d.Remaining, "call %d", i+1)
		require.Zero(t, d.RetryAfter)
		// Admissions in one microsecond are recorded 1µs apart.
		require.Equal(t, time.Minute+time.Duration(i)*time.Microsecond, d.ResetAfter, "call %d", i+1)
	}
	clock.Advance(10 * time.Second)
	d := allow(t, lim, l, "a@example.com")
	require.Equal(t, runtime.Decision{Allowed: false, Remaining: 0, RetryAfter: 50 * time.Second,
		ResetAfter: 50*time.Second + 2*time.Microsecond}, d)
}

func testRetryAfterExact(t *testing.T, lim testLimiter, clock *fakeClock) {
	l := runtime.Limit{Name: "retry", Window: 1500 * time.Millisecond, Max: 2}
	require.True(t, allow(t, lim, l, "k").Allowed)
	clock.Advance(700 * time.Millisecond)
	require.True(t, allow(t, lim, l, "k").Allowed)
	clock.Advance(300 * time.Millisecond)
	d := allow(t, lim, l, "k")
	require.False(t, d.Allowed)
	require.Equal(t, 500*time.Millisecond, d.RetryAfter)
	require.Equal(t, 1200*time.Millisecond, d.ResetAfter)

	// One microsecond early is still too early...
	clock.Advance(d.RetryAfter - time.Microsecond)
	d2 := allow(t, lim, l, "k")
	require.False(t, d2.Allowed)
	require.Equal(t, time.Microsecond, d2.RetryAfter)
	// ...and waiting exactly RetryAfter is enough.
	clock.Advance(time.Microsecond)
	d3 := allow(t, lim, l, "k")
	require.True(t, d3.Allowed)
	require.Equal(t, 0, d3.Remaining)
}

func testDeniedNotRecorded(t *testing.T, lim testLimiter, clock *fakeClock) {
	l := runtime.Limit{Name: "denied", Window: time.Second, Max: 1}
	require.True(t, allow(t, lim, l, "k").Allowed)
	for i := 0; i < 20; i++ {
		clock.Advance(40 * time.Millisecond)
		d := allow(t, lim, l, "k")
		require.False(t, d.Allowed)
		require.Equal(t, time.Second-time.Duration(i+1)*40*time.Millisecond, d.RetryAfter)
	}
	clock.Advance(200 * time.Millisecond)
	require.True(t, allow(t, lim, l, "k").Allowed, "retrying while denied must not extend the wait")
}

func testWindowSlides(t *testing.T, lim testLimiter, clock *fakeClock) {
	// Calls at 0, 250, 500, 750 ms with Max 4 per second: the fifth at 999ms
	// is denied, and from then on exactly one slot frees every 250ms.
	l := runtime.Limit{Name: "slide", Window: time.Second, Max: 4}
	for i := 0; i < 4; i++ {
		require.True(t, allow(t, lim, l, "k").Allowed)
		clock.Advance(250 * time.Millisecond)
	}
	clock.Advance(-time.Millisecond) // now at 999ms
	d := allow(t, lim, l, "k")
	require.False(t, d.Allowed)
	require.Equal(t, time.Millisecond, d.RetryAfter)
	clock.Advance(time.Millisecond) // 1000ms: the call at 0 expires
	require.True(t, allow(t, lim, l, "k").Allowed)
	require.False(t, allow(t, lim, l, "k").Allowed)
	clock.Advance(250 * time.Millisecond) // 1250ms: the call at 250 expires
	d = allow(t, lim, l, "k")
	require.True(t, d.Allowed)
	require.Equal(t, 0, d.Remaining)
	// A full idle window empties the key.
	clock.Advance(time.Second)
	d = allow(t, lim, l, "k")
	require.True(t, d.Allowed)
	require.Equal(t, 3, d.Remaining)
}

func testIndependentKeys(t *testing.T, lim testLimiter, clock *fakeClock) {
	a := runtime.Limit{Name: "A", Window: time.Minute, Max: 1}
	b := runtime.Limit{Name: "B", Window: time.Minute, Max: 1}
	for _, key := range []string{"x", "y", runtime.Key("a:b", "c"), runtime.Key("a", "b:c"), "", "{x}", "*"} {
		require.True(t, allow(t, lim, a, key).Allowed, "limit A, key %q", key)
		require.True(t, allow(t, lim, b, key).Allowed, "limit B, key %q", key)
	}
	for _, key := range []string{"x", runtime.Key("a:b", "c"), "", "{x}"} {
		require.False(t, allow(t, lim, a, key).Allowed, "limit A, key %q", key)
	}
}

func testCost(t *testing.T, lim testLimiter, clock *fakeClock) {
	l := runtime.Limit{Name: "cost", Window: time.Minute, Max: 10}
	d, err := decideN(lim, l, "k", 4)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.Equal(t, 6, d.Remaining)
	d, err = decideN(lim, l, "k", 6)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.Equal(t, 0, d.Remaining)
	clock.Advance(time.Second)
	d, err = decideN(lim, l, "k", 5)
	require.NoError(t, err)
	require.False(t, d.Allowed)
	// Room for 5 appears when the fifth oldest unit expires; the first call's
	// four units sit at 0µs and the second's six at 1µs, the call's time.
	require.Equal(t, 59*time.Second+time.Microsecond, d.RetryAfter)
	require.Equal(t, 0, d.Remaining)

	// Nothing of the denied call was recorded: after the first call's four
	// units expire, exactly four fit.
	clock.Advance(59 * time.Second)
	d, err = decideN(lim, l, "k", 5)
	require.NoError(t, err)
	require.False(t, d.Allowed)
	d, err = decideN(lim, l, "k", 4)
	require.NoError(t, err)
	require.True(t, d.Allowed)

	_, err = decideN(lim, l, "k", 11)
	require.ErrorIs(t, err, runtime.ErrInvalidCost)
	require.NotErrorIs(t, err, runtime.ErrLimited)
}

func testInvalid(t *testing.T, lim testLimiter, clock *fakeClock) {
	for _, l := range []runtime.Limit{{}, {Name: "n", Max: 1}, {Name: "n", Window: time.Second}, {Window: time.Second, Max: 1},
		{Name: "n", Window: time.Nanosecond, Max: 1}, {Name: "n", Window: -time.Second, Max: 1}} {
		_, err := lim.Allow(ctx, l, "k")
		require.Error(t, err, "limit %+v", l)
		require.NotErrorIs(t, err, runtime.ErrLimited)
	}
	l := runtime.Limit{Name: "n", Window: time.Second, Max: 1}
	// A cost below 1 or above the capacity is an error. Cost 0 is not: a
	// Request's zero Cost means 1 (see the end of this test).
	for _, n := range []int64{-1, 2, math.MinInt64, math.MaxInt64} {
		_, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: "k", Cost: n})
		require.ErrorIs(t, err, runtime.ErrInvalidCost, "cost %d", n)
		require.NotErrorIs(t, err, runtime.ErrLimited, "cost %d", n)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err := lim.Allow(cancelled, l, "k")
	require.ErrorIs(t, err, context.Canceled)
	_, err = lim.Decide(cancelled, runtime.Request{Limit: l, Key: "k"})
	require.ErrorIs(t, err, context.Canceled)

	// None of the errors recorded anything, and Cost 0 is a cost of 1.
	d, err := decideN(lim, l, "k", 0)
	require.NoError(t, err)
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}, d)
	require.False(t, allow(t, lim, l, "k").Allowed, "cost 0 took the one unit")
}

func testClockBackwards(t *testing.T, lim testLimiter, clock *fakeClock) {
	// An app server whose clock jumps back must not find room that a
	// correct clock would not: admissions stay recorded at their times.
	l := runtime.Limit{Name: "skew", Window: time.Second, Max: 2}
	require.True(t, allow(t, lim, l, "k").Allowed)
	require.True(t, allow(t, lim, l, "k").Allowed)
	clock.Advance(-5 * time.Second)
	d := allow(t, lim, l, "k")
	require.False(t, d.Allowed)
	require.Equal(t, 6*time.Second, d.RetryAfter, "the oldest admission counts until 1s after it was recorded")
	clock.Advance(6 * time.Second)
	require.True(t, allow(t, lim, l, "k").Allowed)
}

// TestServerTime checks the default Redis mode, where the script reads the
// server's clock: the limit holds and the waits are within the window.
func TestServerTime(t *testing.T) {
	srv := redistest.StartServer(t)
	lim := New(srv.Client(t), WithFailurePolicy(FailClosed), WithTimeout(5*time.Second))
	l := runtime.Limit{Name: "server-time", Window: time.Hour, Max: 3}
	for i := 0; i < 3; i++ {
		d, err := lim.Allow(ctx, l, "k")
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	d, err := lim.Allow(ctx, l, "k")
	require.NoError(t, err)
	require.False(t, d.Allowed)
	require.Greater(t, d.RetryAfter, 59*time.Minute)
	require.LessOrEqual(t, d.RetryAfter, time.Hour)
	require.GreaterOrEqual(t, d.ResetAfter, d.RetryAfter)
}

// TestRedisKeyExpires checks that the stored key lives as long as its
// newest admission counts and at most a quarter window more (a small
// sliding log's lifetime ends with a quarter window), so idle keys never
// pile up.
func TestRedisKeyExpires(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	clock := newFakeClock()
	lim := New(client, WithClock(clock.Now), WithPrefix("exp:"), WithFailurePolicy(FailClosed))
	l := runtime.Limit{Name: "exp", Window: 800 * time.Millisecond, Max: 5}
	allow(t, lim, l, "k")
	keys, err := client.Keys(ctx, "exp:{*").Result()
	require.NoError(t, err)
	require.Len(t, keys, 1)
	// The first admission leaves the window 800ms from now, and the caller's
	// clock adds 1s (below).
	ttl, err := client.PTTL(ctx, keys[0]).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 1500*time.Millisecond)
	require.LessOrEqual(t, ttl, 2000*time.Millisecond)

	clock.Advance(500 * time.Millisecond)
	allow(t, lim, l, "k")
	ttl, err = client.PTTL(ctx, keys[0]).Result()
	require.NoError(t, err)
	// The newest admission is at 500ms on the limiter's clock and leaves the
	// window at 1300ms, 800ms from now; with the caller's clock, Redis keeps
	// the key 1s longer in case its own clock disagrees.
	require.Greater(t, ttl, 1500*time.Millisecond)
	require.LessOrEqual(t, ttl, 2000*time.Millisecond)
	require.Eventually(t, func() bool { return client.Exists(ctx, keys[0]).Val() == 0 },
		30*time.Second, 20*time.Millisecond, "the key must expire by itself")
}

// TestRedisMemoryPerKey measures MEMORY USAGE of one key holding 100
// admissions and compares it with the seed article's script, which stores a
// timestamp-plus-UUID member per admission.
func TestRedisMemoryPerKey(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	lim := New(client, WithPrefix("mem:"), WithFailurePolicy(FailClosed), WithTimeout(5*time.Second))
	l := runtime.Limit{Name: "Notifier.SendCode", Window: time.Hour, Max: 100}
	for i := 0; i < 100; i++ {
		d, err := lim.Allow(ctx, l, "someone@example.com")
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	keys, err := client.Keys(ctx, "mem:{*").Result()
	require.NoError(t, err)
	require.Len(t, keys, 1)
	ours, err := client.MemoryUsage(ctx, keys[0]).Result()
	require.NoError(t, err)

	// The seed's script, verbatim, with its Java caller's member format.
	const seed = `
local key = KEYS[1]
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local member = ARGV[4]
redis.call('ZREMRANGEBYSCORE', key, 0, now - window)
local count = redis.call('ZCARD', key)
if count < limit then
    redis.call('ZADD', key, now, member)
    redis.call('PEXPIRE', key, window)
    return 1
else
    return 0
end`
	now := time.Now().UnixMilli()
	for i := 0; i < 100; i++ {
		ms := now + int64(i)
		member := fmt.Sprintf("%d-%s", ms, fakeUUID(i))
		require.NoError(t, client.Eval(ctx, seed, []string{"seed"}, 3600000, 100, ms, member).Err())
	}
	theirs, err := client.MemoryUsage(ctx, "seed").Result()
	require.NoError(t, err)
	t.Logf("MEMORY USAGE at 100 admissions: ratelimitgen %d B, seed script %d B", ours, theirs)
	require.LessOrEqual(t, ours, int64(3608), "the issue's budget is half of the seed's 7,216 B")
	require.LessOrEqual(t, 2*ours, theirs)
}

// fakeUUID formats i like a random UUID (36 bytes), which is all the seed's
// member needs for the measurement.
func fakeUUID(i int) string {
	return fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", i*2654435761, i, i, i, i*40503)
}

// TestCostErrorIsNotLimited: a cost no call could ever pay is an error,
// not a denial, also through a wrapper that implements runtime.Limiter
// only. (Before runtime's single Decide, such a wrapper went through
// AllowN's fallback path, which refused every cost but 1.)
func TestCostErrorIsNotLimited(t *testing.T) {
	l := runtime.Limit{Name: "n", Window: time.Second, Max: 1}
	err := runtime.Enforce(ctx, plainLimiter{memlimit.New()}, runtime.Request{Limit: l, Key: "k", Cost: 2})
	require.Error(t, err)
	require.ErrorIs(t, err, runtime.ErrInvalidCost)
	require.False(t, errors.Is(err, runtime.ErrLimited))
}

// plainLimiter hides everything of a limiter but runtime.Limiter.
type plainLimiter struct{ runtime.Limiter }
