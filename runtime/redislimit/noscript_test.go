package redislimit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// scriptLoaded reports whether the server behind c has the sliding-log
// script in its cache.
func scriptLoaded(t *testing.T, c *redis.Client) bool {
	t.Helper()
	ok, err := c.ScriptExists(context.Background(), algoScripts[runtime.SlidingLog].Hash()).Result()
	require.NoError(t, err)
	return ok[0]
}

// TestNoScript empties a real server's script cache under a running limiter
// and checks that decisions go on, exact, without an error or a degraded
// event: the limiter must reload the script by itself.
func TestNoScript(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	flush := func(t *testing.T) {
		t.Helper()
		require.NoError(t, client.ScriptFlush(context.Background()).Err())
		require.False(t, scriptLoaded(t, client))
	}

	t.Run("SCRIPT FLUSH mid-run", func(t *testing.T) {
		clock := newFakeClock()
		events := &degradedLog{}
		lim := New(client, WithClock(clock.Now), WithFailurePolicy(FailClosed),
			WithOnDegraded(events.record))
		l := runtime.Limit{Name: "noscript.flush", Window: time.Minute, Max: 3}
		allowed := func(want bool, remaining int) {
			t.Helper()
			d, err := lim.Allow(context.Background(), l, "k")
			require.NoError(t, err)
			require.Equal(t, want, d.Allowed)
			require.Equal(t, remaining, d.Remaining)
		}

		allowed(true, 2)
		require.True(t, scriptLoaded(t, client))
		flush(t)
		allowed(true, 1)
		require.True(t, scriptLoaded(t, client), "the limiter must load the script again")
		flush(t)
		allowed(true, 0)
		flush(t)
		allowed(false, 0)
		require.Zero(t, events.len(), "NOSCRIPT must be handled, not reported as an outage")
	})

	t.Run("SCRIPT FLUSH under concurrent load", func(t *testing.T) {
		events := &degradedLog{}
		// Server time here: many goroutines, one window of an hour.
		lim := New(client, WithFailurePolicy(FailClosed), WithTimeout(5*time.Second),
			WithOnDegraded(events.record))
		l := runtime.Limit{Name: "noscript.concurrent", Window: time.Hour, Max: 150}
		const (
			workers = 8
			calls   = 40 // per worker: 320 calls for 150 admissions
		)
		var (
			admitted atomic.Int64
			wg       sync.WaitGroup
			errs     = make(chan error, workers*calls)
		)
		// Flush the cache over and over while the workers run.
		stopFlushing := flushScripts(client, time.Millisecond)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < calls; i++ {
					d, err := lim.Allow(context.Background(), l, "hot")
					if err != nil {
						errs <- err
						return
					}
					if d.Allowed {
						admitted.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		n, err := stopFlushing()
		require.NoError(t, err, "SCRIPT FLUSH")
		close(errs)
		for err := range errs {
			t.Errorf("a decision failed while the script cache was being flushed: %v", err)
		}
		require.Equal(t, int64(l.Max), admitted.Load(), "exactly Max admissions, flushes or not")
		require.Equal(t, int64(l.Max), zcard(t, client, l, "hot"))
		require.Zero(t, events.len())
		require.Greater(t, n, 0)
		t.Logf("%d SCRIPT FLUSHes during %d decisions", n, workers*calls)
	})

	t.Run("restarted server has an empty script cache", func(t *testing.T) {
		clock := newFakeClock()
		events := &degradedLog{}
		lim := New(client, WithClock(clock.Now), WithRetryInterval(10*time.Millisecond),
			WithOnDegraded(events.record))
		l := runtime.Limit{Name: "noscript.restart", Window: time.Minute, Max: 2}
		d, err := lim.Allow(context.Background(), l, "k")
		require.NoError(t, err)
		require.True(t, d.Allowed)
		require.True(t, scriptLoaded(t, client))

		srv.Stop(t)
		srv.Start(t)
		require.False(t, scriptLoaded(t, client), "a restarted server starts with no scripts")
		before := events.len()
		d, err = lim.Allow(context.Background(), l, "k")
		require.NoError(t, err)
		require.Equal(t, before, events.len(), "the first call after a restart must be decided by Redis")
		require.True(t, d.Allowed)
		require.Equal(t, l.Max-1, d.Remaining, "the restarted server holds no admissions")
		require.True(t, scriptLoaded(t, client))
		require.Equal(t, int64(1), zcard(t, client, l, "k"))
	})
}

// testClusterNoScript flushes the script cache of only the key's master,
// so the other masters keep theirs; run by TestCluster on its cluster.
func testClusterNoScript(t *testing.T, c *redistest.Cluster, client *redis.ClusterClient, strict strictLimiter) {
	clock := newFakeClock()
	lim, _ := strict(t, WithClock(clock.Now))
	l := runtime.Limit{Name: "cluster.noscript", Window: time.Minute, Max: 3}
	const key = "noscript@example.com"
	skey := storageKeyOf(l, key)
	allowed := func(want bool, remaining int) {
		t.Helper()
		d, err := lim.Allow(context.Background(), l, key)
		require.NoError(t, err)
		require.Equal(t, want, d.Allowed)
		require.Equal(t, remaining, d.Remaining)
	}

	allowed(true, 2)
	master := c.MasterFor(t, skey).Client(t)
	require.True(t, scriptLoaded(t, master))
	require.NoError(t, master.ScriptFlush(context.Background()).Err())
	require.False(t, scriptLoaded(t, master))
	allowed(true, 1)
	require.True(t, scriptLoaded(t, master), "the limiter must load the script on the flushed master")
	allowed(true, 0)
	allowed(false, 0)
}

// flushScripts flushes client's script cache again and again, pause
// apart, until the function it returns is called; that returns how many
// flushes there were, and the error that stopped them, if any.
func flushScripts(client redis.UniversalClient, pause time.Duration) (stop func() (int, error)) {
	done := make(chan struct{})
	type result struct {
		n   int
		err error
	}
	out := make(chan result, 1)
	go func() {
		var r result
		defer func() { out <- r }()
		for {
			select {
			case <-done:
				return
			default:
			}
			if r.err = client.ScriptFlush(context.Background()).Err(); r.err != nil {
				return
			}
			r.n++
			time.Sleep(pause)
		}
	}()
	return func() (int, error) {
		close(done)
		r := <-out
		return r.n, r.err
	}
}
