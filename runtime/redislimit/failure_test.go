package redislimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// Upper bounds for waiting on something that must eventually happen. They
// only decide when a test gives up; nothing here expects it to be fast.
const (
	// recoveryBound bounds how long a limiter may take to use Redis again
	// after it is back, with a retry interval of a few milliseconds.
	recoveryBound = 15 * time.Second
	// hungCallBound bounds how long a decision may take while Redis is
	// frozen. The limiter's timeout in those tests is 100ms and the client's
	// own read timeout is a minute, so a limiter that honours its timeout
	// returns long before this, and one that waits for the client does not.
	hungCallBound = 15 * time.Second
)

// degradedLog records the events a Limiter reports through
// WithOnDegraded, which run on the callers' goroutines.
type degradedLog struct {
	mu     sync.Mutex
	events []DegradedEvent
}

func (d *degradedLog) record(ev DegradedEvent) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.events = append(d.events, ev)
}

func (d *degradedLog) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.events)
}

// since returns the events recorded after the first n.
func (d *degradedLog) since(n int) []DegradedEvent {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]DegradedEvent(nil), d.events[n:]...)
}

// storageKeyOf is the Redis key a limiter with the default prefix uses for
// (l, key), so tests can look at what Redis holds.
func storageKeyOf(l runtime.Limit, key string) string {
	return string(appendStorageKey(nil, defaultPrefix, algoSpecs[runtime.SlidingLog].tag, l.Name, key))
}

// zcard returns how many admissions Redis holds for (l, key).
func zcard(t *testing.T, c redis.UniversalClient, l runtime.Limit, key string) int64 {
	t.Helper()
	return logLen(t, c, storageKeyOf(l, key))
}

// allowDirect asks lim for one decision and reports whether it produced a
// degraded event, i.e. whether Redis did not decide it.
func allowDirect(lim *Limiter, events *degradedLog, l runtime.Limit, key string) (d runtime.Decision, err error, degraded bool) {
	before := events.len()
	d, err = lim.Allow(context.Background(), l, key)
	return d, err, events.len() != before
}

