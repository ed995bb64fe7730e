package runtime

import (
	"context"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// counting is the wrapper a user writes the normal Go way: embed the
// Limiter, override its one method.
type counting struct {
	Limiter
	calls atomic.Int64
}

func (c *counting) Decide(ctx context.Context, reqs ...Request) (Decisions, error) {
	c.calls.Add(1)
	return c.Limiter.Decide(ctx, reqs...)
}

// TestEmbeddingWrapperSeesEveryShape: a wrapper that embeds Limiter is
// complete, for one limit, a cost and several limits alike.
func TestEmbeddingWrapperSeesEveryShape(t *testing.T) {
	w := &counting{Limiter: NewMemoryLimiter()}
	ctx := context.Background()
	one := Limit{Name: "Wrap.One", Window: time.Minute, Max: 1}
	cost := Limit{Name: "Wrap.Cost", Window: time.Minute, Max: 5}
	other := Limit{Name: "Wrap.Other", Window: time.Minute, Max: 2}

	require.NoError(t, Enforce(ctx, w, Request{Limit: one, Key: "k"}))
	require.ErrorIs(t, Enforce(ctx, w, Request{Limit: one, Key: "k"}), ErrLimited)
	require.NoError(t, Enforce(ctx, w, Request{Limit: cost, Key: "k", Cost: 5}))
	require.ErrorIs(t, Enforce(ctx, w, Request{Limit: cost, Key: "k", Cost: 1}), ErrLimited)
	require.ErrorIs(t, Enforce(ctx, w, Request{Limit: cost, Key: "k2", Cost: 6}), ErrInvalidCost)
	require.NoError(t, Enforce(ctx, w, Request{Limit: other, Key: "k"}, Request{Limit: cost, Key: "k3"}))
	require.NoError(t, Enforce(ctx, w, Request{Limit: other, Key: "k"}, Request{Limit: cost, Key: "k3"}))
	require.ErrorIs(t, Enforce(ctx, w, Request{Limit: other, Key: "k"}, Request{Limit: cost, Key: "k3"}), ErrLimited)
	require.EqualValues(t, 8, w.calls.Load())
}

// TestDeniedCallReportsEachLimitTruthfully: in a denied call, the limit
// that had room says so, with the room it has; nothing is recorded.
func TestDeniedCallReportsEachLimitTruthfully(t *testing.T) {
	clock := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	lim := NewMemoryLimiter(WithClock(func() time.Time { return clock }))
	ctx := context.Background()
	tight := Limit{Name: "Truth.Tight", Window: time.Minute, Max: 1}
	loose := Limit{Name: "Truth.Loose", Window: time.Hour, Max: 5, Algorithm: FixedWindow}
	reqs := []Request{{Limit: tight, Key: "k"}, {Limit: loose, Key: "k"}}
	ds, err := lim.Decide(ctx, reqs...)
	require.NoError(t, err)
	require.True(t, ds.Allowed)
	for range 3 {
		ds, err = lim.Decide(ctx, reqs...)
		require.NoError(t, err)
		require.Equal(t, Decisions{Allowed: false, Each: []Decision{
			{Allowed: false, RetryAfter: time.Minute, ResetAfter: time.Minute},
			{Allowed: true, Remaining: 4, ResetAfter: time.Hour},
		}}, ds)
	}
	require.Equal(t, Decision{RetryAfter: time.Minute, ResetAfter: time.Hour}, ds.Decision())
}

// TestRuntimeImportsOnlyTheStandardLibrary keeps go-redis and every other
// module out of programs that use only the vocabulary and the memory
// limiter, generated wrappers included.
func TestRuntimeImportsOnlyTheStandardLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, p := range strings.Fields(string(out)) {
		if !strings.HasPrefix(p, "github.com/ratelimitgen/ratelimitgen/runtime") || strings.Contains(p, "redislimit") {
			t.Errorf("runtime depends on %s; it may use the standard library only", p)
		}
	}
}
