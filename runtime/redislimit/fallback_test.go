package redislimit

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// TestFallbackLetsGoAfterRecovery decides many keys through the FailLocal
// fallback while a real Redis is down, brings Redis back, and checks that
// once those keys' windows have passed the fallback holds none of them,
// although no decision visits them again: an outage must not leave its keys
// in memory for as long as the process lives.
func TestFallbackLetsGoAfterRecovery(t *testing.T) {
	t.Parallel() // it mostly waits
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	events := &degradedLog{}
	lim := New(client, WithRetryInterval(time.Millisecond), WithOnDegraded(events.record), WithInstances(1))
	fallback := lim.fallback.(*memlimit.Limiter)
	l := runtime.Limit{Name: "fallback.sweep", Window: 100 * time.Millisecond, Max: 3}
	ctx := context.Background()

	srv.Stop(t)
	const keys = 5_000
	for i := 0; i < keys; i++ {
		d, err := lim.Allow(ctx, l, "outage-"+strconv.Itoa(i))
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	require.Equal(t, keys, events.len(), "every decision of the outage was the fallback's")
	require.Positive(t, fallback.Len())

	srv.Start(t)
	awaitRedisDecides(t, lim, events, l, "back")
	// A shard sweeps itself at most every 10s when no call reaches it.
	const bound = time.Minute
	deadline := time.Now().Add(bound)
	for fallback.Len() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the fallback still holds %d keys %v after Redis came back", fallback.Len(), bound)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