// awaitRedisDecides calls Allow on (l, key) until Redis, rather than the
// failure policy, makes the decision, and returns that decision. It is how
// tests observe that a limiter recovers by itself.
func awaitRedisDecides(t *testing.T, lim *Limiter, events *degradedLog, l runtime.Limit, key string) runtime.Decision {
	t.Helper()
	deadline := time.Now().Add(recoveryBound)
	var lastErr error
	for {
		d, err, degraded := allowDirect(lim, events, l, key)
		if !degraded {
			require.NoError(t, err, "a decision Redis made must not be an error")
			return d
		}
		lastErr = err
		if time.Now().After(deadline) {
			t.Fatalf("Redis was back but the limiter still did not use it after %v; last event: %+v, last error: %v",
				recoveryBound, events.since(events.len() - 1)[0], lastErr)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFailurePolicies stops a real Redis under a running limiter, checks
// that each policy decides as documented while it is down, and that the
// limiter goes back to Redis by itself once it is restarted.
func TestFailurePolicies(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	bg := context.Background()
	// Each subtest stops and restarts the server; one that fails midway
	// must not leave it stopped for the next.
	run := func(name string, f func(t *testing.T)) {
		if !srv.Running() {
			srv.Start(t)
		}
		t.Run(name, f)
	}

	run("FailLocal is the default and enforces Max per window locally", func(t *testing.T) {
		clock := newFakeClock()
		events := &degradedLog{}
		lim := New(client, WithClock(clock.Now), WithRetryInterval(10*time.Millisecond), WithInstances(1),
			WithOnDegraded(events.record))
		l := runtime.Limit{Name: "failure.local", Window: time.Minute, Max: 3}

		d, err := lim.Allow(bg, l, "healthy")
		require.NoError(t, err)
		require.True(t, d.Allowed)
		require.Equal(t, int64(1), zcard(t, client, l, "healthy"), "while Redis is up it must record the admission")
		require.Zero(t, events.len(), "no decision is degraded while Redis is up")

		srv.Stop(t)
		// Two windows: the fallback admits exactly Max in each, on the
		// limiter's clock.
		for w := 0; w < 2; w++ {
			for i := 0; i < l.Max+2; i++ {
				d, err := lim.Allow(bg, l, "outage")
				require.NoError(t, err, "FailLocal must decide, not fail (window %d, call %d)", w, i+1)
				if i < l.Max {
					require.True(t, d.Allowed, "window %d, call %d", w, i+1)
					require.Equal(t, l.Max-1-i, d.Remaining, "window %d, call %d", w, i+1)
				} else {
					require.False(t, d.Allowed, "window %d, call %d: more than Max admitted by the fallback", w, i+1)
					require.Equal(t, l.Window, d.RetryAfter, "window %d, call %d", w, i+1)
				}
			}
			// Admissions within one microsecond are recorded a microsecond
			// apart, so the last one leaves the window a little after Window.
			clock.Advance(l.Window + time.Millisecond)
		}
		// The fallback's window for "outage" is full again: one more
		// admission, then leave it full.
		for i := 0; i < l.Max; i++ {
			d, err := lim.Allow(bg, l, "outage")
			require.NoError(t, err)
			require.True(t, d.Allowed)
		}
		d, err = lim.Allow(bg, l, "outage")
		require.NoError(t, err)
		require.False(t, d.Allowed)

		evs := events.since(0)
		require.Len(t, evs, 3*(l.Max+2)-1, "every decision taken during the outage must be reported")
		require.False(t, errors.Is(evs[0].Err, ErrCircuitOpen), "the first failure must carry Redis' own error, got %v", evs[0].Err)
		for i, ev := range evs {
			require.Equal(t, FailLocal, ev.Policy, "event %d", i)
			require.Equal(t, l, ev.Limit, "event %d", i)
			require.Error(t, ev.Err, "event %d must say why Redis did not decide", i)
		}
		require.True(t, evs[0].Decision.Allowed, "the event carries the fallback's decision")
		require.False(t, evs[len(evs)-1].Decision.Allowed, "the event carries the fallback's decision")

		srv.Start(t)
		// The fallback's window for "outage" is full, so only Redis (which
		// lost everything in the restart) can admit it.
		d = awaitRedisDecides(t, lim, events, l, "outage")
		require.True(t, d.Allowed, "Redis holds nothing for the key after a restart, so it must admit")
		require.Equal(t, l.Max-1, d.Remaining)
		require.Equal(t, int64(1), zcard(t, client, l, "outage"), "the admission must be recorded in Redis again")
		d, err, degraded := allowDirect(lim, events, l, "outage")
		require.NoError(t, err)
		require.False(t, degraded, "once recovered, decisions stay with Redis")
		require.True(t, d.Allowed)
		require.Equal(t, int64(2), zcard(t, client, l, "outage"))
	})

	run("FailOpen admits everything while Redis is down", func(t *testing.T) {
		clock := newFakeClock()
		events := &degradedLog{}
		lim := New(client, WithClock(clock.Now), WithFailurePolicy(FailOpen),
			WithRetryInterval(10*time.Millisecond), WithOnDegraded(events.record))
		l := runtime.Limit{Name: "failure.open", Window: time.Minute, Max: 2}

		srv.Stop(t)
		const calls = 6
		for i := 0; i < calls; i++ {
			d, err := lim.Allow(bg, l, "k")
			require.NoError(t, err, "call %d", i+1)
			require.True(t, d.Allowed, "FailOpen must admit call %d", i+1)
		}
		evs := events.since(0)
		require.Len(t, evs, calls)
		for i, ev := range evs {
			require.Equal(t, FailOpen, ev.Policy, "event %d", i)
			require.Error(t, ev.Err, "event %d", i)
			require.True(t, ev.Decision.Allowed, "event %d", i)
		}

		srv.Start(t)
		d := awaitRedisDecides(t, lim, events, l, "k")
		require.True(t, d.Allowed)
		// Redis enforces the limit again: FailOpen would admit this one.
		d, err, degraded := allowDirect(lim, events, l, "k")
		require.NoError(t, err)
		require.False(t, degraded)
		require.True(t, d.Allowed)
		d, err, degraded = allowDirect(lim, events, l, "k")
		require.NoError(t, err)
		require.False(t, degraded)
		require.False(t, d.Allowed, "after recovery Redis must deny the call beyond Max")
		require.Equal(t, int64(l.Max), zcard(t, client, l, "k"))
	})

	run("FailClosed returns ErrUnavailable, never ErrLimited", func(t *testing.T) {
		clock := newFakeClock()
		events := &degradedLog{}
		lim := New(client, WithClock(clock.Now), WithFailurePolicy(FailClosed),
			WithRetryInterval(10*time.Millisecond), WithOnDegraded(events.record))
		l := runtime.Limit{Name: "failure.closed", Window: time.Minute, Max: 2}
		const key = "alice@example.com"

		srv.Stop(t)
		for i := 0; i < 3; i++ {
			d, err := lim.Allow(bg, l, key)
			require.Error(t, err, "call %d", i+1)
			require.Equal(t, runtime.Decision{}, d, "no decision is made under FailClosed")
			require.ErrorIs(t, err, runtime.ErrUnavailable)
			require.NotErrorIs(t, err, runtime.ErrLimited, "an outage is not a denial: callers must answer 503, not 429")
			// UnavailableError is unexported now: the error matches
			// runtime.ErrUnavailable and unwraps to the cause.
			require.Error(t, errors.Unwrap(err), "the cause must be kept")
			var ue *unavailableError
			require.ErrorAs(t, err, &ue)
			require.Equal(t, l, ue.limit)
			require.Same(t, ue.err, errors.Unwrap(err))
			require.Contains(t, err.Error(), l.Name, "the message must name the limit")
			require.NotContains(t, err.Error(), key, "the message must not leak the key")
		}
		evs := events.since(0)
		require.Len(t, evs, 3)
		for i, ev := range evs {
			require.Equal(t, FailClosed, ev.Policy, "event %d", i)
			require.Error(t, ev.Err, "event %d", i)
			require.Equal(t, runtime.Decision{}, ev.Decision, "event %d", i)
		}

		srv.Start(t)
		d := awaitRedisDecides(t, lim, events, l, key)
		require.True(t, d.Allowed)
		require.Equal(t, int64(1), zcard(t, client, l, key))
	})

	run("breaker stops asking a failed Redis until the retry interval passes", func(t *testing.T) {
		events := &degradedLog{}
		lim := New(client, WithFailurePolicy(FailOpen), WithRetryInterval(time.Hour),
			WithOnDegraded(events.record))
		l := runtime.Limit{Name: "failure.breaker", Window: time.Minute, Max: 5}

		srv.Stop(t)
		for i := 0; i < 4; i++ {
			_, err := lim.Allow(bg, l, "k")
			require.NoError(t, err)
		}
		evs := events.since(0)
		require.Len(t, evs, 4)
		require.NotErrorIs(t, evs[0].Err, ErrCircuitOpen, "the first call must ask Redis and report its error")
		for i, ev := range evs[1:] {
			require.ErrorIs(t, ev.Err, ErrCircuitOpen, "call %d after the failure must not ask Redis", i+2)
		}

		// Redis is back, but the retry interval has not passed: the limiter
		// must still not ask it, which the empty key proves.
		srv.Start(t)
		d, err, degraded := allowDirect(lim, events, l, "k")
		require.NoError(t, err)
		require.True(t, degraded)
		require.True(t, d.Allowed)
		require.ErrorIs(t, events.since(events.len() - 1)[0].Err, ErrCircuitOpen)
		// A client of its own: go-redis's pool answers with its last dial
		// error for up to a second after it failed to dial many times.
		require.Zero(t, zcard(t, srv.Client(t), l, "k"), "Redis was asked while the breaker was open")
	})
}

// TestHungRedisTimesOut freezes a real Redis (SIGSTOP: the kernel still
// accepts connections, nothing answers) and checks that a decision gives up
// after the limiter's timeout instead of waiting for the server, reports the
// timeout, and that the limiter uses Redis again once it answers.
func TestHungRedisTimesOut(t *testing.T) {
	srv := redistest.StartServer(t)
	// The client's own timeouts are long on purpose: the limiter promises
	// that WithTimeout bounds every decision, whatever the client's settings.
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	t.Cleanup(func() { _ = client.Close() })
	events := &degradedLog{}
	const timeout = 100 * time.Millisecond
	lim := New(client, WithTimeout(timeout), WithRetryInterval(10*time.Millisecond), WithInstances(1),
		WithOnDegraded(events.record))
	l := runtime.Limit{Name: "failure.hung", Window: time.Minute, Max: 3}

	// A call Redis decides first, so the pool holds a connection to the
	// server that is about to hang. On a starved machine the first tries
	// may time out and be decided locally: another key's, and their
	// events come before n.
	require.True(t, awaitRedisDecides(t, lim, events, l, "warm").Allowed)
	n := events.len()

	srv.Pause(t)
	paused := true
	t.Cleanup(func() {
		if paused {
			srv.Resume(t)
		}
	})
	type result struct {
		d   runtime.Decision
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := lim.Allow(context.Background(), l, "k")
		done <- result{d, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(hungCallBound):
		t.Fatalf("a decision against a frozen Redis did not return within %v although the limiter's timeout is %v: "+
			"the limiter waits for the client's read timeout instead of its own", hungCallBound, timeout)
	}
	// The server is still frozen, so Redis cannot have made this decision.
	require.NoError(t, res.err, "FailLocal decides locally")
	require.True(t, res.d.Allowed)
	evs := events.since(n)
	require.Len(t, evs, 1)
	require.Equal(t, FailLocal, evs[0].Policy)
	require.ErrorIs(t, evs[0].Err, context.DeadlineExceeded)
	require.Contains(t, evs[0].Err.Error(), fmt.Sprintf("no answer within %v", timeout),
		"the event must say that the timeout, not an error reply, degraded the decision")

	// The check of Redis that follows a missed timeout fails too, and
	// opens the breaker: a call now is answered without waiting for the
	// frozen server, or released from its wait when the breaker opens.
	require.Eventually(t, func() bool {
		go func() {
			d, err := lim.Allow(context.Background(), l, "k")
			done <- result{d, err}
		}()
		select {
		case res = <-done:
		case <-time.After(hungCallBound):
			t.Fatalf("a decision against a frozen Redis did not return within %v", hungCallBound)
		}
		evs := events.since(0)
		return errors.Is(evs[len(evs)-1].Err, ErrCircuitOpen)
	}, hungCallBound, time.Millisecond, "the breaker must open once the check of the frozen Redis fails")

	srv.Resume(t)
	paused = false
	awaitRedisDecides(t, lim, events, l, "k")
}

// TestCallerCancellationIsNotDegraded checks that a caller that gave up
// before asking gets its own context error, which neither counts as a Redis
// failure nor produces a degraded event. (A deadline that passes during the
// call is Redis not answering in time: see deadline_test.go.)
func TestCallerCancellationIsNotDegraded(t *testing.T) {
	srv := redistest.StartServer(t)
	// ContextTimeoutEnabled lets the caller's deadline interrupt a read, so
	// that this test is about how the limiter classifies the cancellation.
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	events := &degradedLog{}
	// A long timeout and retry interval: if the cancellation were taken for
	// a Redis failure, the breaker would keep Redis out for an hour.
	lim := New(client, WithFailurePolicy(FailOpen), WithTimeout(time.Minute),
		WithRetryInterval(time.Hour), WithOnDegraded(events.record))
	l := runtime.Limit{Name: "failure.cancel", Window: time.Minute, Max: 3}

	t.Run("already cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		d, err := lim.Allow(ctx, l, "k")
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, runtime.Decision{}, d)
		require.Zero(t, events.len())
		require.Zero(t, zcard(t, client, l, "k"), "a cancelled call must not be recorded")
	})

	t.Run("already cancelled while Redis is down", func(t *testing.T) {
		srv.Stop(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := lim.Allow(ctx, l, "k")
		require.ErrorIs(t, err, context.Canceled)
		require.Zero(t, events.len())
		srv.Start(t)
	})
}

// TestInvalidInputIsAnError checks that both backends turn every invalid
// limit or cost into an error, never a panic, a denial or a degraded event,
// and never touch Redis for them.
func TestInvalidInputIsAnError(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	events := &degradedLog{}
	good := runtime.Limit{Name: "invalid.input", Window: time.Second, Max: 2}
	cases := []struct {
		name   string
		l      runtime.Limit
		cost   int64
		isCost bool // the error must wrap runtime.ErrInvalidCost
	}{
		{"zero Limit", runtime.Limit{}, 1, false},
		{"no name", runtime.Limit{Window: time.Second, Max: 1}, 1, false},
		{"Max 0", runtime.Limit{Name: "x", Window: time.Second}, 1, false},
		{"negative Max", runtime.Limit{Name: "x", Window: time.Second, Max: -3}, 1, false},
		{"Window 0", runtime.Limit{Name: "x", Max: 1}, 1, false},
		{"negative Window", runtime.Limit{Name: "x", Window: -time.Second, Max: 1}, 1, false},
		{"Window below 1µs", runtime.Limit{Name: "x", Window: 999 * time.Nanosecond, Max: 1}, 1, false},
		// A Request's zero Cost means 1, so cost 0 is no longer invalid;
		// the most negative cost (a uint64 beyond int64 converts to it)
		// takes its place.
		{"most negative cost", good, math.MinInt64, true},
		{"negative cost", good, -1, true},
		{"cost above Max", good, 3, true},
	}
	limiters := []struct {
		name string
		lim  testLimiter
	}{
		{"memory", memlimit.New()},
		{"redis", New(client, WithOnDegraded(events.record))},
	}
	for _, b := range limiters {
		t.Run(b.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					bad := runtime.Request{Limit: c.l, Key: "k", Cost: c.cost}
					// Alone, and beside a valid request, which must not be
					// recorded either.
					for _, reqs := range [][]runtime.Request{{bad}, {{Limit: good, Key: "other"}, bad}} {
						var (
							ds  runtime.Decisions
							err error
						)
						require.NotPanics(t, func() {
							ds, err = b.lim.Decide(context.Background(), reqs...)
						})
						require.Error(t, err)
						require.Equal(t, runtime.Decisions{}, ds)
						require.NotErrorIs(t, err, runtime.ErrLimited, "an invalid request is not a denial")
						require.NotErrorIs(t, err, runtime.ErrUnavailable, "an invalid request is not an outage")
						if c.isCost {
							require.ErrorIs(t, err, runtime.ErrInvalidCost)
						}
					}
					if c.cost == 1 {
						var (
							d   runtime.Decision
							err error
						)
						require.NotPanics(t, func() { d, err = b.lim.Allow(context.Background(), c.l, "k") })
						require.Error(t, err)
						require.Equal(t, runtime.Decision{}, d)
					}
				})
			}
			t.Run("no requests", func(t *testing.T) {
				ds, err := b.lim.Decide(context.Background())
				require.Error(t, err)
				require.Equal(t, runtime.Decisions{}, ds)
			})
			t.Run("one limit twice for one key", func(t *testing.T) {
				ds, err := b.lim.Decide(context.Background(), runtime.Request{Limit: good, Key: "k"}, runtime.Request{Limit: good, Key: "k"})
				require.Error(t, err)
				require.Equal(t, runtime.Decisions{}, ds)
				require.NotErrorIs(t, err, runtime.ErrLimited)
			})
		})
	}
	require.Zero(t, events.len(), "invalid requests must not be reported as degraded decisions")
	n, err := client.DBSize(context.Background()).Result()
	require.NoError(t, err)
	require.Zero(t, n, "invalid requests must not reach Redis")

	// A message a person can act on: it names the problem and the limit.
	_, err = New(client).Decide(context.Background(), runtime.Request{Limit: good, Key: "k", Cost: 3})
	require.True(t, strings.Contains(err.Error(), good.Name) && strings.Contains(err.Error(), "3"), "got %q", err)
}
