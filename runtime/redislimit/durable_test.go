package redislimit

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// replicaLag is the latency of the link between a primary and a replica
// behind a DelayProxy: far longer than reading the replica takes, so a
// decision answered before its writes reached the replica is seen.
const replicaLag = 30 * time.Millisecond

// durableOpts are the options of the durable limiters of these tests:
// FailClosed, so that a decision that is not durable is an error the test
// sees, and no deny cache, so that every call reaches Redis.
func durableOpts(extra ...Option) []Option {
	return append([]Option{WithDurable(2 * time.Second), WithFailurePolicy(FailClosed), WithTimeout(5 * time.Second),
		WithRetryInterval(10 * time.Millisecond), WithDenyCache(0), WithInstances(1)}, extra...)
}

// startReplicas makes n new servers replicas of primary, each behind a
// DelayProxy of lag when lag > 0, and returns them once primary reports
// them all online.
func startReplicas(t *testing.T, primary *redistest.Server, n int, lag time.Duration) []*redistest.Server {
	t.Helper()
	host, port := "127.0.0.1", strconv.Itoa(primary.Port())
	if lag > 0 {
		p := redistest.StartDelayProxy(t, primary.Addr(), lag)
		port = strconv.Itoa(p.Port())
	}
	var out []*redistest.Server
	for range n {
		r := redistest.StartServer(t)
		require.NoError(t, r.Client(t).Do(context.Background(), "replicaof", host, port).Err())
		out = append(out, r)
	}
	awaitOnline(t, primary, int64(n))
	// Online, a replica may still be loading what it was sent first.
	acked, err := primary.Client(t).Do(context.Background(), "wait", n, 20000).Int()
	require.NoError(t, err)
	require.Equal(t, n, acked, "every replica acknowledges")
	return out
}

// awaitOnline waits until srv reports n replicas online.
func awaitOnline(t *testing.T, srv *redistest.Server, n int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		info, err := srv.Client(t).Info(context.Background(), "replication").Result()
		_, online := replicationCounts(info)
		return err == nil && online == n
	}, 20*time.Second, 10*time.Millisecond, "%s has %d replicas online", srv, n)
}

// waitCalls returns how many WAITs srv has run.
func waitCalls(t *testing.T, srv *redistest.Server) int64 {
	t.Helper()
	info, err := srv.Client(t).Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	for line := range strings.Lines(info) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_wait:calls="); ok {
			n, err := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	return 0
}

// requireReplicated checks that replica holds key exactly as primary does.
func requireReplicated(t *testing.T, primary, replica *redis.Client, key string, msg string) {
	t.Helper()
	ctx := context.Background()
	want, err := primary.Dump(ctx, key).Result()
	require.NoError(t, err, "%s: %s is on the primary", msg, key)
	got, err := replica.Dump(ctx, key).Result()
	require.NoError(t, err, "%s: %s is on the replica", msg, key)
	require.Equal(t, want, got, "%s: the replica has the decision's writes", msg)
}

