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

// A lone decision on a *redis.Client is read on its caller's goroutine
// (see batcher.decide). These tests check what that promises beyond the
// pause tests: a cancellation arriving once it is sent does not cut it
// short, and one that cannot get a connection within its period is handed
// to a round trip of its own instead of being taken for an outage.

// loneTimeout is the limiter's timeout in these tests: long enough that
// the orchestration's sleeps fit in it with room on a loaded machine.
const loneTimeout = 2 * time.Second

// TestLoneReadOutlivesCancellation freezes Redis, cancels a lone decision
// that is waiting for its reply, then resumes Redis: the decision is
// Redis's.
func TestLoneReadOutlivesCancellation(t *testing.T) {
	srv := redistest.StartServer(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	events := &degradedLog{}
	lim := New(client, WithTimeout(loneTimeout), WithOnDegraded(events.record))
	l := runtime.Limit{Name: "lone.cancel", Window: time.Minute, Max: 3}
	require.NotNil(t, lim.direct, "a default client's lone decisions are read by their callers")
	// A healthy call first, so that the pool holds a connection.
	_, err := lim.Allow(context.Background(), l, "k")
	require.NoError(t, err)

	srv.Pause(t)
	paused := true
	t.Cleanup(func() {
		if paused {
			srv.Resume(t)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		ds  runtime.Decisions
		err error
	}
	done := make(chan result, 1)
	go func() {
		ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: "k"})
		done <- result{ds, err}
	}()
	time.Sleep(loneTimeout / 10)
	cancel()
	time.Sleep(loneTimeout / 10)
	srv.Resume(t)
	paused = false
	res := <-done
	require.NoError(t, res.err, "a lone decision once sent is waited for, whatever its context")
	require.Equal(t, runtime.SourceStore, res.ds.Source)
	require.True(t, res.ds.Allowed, "the second of Max 3")
	require.Zero(t, events.len())
}

// TestLoneCallWithoutConnectionIsResent holds the only connection of a
// client's pool with a blocking command for longer than a lone decision's
// period to connect: the decision is handed on and made by Redis once the
// connection is free.
func TestLoneCallWithoutConnectionIsResent(t *testing.T) {
	srv := redistest.StartServer(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 1})
	t.Cleanup(func() { _ = client.Close() })
	events := &degradedLog{}
	lim := New(client, WithTimeout(loneTimeout), WithOnDegraded(events.record))
	l := runtime.Limit{Name: "lone.noconn", Window: time.Minute, Max: 3}
	require.NotNil(t, lim.direct)
	ctx := context.Background()
	require.NoError(t, client.Ping(ctx).Err())

	// Twice the period that directBound leaves for getting a connection,
	// and well within the rest of the timeout.
	hold := 2 * periodOf(loneTimeout)
	blocked := make(chan error, 1)
	go func() { blocked <- client.BLPop(ctx, hold, "lone.nothing").Err() }()
	require.Eventually(t, func() bool { return client.PoolStats().IdleConns == 0 }, loneTimeout, time.Millisecond,
		"the blocking command never took the pool's connection")
	d, err := lim.Allow(ctx, l, "k")
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.Zero(t, events.len(), "a decision that waited for a connection was taken for an outage")
	require.ErrorIs(t, <-blocked, redis.Nil, "the blocking command timed out empty")
	require.Equal(t, int64(1), zcard(t, srv.Client(t), l, "k"), "Redis recorded the decision once")
}
