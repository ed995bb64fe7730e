package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFakeTimeOffsetsTIME checks that a server started with FakeTime
// answers TIME offset from this machine's clock by about the offset asked,
// in both directions, and that its expiries follow its own clock.
func TestFakeTimeOffsetsTIME(t *testing.T) {
	for _, offset := range []time.Duration{5 * time.Second, -5 * time.Second, 500 * time.Millisecond} {
		t.Run(offset.String(), func(t *testing.T) {
			t.Parallel()
			s := StartServer(t, FakeTime(offset))
			c := s.Client(t)
			ctx := context.Background()
			// The server's TIME is read between before and after: its
			// offset is within half that span of the midpoint's.
			before := time.Now()
			server, err := c.Time(ctx).Result()
			after := time.Now()
			require.NoError(t, err)
			got := server.Sub(before.Add(after.Sub(before) / 2))
			lo, hi := offset-abs(offset)/5, offset+abs(offset)/5
			require.True(t, got >= lo && got <= hi, "TIME is %v from this machine's clock; want %v (between %v and %v)", got, offset, lo, hi)

			// An absolute expiry is kept against the server's clock: a
			// key set to expire at this machine's now+offset/2 is already
			// gone on a server ahead by offset, and kept on one behind.
			at := time.Now().Add(abs(offset) / 2)
			require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
			require.NoError(t, c.ExpireAt(ctx, "k", at).Err())
			n, err := c.Exists(ctx, "k").Result()
			require.NoError(t, err)
			if offset > 0 {
				require.Zero(t, n, "a key expiring at %v is still there on a server %v ahead", at, offset)
			} else {
				require.EqualValues(t, 1, n, "a key expiring at %v is gone on a server %v behind", at, -offset)
			}
		})
	}
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
