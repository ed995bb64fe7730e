package runtime_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// counting is the wrapper a user writes the normal Go way: embed the
// Limiter, override its one method.
type counting struct {
	runtime.Limiter
	calls atomic.Int64
}

func (c *counting) Decide(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	c.calls.Add(1)
	return c.Limiter.Decide(ctx, reqs...)
}

// TestEmbeddingWrapperSeesEveryShape: a wrapper that embeds Limiter is
// complete, for one limit, a cost and several limits alike.
func TestEmbeddingWrapperSeesEveryShape(t *testing.T) {
	w := &counting{Limiter: memlimit.New()}
	ctx := context.Background()
	one := runtime.Limit{Name: "Wrap.One", Window: time.Minute, Max: 1}
	cost := runtime.Limit{Name: "Wrap.Cost", Window: time.Minute, Max: 5}
	other := runtime.Limit{Name: "Wrap.Other", Window: time.Minute, Max: 2}

	require.NoError(t, runtime.Enforce(ctx, w, runtime.Request{Limit: one, Key: "k"}))
	require.ErrorIs(t, runtime.Enforce(ctx, w, runtime.Request{Limit: one, Key: "k"}), runtime.ErrLimited)
	require.NoError(t, runtime.Enforce(ctx, w, runtime.Request{Limit: cost, Key: "k", Cost: 5}))
	require.ErrorIs(t, runtime.Enforce(ctx, w, runtime.Request{Limit: cost, Key: "k", Cost: 1}), runtime.ErrLimited)
	require.ErrorIs(t, runtime.Enforce(ctx, w, runtime.Request{Limit: cost, Key: "k2", Cost: 6}), runtime.ErrInvalidCost)
	require.NoError(t, runtime.Enforce(ctx, w, runtime.Request{Limit: other, Key: "k"}, runtime.Request{Limit: cost, Key: "k3"}))
	require.NoError(t, runtime.Enforce(ctx, w, runtime.Request{Limit: other, Key: "k"}, runtime.Request{Limit: cost, Key: "k3"}))
	require.ErrorIs(t, runtime.Enforce(ctx, w, runtime.Request{Limit: other, Key: "k"}, runtime.Request{Limit: cost, Key: "k3"}), runtime.ErrLimited)
	require.EqualValues(t, 8, w.calls.Load())
}
