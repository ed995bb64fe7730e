package redislimit

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestFailLocalOutageBound checks the bounds WithInstances states for
// FailLocal, with three instances: a window that an outage cuts in two
// admits at most Max + n*max(1, Max/n), what Redis admitted before the
// outage plus each instance's share, and, since every instance's fallback is
// exact, reaches it, when the instances learn n from Redis or are told it.
// Instances that never learn n (Redis is down from their start, or refuses
// the beat) admit nothing beyond what Redis admitted.
func TestFailLocalOutageBound(t *testing.T) {
	const instances = 3
	for _, tc := range []struct {
		name string
		max  int
		algo runtime.Algorithm
		opts []Option
		// acl, when set, are the rules of the user the instances log in
		// as; downFirst starts them with Redis already down.
		acl       []string
		downFirst bool
		// before is what the instances admit while Redis is up; bound is
		// what the window admits in all.
		before, bound int
	}{
		// 20 + 3*6: the share rounds down.
		{name: "learned", max: 20, before: 20, bound: 38},
		// 7 + 3*2, at most 2*Max.
		{name: "WithInstances", max: 7, opts: []Option{WithInstances(instances)}, before: 7, bound: 13},
		// 2 + 3*1: a share is at least 1, so n > Max admits Max + n.
		{name: "share of at least 1", max: 2, opts: []Option{WithInstances(instances)}, before: 2, bound: 5},
		// The fleet starts during the outage: no instance knows n.
		{name: "never learned", max: 6, downFirst: true, before: 0, bound: 0},
		// Redis decides (a fixed window needs no sorted set) but refuses
		// the beat, which stamps ids in one: n stays unknown.
		{name: "beat refused", max: 6, algo: runtime.FixedWindow, acl: []string{"+@all", "-@sortedset"}, before: 6, bound: 6},
		// Without TIME neither the scripts nor the beat run: every
		// decision is FailLocal's, and n is never known.
		{name: "no TIME", max: 6, acl: []string{"+@all", "-time"}, before: 0, bound: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.StartServer(t)
			l := runtime.Limit{Name: "outage.bound", Window: time.Minute, Max: tc.max, Algorithm: tc.algo}
			opt := &redis.Options{Addr: srv.Addr()}
			if tc.acl != nil {
				rules := append([]any{"acl", "setuser", "limiter", "on", ">secret", "~*"}, toAny(tc.acl)...)
				require.NoError(t, srv.Client(t).Do(context.Background(), rules...).Err())
				opt.Username, opt.Password = "limiter", "secret"
			}
			if tc.downFirst {
				srv.Stop(t)
			}
			lims := make([]*Limiter, instances)
			for i := range lims {
				// Each instance has its own client, as separate processes
				// would. Without the deny cache, whose denials still hold
				// during the outage and would make the count below lower.
				// Redis's clock decides, so that an ACL without TIME is
				// felt.
				client := redis.NewClient(opt)
				t.Cleanup(func() { _ = client.Close() })
				opts := append([]Option{WithRetryInterval(time.Hour), WithDenyCache(0)}, tc.opts...)
				lims[i] = New(client, opts...)
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
			require.Equal(t, tc.before, admitted, "while Redis is up the instances share one exact count")
			if !tc.downFirst {
				// Every instance has started its beat by its first
				// decision; wait until each beat has ended, and has read
				// the count of all three unless the ACL refuses it.
				beaten := map[*Limiter]bool{}
				require.Eventually(t, func() bool {
					done := true
					for _, lim := range lims {
						if lim.peers.running.Load() {
							done = false
							continue
						}
						n, known := lim.peers.count()
						if known != (tc.bound > tc.before) || known && n != instances || !beaten[lim] {
							done = false
							beaten[lim] = true
							lim.peers.next.Store(0) // a beat now, not in 10s
							lim.peers.due(lim.client, time.Now())
						}
					}
					return done
				}, 10*time.Second, 10*time.Millisecond, "the instances count one another through Redis")
				srv.Stop(t)
			}
			call(2)
			call(3)
			t.Logf("%d instances admitted %d calls in one window for Max %d around an outage; the bound is %d", instances, admitted, l.Max, tc.bound)
			require.Equal(t, tc.bound, admitted, "FailLocal admits Max + n*max(1, Max/n) when n is known, nothing more when it is not")
			if tc.bound == tc.before {
				ds, err := lims[0].Decide(ctx, runtime.Request{Limit: l, Key: "k"})
				require.NoError(t, err)
				require.Equal(t, runtime.SourceFallback, ds.Source)
				require.ErrorIs(t, ds.Cause, ErrInstancesUnknown, "the denial says why")
				require.Positive(t, ds.Each[0].RetryAfter)
			}
		})
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
