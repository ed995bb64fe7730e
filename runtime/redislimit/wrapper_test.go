package redislimit_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
	"github.com/ratelimitgen/ratelimitgen/runtime/redislimit"
)

// counting is the wrapper a user writes the normal Go way, for metrics
// say: embed runtime.Limiter and override its one method.
type counting struct {
	runtime.Limiter
	n atomic.Int64
}

func (c *counting) Decide(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	c.n.Add(1)
	return c.Limiter.Decide(ctx, reqs...)
}

var _ runtime.Limiter = (*counting)(nil)

// TestEmbeddingWrapperOnRedis: a wrapper that embeds runtime.Limiter around
// the Redis limiter works, through runtime.Enforce as generated code calls
// it, for one limit, for a cost and for several limits. Before runtime's
// single Decide, such a wrapper lost the Redis limiter's AllowN and
// AllowAll, and every call with a cost or two limits was an error.
func TestEmbeddingWrapperOnRedis(t *testing.T) {
	srv := redistest.StartServer(t)
	var degraded atomic.Int64
	lim := redislimit.New(srv.Client(t), redislimit.WithFailurePolicy(redislimit.FailClosed),
		redislimit.WithTimeout(5*time.Second), redislimit.WithOnDegraded(func(redislimit.DegradedEvent) { degraded.Add(1) }))
	w := &counting{Limiter: lim}
	ctx := context.Background()
	one := runtime.Limit{Name: "Wrap.One", Window: time.Minute, Max: 1}
	cost := runtime.Limit{Name: "Wrap.Cost", Window: time.Minute, Max: 5}
	other := runtime.Limit{Name: "Wrap.Other", Window: time.Minute, Max: 2, Algorithm: runtime.GCRA}

	t.Run("one limit", func(t *testing.T) {
		require.NoError(t, runtime.Enforce(ctx, w, runtime.Request{Limit: one, Key: "k"}))
		err := runtime.Enforce(ctx, w, runtime.Request{Limit: one, Key: "k"})
		requireDenial(t, err, one, time.Minute)
	})
	t.Run("cost", func(t *testing.T) {
		require.NoError(t, runtime.Enforce(ctx, w, runtime.Request{Limit: cost, Key: "k", Cost: 5}))
		requireDenial(t, runtime.Enforce(ctx, w, runtime.Request{Limit: cost, Key: "k", Cost: 1}), cost, time.Minute)
		err := runtime.Enforce(ctx, w, runtime.Request{Limit: cost, Key: "k2", Cost: 6})
		require.ErrorIs(t, err, runtime.ErrInvalidCost)
		require.NotErrorIs(t, err, runtime.ErrLimited)
		require.NotErrorIs(t, err, runtime.ErrUnavailable)
	})
	t.Run("several limits", func(t *testing.T) {
		rows := runtime.Limit{Name: "Wrap.Rows", Window: time.Minute, Max: 10}
		reqs := []runtime.Request{{Limit: other, Key: "k"}, {Limit: rows, Key: "k3", Cost: 3}}
		require.NoError(t, runtime.Enforce(ctx, w, reqs...))
		require.NoError(t, runtime.Enforce(ctx, w, reqs...))
		// other (2 per minute) is full, rows has 4 of 10 left: the denial
		// names other, and records nothing under rows.
		requireDenial(t, runtime.Enforce(ctx, w, reqs...), other, 30*time.Second)
		ds, err := w.Decide(ctx, reqs...)
		require.NoError(t, err)
		require.False(t, ds.Allowed)
		require.False(t, ds.Each[0].Allowed)
		require.Equal(t, runtime.Decision{Allowed: true, Remaining: 4, ResetAfter: ds.Each[1].ResetAfter}, ds.Each[1],
			"rows has room for this call, and says so")
		require.Positive(t, ds.Each[1].ResetAfter)
		d, err := lim.Allow(ctx, rows, "k3")
		require.NoError(t, err)
		require.True(t, d.Allowed)
		require.Equal(t, 3, d.Remaining, "the denials took nothing from rows")
	})
	require.EqualValues(t, 9, w.n.Load(), "every call went through the wrapper's Decide")
	require.Zero(t, degraded.Load(), "Redis made every decision")
}

// TestEmbeddingWrapperAsFallback: FailLocal hands a call of any shape to
// the fallback as it is, so a user's wrapper works there too.
func TestEmbeddingWrapperAsFallback(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	fallback := &counting{Limiter: memlimit.New()}
	var degraded atomic.Int64
	lim := redislimit.New(client, redislimit.WithFallback(fallback), redislimit.WithRetryInterval(time.Hour), redislimit.WithInstances(1),
		redislimit.WithOnDegraded(func(redislimit.DegradedEvent) { degraded.Add(1) }))
	ctx := context.Background()
	a := runtime.Limit{Name: "Fallback.A", Window: time.Minute, Max: 3}
	b := runtime.Limit{Name: "Fallback.B", Window: time.Minute, Max: 4, Algorithm: runtime.TokenBucket}

	srv.Stop(t)
	require.NoError(t, runtime.Enforce(ctx, lim, runtime.Request{Limit: a, Key: "k"}))
	require.NoError(t, runtime.Enforce(ctx, lim, runtime.Request{Limit: b, Key: "k", Cost: 4}))
	requireDenial(t, runtime.Enforce(ctx, lim, runtime.Request{Limit: a, Key: "k"}, runtime.Request{Limit: b, Key: "k"}), b, 15*time.Second)
	require.NoError(t, runtime.Enforce(ctx, lim, runtime.Request{Limit: a, Key: "k", Cost: 2}))
	requireDenial(t, runtime.Enforce(ctx, lim, runtime.Request{Limit: a, Key: "k"}), a, time.Minute)
	require.EqualValues(t, 5, fallback.n.Load(), "the fallback decided every call of the outage")
	require.EqualValues(t, 5, degraded.Load())
}

// requireDenial checks that err is a denial naming l, whose wait is
// positive and at most maxWait.
func requireDenial(t *testing.T, err error, l runtime.Limit, maxWait time.Duration) {
	t.Helper()
	require.ErrorIs(t, err, runtime.ErrLimited)
	var le *runtime.LimitError
	require.True(t, errors.As(err, &le), "%v", err)
	require.Equal(t, l, le.Limit)
	require.False(t, le.Decision.Allowed)
	require.Positive(t, le.Decision.RetryAfter)
	require.LessOrEqual(t, le.Decision.RetryAfter, maxWait)
	require.NotContains(t, err.Error(), `"k`, "a denial never shows the key")
}
