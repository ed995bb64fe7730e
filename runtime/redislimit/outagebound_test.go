package redislimit

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestFailLocalOutageBound checks the bound WithInstances states for
// FailLocal: with n instances, a window that an outage cuts in two admits
// at most Max + n*max(1, Max/n), what Redis admitted before the outage plus
// each instance's share, and, since every instance's fallback is exact,
// reaches it. The instances learn n from Redis, or are told it.
func TestFailLocalOutageBound(t *testing.T) {
	const instances = 3
	for _, tc := range []struct {
		name  string
		max   int
		opts  []Option
		bound int
	}{
		// 20 + 3*6: the share rounds down.
		{"learned", 20, nil, 38},
		// 7 + 3*2, at most 2*Max.
		{"WithInstances", 7, []Option{WithInstances(instances)}, 13},
		// 2 + 3*1: a share is at least 1, so n > Max admits Max + n.
		{"share of at least 1", 2, []Option{WithInstances(instances)}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.StartServer(t)
			clock := newFakeClock()
			l := runtime.Limit{Name: "outage.bound", Window: time.Minute, Max: tc.max}
			lims := make([]*Limiter, instances)
			for i := range lims {
				// Each instance has its own client, as separate processes
				// would. Without the deny cache, whose denials still hold
				// during the outage and would make the count below lower.
				opts := append([]Option{WithClock(clock.Now), WithRetryInterval(time.Hour), WithDenyCache(0)}, tc.opts...)
				lims[i] = New(srv.Client(t), opts...)
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
			// Every instance has stamped its id by its first decision; wait
			// until each has read the count of all three.
			require.Eventually(t, func() bool {
				for _, lim := range lims {
					lim.peers.next.Store(0) // a beat now, not in 10s
					lim.peers.due(lim.client, time.Now())
					if lim.peers.count() != instances {
						return false
					}
				}
				return true
			}, 10*time.Second, 10*time.Millisecond, "the instances count one another through Redis")
			srv.Stop(t)
			call(2)
			call(3)
			t.Logf("%d instances admitted %d calls in one window for Max %d around an outage; the bound is %d", instances, admitted, l.Max, tc.bound)
			require.Equal(t, tc.bound, admitted, "FailLocal admits Max + n*max(1, Max/n), and no more")
		})
	}
}