// TestDurableWritesOnEveryReplica: the moment a caller learns of an
// admission, every replica holds its writes, although each replica
// receives them replicaLag late; alone (read on the caller's goroutine)
// and in batches.
func TestDurableWritesOnEveryReplica(t *testing.T) {
	primary := redistest.StartServer(t)
	replicas := startReplicas(t, primary, 2, replicaLag)
	pc := primary.Client(t)
	lim := New(pc, durableOpts()...)
	ctx := context.Background()

	t.Run("alone", func(t *testing.T) {
		l := runtime.Limit{Name: "durable.alone", Window: time.Minute, Max: 5}
		skey := lim.storageKey(l, "k")
		for i := range l.Max + 1 {
			d, err := lim.Allow(ctx, l, "k")
			require.NoError(t, err)
			require.Equal(t, i < l.Max, d.Allowed, "call %d", i+1)
			if d.Allowed {
				for _, r := range replicas {
					requireReplicated(t, pc, r.Client(t), skey, "call "+strconv.Itoa(i+1))
				}
			}
		}
	})
	t.Run("batched", func(t *testing.T) {
		// One key per caller, so that what the primary holds of it is
		// that caller's admissions alone.
		l := runtime.Limit{Name: "durable.batched", Window: time.Minute, Max: 4}
		const callers = 16
		var wg sync.WaitGroup
		errs := make(chan error, callers)
		for c := range callers {
			key := "caller" + strconv.Itoa(c)
			skey := lim.storageKey(l, key)
			wg.Go(func() {
				for range l.Max {
					d, err := lim.Allow(ctx, l, key)
					if err == nil && !d.Allowed {
						err = errors.New("denied below Max")
					}
					if err != nil {
						errs <- err
						return
					}
					want, _ := pc.Dump(ctx, skey).Result()
					for _, r := range replicas {
						if got, _ := r.Client(t).Dump(ctx, skey).Result(); got != want {
							errs <- errors.New("a replica lacks an admitted decision's writes")
							return
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	})
}

// TestDurableReplicaBehind: while a replica is connected but does not
// acknowledge (paused), every decision fails with ErrNotReplicated, which
// FailClosed turns into no admission, and its units stay counted on the
// primary; once the replica is back, decisions are durable again.
func TestDurableReplicaBehind(t *testing.T) {
	primary := redistest.StartServer(t)
	replica := startReplicas(t, primary, 1, 0)[0]
	lim := New(primary.Client(t), durableOpts(WithDurable(50*time.Millisecond))...)
	l := runtime.Limit{Name: "durable.behind", Window: time.Minute, Max: 10}
	ctx := context.Background()

	d, err := lim.Allow(ctx, l, "k")
	require.NoError(t, err)
	require.True(t, d.Allowed)

	replica.Pause(t)
	paused := true
	defer func() {
		if paused {
			replica.Resume(t)
		}
	}()
	_, err = lim.Allow(ctx, l, "k")
	require.ErrorIs(t, err, ErrNotReplicated)
	require.ErrorIs(t, err, runtime.ErrUnavailable, "FailClosed admits nothing")
	require.Equal(t, l.Max-2, remaining(t, lim, l, "k"), "the unacknowledged call stays counted; a check waits for no replica")

	replica.Resume(t)
	paused = false
	awaitDurable(t, lim, l, "k", "durable again once the replica acknowledges")
}

// TestDurableReplicaGone: a replica that left still counts (the most
// replicas the primary had), so decisions fail at once, without running
// the script, for this limiter and for one that never saw the replica,
// until an operator lowers the count.
func TestDurableReplicaGone(t *testing.T) {
	primary := redistest.StartServer(t)
	replica := startReplicas(t, primary, 1, 0)[0]
	pc := primary.Client(t)
	lim := New(pc, durableOpts(WithDurable(100*time.Millisecond))...)
	l := runtime.Limit{Name: "durable.gone", Window: time.Minute, Max: 10}
	ctx := context.Background()
	d, err := lim.Allow(ctx, l, "k")
	require.NoError(t, err)
	require.True(t, d.Allowed)

	replica.Stop(t)
	awaitOnline(t, primary, 0)
	fresh := New(pc, durableOpts(WithDurable(100*time.Millisecond))...)
	for _, lim := range []*Limiter{lim, fresh} {
		require.Eventually(t, func() bool {
			_, err := lim.Allow(ctx, l, "k")
			return errors.Is(err, ErrNotReplicated) && errors.Is(err, runtime.ErrUnavailable)
		}, 10*time.Second, 10*time.Millisecond, "no durable decision while the replica is gone")
	}
	// Both limiters have seen the replica gone, and read the count again
	// after their failures: they deny at once.
	time.Sleep(2 * replicasAfterError)
	left, waits := remaining(t, lim, l, "k"), waitCalls(t, primary)
	for _, lim := range []*Limiter{lim, fresh} {
		for range 3 {
			_, err := lim.Allow(ctx, l, "k")
			require.ErrorIs(t, err, ErrNotReplicated)
			time.Sleep(20 * time.Millisecond) // past the retry interval: asked again
		}
	}
	require.Equal(t, left, remaining(t, lim, l, "k"), "denied without running the script")
	require.Equal(t, waits, waitCalls(t, primary), "nor waiting for replicas")
	n, err := pc.Get(ctx, "ratelimit:replicas").Int()
	require.NoError(t, err)
	require.Equal(t, 1, n, "the count is the most replicas the primary had")

	// The replica is gone for good: the operator lowers the count.
	require.NoError(t, pc.Del(ctx, "ratelimit:replicas").Err())
	awaitDurable(t, lim, l, "k", "decisions resume once the count is lowered")
}

// TestDurableSharedWait: concurrent decisions share their round trips'
// WAITs, so far fewer WAITs run than decisions.
func TestDurableSharedWait(t *testing.T) {
	primary := redistest.StartServer(t)
	startReplicas(t, primary, 1, replicaLag)
	lim := New(primary.Client(t), durableOpts()...)
	l := runtime.Limit{Name: "durable.shared", Window: time.Minute, Max: 100000}
	const callers, each = 64, 10
	before := waitCalls(t, primary)
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for c := range callers {
		wg.Go(func() {
			for range each {
				if d, err := lim.Allow(context.Background(), l, "k"+strconv.Itoa(c%8)); err != nil || !d.Allowed {
					errs <- errors.Join(err, errors.New("not admitted"))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	waits := waitCalls(t, primary) - before
	t.Logf("%d WAITs for %d decisions", waits, callers*each)
	require.Positive(t, waits)
	require.Less(t, waits, int64(callers*each/4), "batched decisions share a WAIT")
}

// TestDurableNegativeControl waits for more replicas than the primary has
// (withDurableReplicas): the script runs and counts, the WAIT cannot be
// satisfied, and the call fails with ErrNotReplicated, not resent.
func TestDurableNegativeControl(t *testing.T) {
	primary := redistest.StartServer(t)
	startReplicas(t, primary, 1, 0)
	lim := New(primary.Client(t), durableOpts(WithDurable(20*time.Millisecond), withDurableReplicas(2))...)
	l := runtime.Limit{Name: "durable.control", Window: time.Minute, Max: 10}
	ctx := context.Background()
	// The first call loads the script: its EVALSHA and WAIT go again as
	// EVAL and WAIT.
	_, err := lim.Allow(ctx, l, "warm")
	require.ErrorIs(t, err, ErrNotReplicated)
	waits := waitCalls(t, primary)
	time.Sleep(20 * time.Millisecond) // past the retry interval: asked again
	_, err = lim.Allow(ctx, l, "k")
	require.ErrorIs(t, err, ErrNotReplicated)
	require.Equal(t, waits+1, waitCalls(t, primary))
	require.Equal(t, l.Max-1, remaining(t, lim, l, "k"), "the script ran once: the call stays counted, and was not sent again")
}

// remaining returns what Peek reports of l for key, once the breaker lets
// it ask Redis.
func remaining(t *testing.T, lim *Limiter, l runtime.Limit, key string) int {
	t.Helper()
	var left int
	require.Eventually(t, func() bool {
		ds, err := lim.Peek(context.Background(), runtime.Request{Limit: l, Key: key})
		if err == nil {
			left = ds.Each[0].Remaining
		}
		return err == nil
	}, 10*time.Second, 5*time.Millisecond)
	return left
}

// awaitDurable waits until lim admits a call of l for key.
func awaitDurable(t *testing.T, lim *Limiter, l runtime.Limit, key, msg string) {
	t.Helper()
	require.Eventually(t, func() bool {
		d, err := lim.Allow(context.Background(), l, key)
		return err == nil && d.Allowed
	}, 10*time.Second, 10*time.Millisecond, msg)
}
