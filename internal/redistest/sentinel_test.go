package redistest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// clientAddr returns the address of the server that c's commands reach, as
// that server reports its own port.
func clientAddr(t *testing.T, c *redis.Client) string {
	t.Helper()
	info, err := c.Info(context.Background(), "server").Result()
	require.NoError(t, err)
	port, ok := infoField(info, "tcp_port")
	require.True(t, ok, "INFO server without tcp_port")
	return net.JoinHostPort("127.0.0.1", port)
}

// TestSentinelFailover: graceful SENTINEL FAILOVERs keep the data, the
// failover client follows them, and the old master comes back as the
// replica, so that failing over again returns to the first layout.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	s := StartSentinel(t)
	ctx := context.Background()
	require.Equal(t, "mymaster", s.MasterName())
	addrs := s.SentinelAddrs()
	require.Len(t, addrs, 3)
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		require.NoError(t, err)
		require.Equal(t, "127.0.0.1", host)
	}
	require.NotEqual(t, addrs[0], addrs[1])
	require.NotEqual(t, addrs[1], addrs[2])

	servers := s.Servers()
	require.Len(t, servers, 2)
	first, second := servers[0], servers[1]
	require.Equal(t, first, s.Master(t))
	require.Equal(t, second, s.Replica(t))

	c := s.Client(t)
	require.NoError(t, c.Set(ctx, "k", "before", 0).Err())
	got, err := first.Client(t).Get(ctx, "k").Result()
	require.NoError(t, err)
	require.Equal(t, "before", got, "the failover client writes to the master")

	start := time.Now()
	require.Equal(t, second, s.Failover(t))
	t.Logf("SENTINEL FAILOVER settled after %v", time.Since(start))
	require.Equal(t, second, s.Master(t))
	got, err = second.Client(t).Get(ctx, "k").Result()
	require.NoError(t, err)
	require.Equal(t, "before", got, "a graceful failover keeps what was replicated")
	require.Eventually(t, func() bool { return clientAddr(t, c) == second.Addr() }, 15*time.Second, 20*time.Millisecond,
		"the failover client must move to the promoted master")
	require.NoError(t, c.Set(ctx, "k", "after", 0).Err())

	start = time.Now()
	require.Equal(t, first, s.Replica(t), "the sentinels turn the old master into the replica")
	t.Logf("old master demoted after another %v", time.Since(start))
	got, err = first.Client(t).Get(ctx, "k").Result()
	require.NoError(t, err)
	require.Equal(t, "after", got, "the demoted master replicates the new one")

	require.Equal(t, first, s.Failover(t), "a second failover promotes the first master again")
	require.Equal(t, second, s.Replica(t))
	require.Eventually(t, func() bool { return c.Get(ctx, "k").Val() == "after" && clientAddr(t, c) == first.Addr() },
		15*time.Second, 20*time.Millisecond)
}

// TestSentinelStoppedMaster: stopping the master makes the sentinels
// promote the replica by themselves, and the restarted old master, empty,
// rejoins as a replica of its successor.
func TestSentinelStoppedMaster(t *testing.T) {
	t.Parallel()
	s := StartSentinel(t)
	ctx := context.Background()
	master, replica := s.Master(t), s.Replica(t)
	c := s.Client(t)
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	require.Equal(t, replica, s.Replica(t), "Replica waits for the write to reach the replica")

	master.Stop(t)
	start := time.Now()
	require.Equal(t, replica, s.Master(t), "Master waits for the sentinels to promote the replica")
	t.Logf("automatic failover settled after %v", time.Since(start))
	require.Eventually(t, func() bool { return c.Get(ctx, "k").Val() == "v" }, 15*time.Second, 20*time.Millisecond,
		"the failover client must reach the promoted replica, which has the replicated write")

	master.Start(t)
	require.Equal(t, master, s.Replica(t), "the restarted old master must rejoin as the replica")
	got, err := master.Client(t).Get(ctx, "k").Result()
	require.NoError(t, err)
	require.Equal(t, "v", got, "the rejoined replica syncs from the new master")
}

func TestFieldMap(t *testing.T) {
	m, err := fieldMap([]any{"name", "mymaster", "num-slaves", int64(1)})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"name": "mymaster", "num-slaves": "1"}, m)

	_, err = fieldMap([]any{"odd"})
	require.ErrorContains(t, err, "field-value list")
	_, err = fieldMap("OK")
	require.ErrorContains(t, err, "field-value list")
}

// TestSentinelHeldReplicaPromoted: the fault that loses acknowledged
// writes is real. With the master's stream to one replica held, a write
// acknowledged by the master and by the other replica is lost when the
// master dies and the sentinels promote the held replica, which they prefer
// for its lower replica-priority; the other replica then resyncs from it
// and loses the write too.
func TestSentinelHeldReplicaPromoted(t *testing.T) {
	t.Parallel()
	s := StartSentinelWith(t,
		WithReplicas(2),
		WithServerOptionsAt(1, WithArgs("--replica-priority", "10")),
		WithFailoverTimeout(20*time.Second),
	)
	ctx := context.Background()
	servers := s.Servers()
	require.Len(t, servers, 3)
	master := s.Master(t)
	require.Equal(t, servers[0], master)
	require.Equal(t, servers[1:], s.Replicas(t))
	require.Equal(t, servers[1], s.Replica(t))
	held, other := servers[1], servers[2]

	p := s.ReplicateThrough(t, held)
	c := s.Client(t)
	require.NoError(t, c.Set(ctx, "k", "kept", 0).Err())
	require.Equal(t, servers[1:], s.Replicas(t), "a replica behind an open proxy catches up like any other")
	got, err := held.Client(t).Get(ctx, "k").Result()
	require.NoError(t, err)
	require.Equal(t, "kept", got)
	require.Equal(t, 1, p.Connections())

	p.Hold()
	mc := master.Client(t)
	require.NoError(t, mc.Set(ctx, "k", "lost", 0).Err())
	// WAIT counts the acknowledgements on this connection's writes: the
	// other replica gives one (WAIT 1 0 blocks until it does), the held one
	// none, however long WAIT 2 waits.
	n, err := mc.Wait(ctx, 1, 0).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	n, err = mc.Wait(ctx, 2, 100*time.Millisecond).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the held replica must not acknowledge")
	require.Eventually(t, func() bool { return p.Held() > 0 }, 15*time.Second, 10*time.Millisecond,
		"the write's stream must reach the proxy and stay there")
	got, err = held.Client(t).Get(ctx, "k").Result()
	require.NoError(t, err)
	require.Equal(t, "kept", got, "the held replica must not have the write")

	master.Stop(t)
	require.Equal(t, held, s.Master(t), "the sentinels must promote the replica of lowest priority")
	require.Positive(t, p.Dropped(), "what the proxy held died with the master")
	got, err = held.Client(t).Get(ctx, "k").Result()
	require.NoError(t, err)
	require.Equal(t, "kept", got, "the promoted replica never had the write")
	require.Equal(t, []*Server{other}, s.Replicas(t), "the other replica follows the promoted one")
	got, err = other.Client(t).Get(ctx, "k").Result()
	require.NoError(t, err)
	require.Equal(t, "kept", got, "the other replica, which had the write, resynced and lost it")
	require.Eventually(t, func() bool { return c.Get(ctx, "k").Val() == "kept" }, 15*time.Second, 20*time.Millisecond,
		"the failover client reads the promoted replica, without the write")
}
