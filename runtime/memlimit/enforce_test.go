package memlimit

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestDeniedCallReportsEachLimitTruthfully: in a denied call, the limit
// that had room says so, with the room it has; nothing is recorded.
func TestDeniedCallReportsEachLimitTruthfully(t *testing.T) {
	clock := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	lim := New(WithClock(func() time.Time { return clock }))
	ctx := context.Background()
	tight := runtime.Limit{Name: "Truth.Tight", Window: time.Minute, Max: 1}
	loose := runtime.Limit{Name: "Truth.Loose", Window: time.Hour, Max: 5, Algorithm: runtime.FixedWindow}
	reqs := []runtime.Request{{Limit: tight, Key: "k"}, {Limit: loose, Key: "k"}}
	ds, err := lim.Decide(ctx, reqs...)
	require.NoError(t, err)
	require.True(t, ds.Allowed)
	for range 3 {
		ds, err = lim.Decide(ctx, reqs...)
		require.NoError(t, err)
		require.Equal(t, runtime.Decisions{Allowed: false, Each: []runtime.Decision{
			{Allowed: false, RetryAfter: time.Minute, ResetAfter: time.Minute},
			{Allowed: true, Remaining: 4, ResetAfter: time.Hour},
		}}, ds)
	}
	require.Equal(t, runtime.Decision{RetryAfter: time.Minute, ResetAfter: time.Hour}, ds.Decision())
}

// TestWait lets Wait find room on a real limiter: the second
// call of a 1-per-20ms limit is admitted once the first has left the window.
func TestWait(t *testing.T) {
	lim := New()
	l := runtime.Limit{Name: "Wait.Memory", Window: 20 * time.Millisecond, Max: 1}
	ctx := context.Background()
	require.NoError(t, runtime.Wait(ctx, lim, time.Minute, runtime.Request{Limit: l, Key: "k"}))
	require.ErrorIs(t, runtime.Enforce(ctx, lim, runtime.Request{Limit: l, Key: "k"}), runtime.ErrLimited)
	require.NoError(t, runtime.Wait(ctx, lim, time.Minute, runtime.Request{Limit: l, Key: "k"}))
}
