package redislimit

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestSlidingLogKeepsLaterEntrysLife puts in a log an admission later than
// the server's clock, as after the clock stepped back, and makes a call.
// The key must live until that entry leaves the window: a life counted from
// the call's own time would forget an admission that still counts.
func TestSlidingLogKeepsLaterEntrysLife(t *testing.T) {
	srv := redistest.StartServer(t)
	c := srv.Client(t)
	ctx := context.Background()
	lim := New(c)
	l := runtime.Limit{Name: "Later.Entry", Window: time.Second, Max: 10}
	skey := storageKeyOf(l, "someone@example.com")

	d, err := lim.Allow(ctx, l, "someone@example.com")
	require.NoError(t, err)
	require.True(t, d.Allowed)
	now, err := c.Time(ctx).Result()
	require.NoError(t, err)
	later := now.Add(30 * time.Second).UnixMicro()
	v, err := c.Get(ctx, skey).Result()
	require.NoError(t, err)
	require.NoError(t, c.Set(ctx, skey, logOf(append(logEntries(t, v), later)...), 31*time.Second).Err())

	d, err = lim.Allow(ctx, l, "someone@example.com")
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.Equal(t, 7, d.Remaining, "three entries count: the first call's, the later one and this call's")
	ttl, err := c.PTTL(ctx, skey).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 20*time.Second, "the key must outlive the later entry's window")
}
