package memlimit

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestIdleLimiterLetsGo adds many keys and then makes no call at all: the
// limiter still forgets them once their windows pass, and stops looking
// once it holds none.
func TestIdleLimiterLetsGo(t *testing.T) {
	t.Parallel() // it mostly waits
	ctx := context.Background()
	lim := New()
	l := runtime.Limit{Name: "Idle.Burst", Window: 50 * time.Millisecond, Max: 1}
	for i := range 20_000 {
		_, err := lim.Allow(ctx, l, "k"+strconv.Itoa(i))
		require.NoError(t, err)
	}
	require.Positive(t, lim.Len())
	// A shard is swept at most every sweepInterval when no call
	// reaches it; the bound leaves room for a loaded machine.
	const bound = time.Minute
	deadline := time.Now().Add(bound)
	for lim.Len() > 0 || lim.idle.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v without calls the limiter holds %d keys (idle sweep armed: %v)", bound, lim.Len(), lim.idle.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestIdleSweepNeedsOwnClock: on WithClock's clock, which may go back, an
// idle limiter forgets nothing by itself.
func TestIdleSweepNeedsOwnClock(t *testing.T) {
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	_, err := lim.Allow(context.Background(), runtime.Limit{Name: "Idle.Clock", Window: time.Millisecond, Max: 1}, "k")
	require.NoError(t, err)
	clock.Advance(time.Hour)
	require.False(t, lim.idle.Load(), "no idle sweep is armed on a caller's clock")
	require.Equal(t, 1, lim.Len())
}
