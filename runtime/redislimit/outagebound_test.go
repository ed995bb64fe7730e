package redislimit

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestFailLocalOutageBound checks the bound the README states for FailLocal:
// with n instances, a window that an outage cuts in two admits at most
// (n+1)×Max, what Redis admitted before the outage plus Max per instance,
// and, since every instance's fallback is exact, reaches it.
func TestFailLocalOutageBound(t *testing.T) {
	srv := redistest.StartServer(t)
	clock := newFakeClock()
	l := runtime.Limit{Name: "outage.bound", Window: time.Minute, Max: 20}
	const instances = 3
	lims := make([]*Limiter, instances)
	for i := range lims {
		// Each instance has its own client, as separate processes would.
		// Without the deny cache, whose denials still hold during the
		// outage and would make the bound below lower.
		lims[i] = New(srv.Client(t), WithClock(clock.Now), WithRetryInterval(time.Hour), WithDenyCache(0))
	}
	ctx := context.Background()
	admitted := 0
	call := func(round int) {
		for i, lim := range lims {
			for c := 0; c < l.Max; c++ {
				d, err := lim.Allow(ctx, l, "k")
				require.NoError(t, err, "round %d, instance %d", round, i)
				if d.Allowed {
					admitted++
				}
			}
		}
	}
	call(1)
	require.Equal(t, l.Max, admitted, "while Redis is up the instances share one exact count")
	srv.Stop(t)
	call(2)
	call(3)
	t.Logf("%d instances admitted %d calls in one window for Max %d around an outage", instances, admitted, l.Max)
	require.Equal(t, (instances+1)*l.Max, admitted, "FailLocal admits up to (n+1)×Max, and no more")
}
