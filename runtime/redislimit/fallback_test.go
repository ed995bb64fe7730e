package redislimit

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestFallbackLetsGoAfterRecovery decides many keys through the FailLocal
// fallback while a real Redis is down, brings Redis back, and checks that
// once those keys' windows have passed the fallback holds none of them,
// although no decision visits them again: an outage must not leave its keys
// in memory for as long as the process lives.
func TestFallbackLetsGoAfterRecovery(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	clock := newFakeClock()
	events := &degradedLog{}
	lim := New(client, WithClock(clock.Now), WithRetryInterval(time.Millisecond),
		WithOnDegraded(events.record))
	fallback := lim.fallback.(*runtime.MemoryLimiter)
	l := runtime.Limit{Name: "fallback.sweep", Window: time.Second, Max: 3}
	ctx := context.Background()

	srv.Stop(t)
	const keys = 5_000
	for i := 0; i < keys; i++ {
		d, err := lim.Allow(ctx, l, "outage-"+strconv.Itoa(i))
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	require.Equal(t, keys, events.len(), "every decision of the outage was the fallback's")
	require.Equal(t, keys, fallback.Len())

	srv.Start(t)
	awaitRedisDecides(t, lim, events, l, "back")
	deadline := time.Now().Add(recoveryBound)
	for fallback.Len() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the fallback still holds %d keys %v after Redis came back and their window passed",
				fallback.Len(), recoveryBound)
		}
		// Each round is a window later, so that a key the fallback takes
		// in a round (a pooled connection to the old process may fail one
		// decision) expires too.
		clock.Advance(2 * l.Window)
		_, err := lim.Allow(ctx, l, "back")
		require.NoError(t, err)
		time.Sleep(10 * time.Millisecond)
	}
}
