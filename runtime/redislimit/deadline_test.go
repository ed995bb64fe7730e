package redislimit

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestCallerDeadlineGetsThePolicysAnswer freezes a real Redis (SIGSTOP) and
// decides with a caller deadline far shorter than the limiter's timeout.
// Each decision must return by about the caller's deadline with the failure
// policy's answer, be reported as degraded, and open the breaker, so that
// the next caller is answered at once: a caller with a short deadline is
// protected like any other. It runs on a client that bounds reads by its
// own timeout (the default) and on one that follows the context's deadline.
func TestCallerDeadlineGetsThePolicysAnswer(t *testing.T) {
	srv := redistest.StartServer(t)
	const (
		callerDeadline = 50 * time.Millisecond
		// Far beyond the caller's deadline: a decision that waits for it
		// instead of the caller's deadline fails the bound below.
		limiterTimeout = time.Minute
	)
	clients := map[string]*redis.Options{
		"plain client":                 {Addr: srv.Addr(), ReadTimeout: time.Minute, WriteTimeout: time.Minute},
		"ContextTimeoutEnabled client": {Addr: srv.Addr(), ReadTimeout: time.Minute, ContextTimeoutEnabled: true},
	}
	for clientName, opts := range clients {
		for _, policy := range []FailurePolicy{FailLocal, FailOpen, FailClosed} {
			t.Run(clientName+"/"+policy.String(), func(t *testing.T) {
				client := redis.NewClient(opts)
				t.Cleanup(func() { _ = client.Close() })
				events := &degradedLog{}
				lim := New(client, WithFailurePolicy(policy), WithTimeout(limiterTimeout), WithInstances(1),
					WithRetryInterval(time.Hour), WithOnDegraded(events.record))
				// A name per subtest: a call sent while Redis is frozen is
				// recorded when it resumes.
				l := runtime.Limit{Name: "deadline." + clientName + "." + policy.String(), Window: time.Minute, Max: 3}
				d, err := lim.Allow(context.Background(), l, "k")
				require.NoError(t, err)
				require.True(t, d.Allowed, "a healthy Redis decides first")

				srv.Pause(t)
				defer srv.Resume(t)
				ctx, cancel := context.WithTimeout(context.Background(), callerDeadline)
				defer cancel()
				start := time.Now()
				d, err = lim.Allow(ctx, l, "k")
				blocked := time.Since(start)
				t.Logf("blocked %v with a caller deadline of %v", blocked, callerDeadline)
				require.Less(t, blocked, hungCallBound,
					"the decision waited for the limiter's timeout (%v), not the caller's deadline (%v)", limiterTimeout, callerDeadline)

				switch policy {
				case FailClosed:
					require.ErrorIs(t, err, runtime.ErrUnavailable)
					require.ErrorIs(t, err, context.DeadlineExceeded, "the cause is kept")
				default:
					require.NoError(t, err, "%v answers a Redis that missed the caller's deadline", policy)
					require.True(t, d.Allowed)
				}
				evs := events.since(0)
				require.Len(t, evs, 1, "the decision must be reported as degraded")
				require.NotErrorIs(t, evs[0].Err, ErrCircuitOpen, "the first call asked Redis")
				require.Contains(t, evs[0].Err.Error(), "the caller's deadline")

				// The breaker is open: the next call, without a deadline of
				// its own, does not wait for the frozen server.
				done := make(chan error, 1)
				go func() {
					_, err := lim.Allow(context.Background(), l, "k")
					done <- err
				}()
				select {
				case <-done:
				case <-time.After(hungCallBound):
					t.Fatalf("the breaker did not open: a call without a deadline waited for the frozen Redis")
				}
				evs = events.since(0)
				require.Len(t, evs, 2)
				require.ErrorIs(t, evs[1].Err, ErrCircuitOpen, "the missed deadline must open the breaker")
			})
		}
	}
}

// TestNoConnectionEndsAtTheConnectBound holds the only connection of a
// client's pool, whose wait for a connection is far longer than the
// limiter's timeout, and decides. The round trips (the caller's own read,
// then the one it is resent through) can only end at their connect bounds,
// which the batcher's watch enforces: the decision gets the policy's answer,
// reported as no connection to Redis, rather than waiting for the pool.
func TestNoConnectionEndsAtTheConnectBound(t *testing.T) {
	srv := redistest.StartServer(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 1, PoolTimeout: time.Minute})
	t.Cleanup(func() { _ = client.Close() })
	held := client.Conn()
	t.Cleanup(func() { _ = held.Close() })
	require.NoError(t, held.Ping(context.Background()).Err(), "the test holds the pool's one connection")

	events := &degradedLog{}
	lim := New(client, WithTimeout(400*time.Millisecond), WithOnDegraded(events.record))
	l := runtime.Limit{Name: "noconn", Window: time.Minute, Max: 3}
	start := time.Now()
	ds, err := lim.Decide(context.Background(), runtime.Request{Limit: l, Key: "k"})
	t.Logf("answered after %v", time.Since(start))
	require.NoError(t, err)
	require.Equal(t, runtime.SourceFallback, ds.Source, "FailLocal answers when no connection is to be had")
	evs := events.since(0)
	require.Len(t, evs, 1)
	require.ErrorIs(t, evs[0].Err, context.DeadlineExceeded)
	require.Contains(t, evs[0].Err.Error(), "no connection to Redis", "the round trip ended at its connect bound, not at the pool's timeout")
}
