package redislimit

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// testClusterCallerDeadline freezes the master of one key (for far less
// than the cluster's node timeout, so no failover starts) and decides that
// key with a caller deadline far shorter than the limiter's timeout: the
// decision must come back by about the caller's deadline with the policy's
// answer, reported, and the check of Redis that follows must open the
// breaker, releasing a caller without a deadline that waits meanwhile.
func testClusterCallerDeadline(t *testing.T, c *redistest.Cluster, client *redis.ClusterClient) {
	events := &degradedLog{}
	lim := New(client, WithFailurePolicy(FailOpen), WithTimeout(time.Minute),
		WithRetryInterval(time.Hour), WithOnDegraded(events.record))
	l := runtime.Limit{Name: "cluster.deadline", Window: time.Minute, Max: 3}
	const key = "frozen-master"
	d, err := lim.Allow(context.Background(), l, key)
	require.NoError(t, err)
	require.True(t, d.Allowed)

	master := c.MasterFor(t, storageKeyOf(l, key))
	master.Pause(t)
	paused := true
	defer func() {
		if paused {
			master.Resume(t)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	d, err = lim.Allow(ctx, l, key)
	blocked := time.Since(start)
	t.Logf("blocked %v with a caller deadline of 50ms", blocked)
	require.Less(t, blocked, hungCallBound, "the decision waited for the limiter's timeout, not the caller's deadline")
	require.NoError(t, err)
	require.True(t, d.Allowed, "FailOpen answers")
	evs := events.since(0)
	require.Len(t, evs, 1)
	require.Contains(t, evs[0].Err.Error(), "the caller's deadline")

	done := make(chan error, 1)
	go func() {
		_, err := lim.Allow(context.Background(), l, key)
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(hungCallBound):
		t.Fatalf("the breaker did not open: a call without a deadline waited for the frozen master")
	}
	master.Resume(t)
	paused = false
	require.NoError(t, err)
	require.ErrorIs(t, events.since(1)[0].Err, ErrCircuitOpen, "the check of the frozen master opened the breaker")
}

// testClusterEvictionPolicy gives one master an evicting policy and checks
// that the limiter's report names that master, once.
func testClusterEvictionPolicy(t *testing.T, c *redistest.Cluster, client *redis.ClusterClient) {
	master := c.Masters()[1]
	admin := master.Client(t)
	bg := context.Background()
	require.NoError(t, admin.ConfigSet(bg, "maxmemory", "1gb").Err())
	require.NoError(t, admin.ConfigSet(bg, "maxmemory-policy", "volatile-ttl").Err())
	t.Cleanup(func() {
		_ = admin.ConfigSet(bg, "maxmemory-policy", "noeviction").Err()
		_ = admin.ConfigSet(bg, "maxmemory", "0").Err()
	})
	events := &degradedLog{}
	lim := New(client, WithFailurePolicy(FailClosed), WithOnDegraded(events.record))
	l := runtime.Limit{Name: "cluster.eviction", Window: time.Minute, Max: 1000}
	checkConfigNow(t, lim, l)
	checkConfigNow(t, lim, l)
	evs := riskEvents(events)
	require.Len(t, evs, 1, "one master may evict: reported once")
	msg := evs[0].Err.Error()
	t.Logf("reported: %s", msg)
	require.Contains(t, msg, master.Addr()+" has maxmemory-policy volatile-ttl")
	for _, other := range c.Masters() {
		if other != master {
			require.False(t, strings.Contains(msg, other.Addr()), "%s runs noeviction", other)
		}
	}
}
