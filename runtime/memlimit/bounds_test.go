package memlimit

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestAtTheBounds decides calls at the largest Max and cost
// the limiter takes, and refuses one past them, on every entry
// point: nothing overflows into a negative Remaining or a wait.
func TestAtTheBounds(t *testing.T) {
	if int64(int(runtime.MaxUnits)) != runtime.MaxUnits {
		return // a Max of 2^52 needs a 64-bit int
	}
	fw := runtime.Limit{Name: "Bounds.Limit", Window: time.Hour, Max: int(runtime.MaxUnits), Algorithm: runtime.FixedWindow}
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	ds, err := lim.Decide(ctx, runtime.Request{Limit: fw, Key: "k", Cost: runtime.MaxUnits - 1})
	require.NoError(t, err)
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 1, ResetAfter: time.Hour}, ds.Each[0])
	d, err := lim.Allow(ctx, fw, "k")
	require.NoError(t, err)
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Hour}, d)
	d, err = lim.Allow(ctx, fw, "k")
	require.NoError(t, err)
	require.Equal(t, runtime.Decision{Allowed: false, Remaining: 0, RetryAfter: time.Hour, ResetAfter: time.Hour}, d)

	fw.Max = math.MaxInt
	_, err = lim.Allow(ctx, fw, "k")
	require.ErrorContains(t, err, "at most 2^52")
	_, err = lim.Decide(ctx, runtime.Request{Limit: fw, Key: "k", Cost: math.MaxInt64})
	require.ErrorContains(t, err, "at most 2^52")
}
