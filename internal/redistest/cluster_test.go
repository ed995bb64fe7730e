package redistest

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCluster shares one cluster between steps that build on each other, to
// keep the package's tests fast.
func TestCluster(t *testing.T) {
	c := StartCluster(t)
	ctx := context.Background()
	cc := c.Client(t)

	require.Len(t, c.Addrs(), 6)
	require.NoError(t, c.checkHealthy())
	ids := map[string]bool{}
	for _, n := range c.Nodes() {
		require.Len(t, n.ID(), 40)
		ids[n.ID()] = true
	}
	require.Len(t, ids, 6, "every node has its own ID")
	require.Len(t, c.Masters(), 3)
	require.Len(t, c.Replicas(), 3)
	for _, m := range c.Masters() {
		require.NotEqual(t, m, c.ReplicaOf(t, m))
	}

	// Keys spread over many slots are readable, and each lives on the node
	// MasterFor names: asked directly, that node answers instead of
	// redirecting.
	perMaster := map[*Server]int{}
	for i := range 200 {
		k := fmt.Sprintf("key:%d", i)
		require.NoError(t, cc.Set(ctx, k, i, 0).Err())
	}
	direct := map[*Server]func(string) (string, error){}
	for _, m := range c.Masters() {
		cl := m.Client(t)
		direct[m] = func(k string) (string, error) { return cl.Get(ctx, k).Result() }
	}
	for i := range 200 {
		k := fmt.Sprintf("key:%d", i)
		require.Equal(t, fmt.Sprint(i), cc.Get(ctx, k).Val())
		m := c.MasterFor(t, k)
		perMaster[m]++
		got, err := direct[m](k)
		require.NoError(t, err, "MasterFor(%q) = %s must serve it", k, m)
		require.Equal(t, fmt.Sprint(i), got)
	}
	require.Len(t, perMaster, 3, "200 keys must land on all three masters")

	t.Run("MigrateSlot", func(t *testing.T) {
		const k = "key:7"
		from := c.MasterFor(t, k)
		to := otherMaster(t, c, from)
		c.MigrateSlot(t, c.KeySlot(t, k), to)

		require.Equal(t, to, c.MasterFor(t, k))
		require.Equal(t, "7", cc.Get(ctx, k).Val(), "the cluster client follows MOVED to the new owner")
		_, err := from.Client(t).Get(ctx, k).Result()
		require.ErrorContains(t, err, "MOVED")
		got, err := to.Client(t).Get(ctx, k).Result()
		require.NoError(t, err)
		require.Equal(t, "7", got)
	})

	t.Run("SlotMigrationAsk", func(t *testing.T) {
		const k = "key:8"
		from := c.MasterFor(t, k)
		m := c.BeginSlotMigration(t, c.KeySlot(t, k), otherMaster(t, c, from))
		m.MigrateKeys(t, k)

		_, err := from.Client(t).Get(ctx, k).Result()
		require.ErrorContains(t, err, "ASK", "a moved key of a migrating slot is redirected with ASK")
		require.Equal(t, "8", cc.Get(ctx, k).Val(), "the cluster client follows ASK")
		require.Equal(t, from, c.MasterFor(t, k), "the source serves the slot until Finish")

		m.Finish(t)
		require.Equal(t, m.To(), c.MasterFor(t, k))
		require.Equal(t, "8", cc.Get(ctx, k).Val())
	})

	t.Run("Failover", func(t *testing.T) {
		const k = "key:9"
		old := c.MasterFor(t, k)
		promoted := c.Failover(t, old)

		require.Equal(t, promoted, c.MasterFor(t, k))
		require.Contains(t, c.Replicas(), old, "the old master becomes a replica")
		require.Equal(t, old, c.ReplicaOf(t, promoted))
		require.Equal(t, "9", cc.Get(ctx, k).Val())
		require.NoError(t, cc.Set(ctx, k, "after", 0).Err())
		require.Equal(t, "after", cc.Get(ctx, k).Val())
	})

	t.Run("FailoverOfStoppedMaster", func(t *testing.T) {
		const k = "key:10"
		old := c.MasterFor(t, k)
		old.Stop(t)
		promoted := c.Failover(t, old)
		require.Equal(t, promoted, c.MasterFor(t, k))
		v, err := c.Client(t).Get(ctx, k).Result()
		require.NoError(t, err)
		require.Equal(t, "10", v)

		// Restarted, the old master rejoins as a replica of its successor.
		old.Start(t)
		c.awaitHealthy(t, "rejoin")
		require.Equal(t, old, c.ReplicaOf(t, promoted))
	})
}

// otherMaster returns a master other than m.
func otherMaster(t *testing.T, c *Cluster, m *Server) *Server {
	t.Helper()
	for _, o := range c.Masters() {
		if o != m {
			return o
		}
	}
	t.Fatalf("no master other than %s", m)
	return nil
}

// TestClusterTwoReplicas: StartClusterWith gives each of the three masters
// as many replicas as asked.
func TestClusterTwoReplicas(t *testing.T) {
	t.Parallel()
	c := StartClusterWith(t, 2)
	require.Len(t, c.Nodes(), 9)
	require.Len(t, c.Masters(), 3)
	require.Len(t, c.Replicas(), 6)
	for _, m := range c.Masters() {
		rs := c.ReplicasOf(t, m)
		require.Len(t, rs, 2)
		require.Contains(t, rs, c.ReplicaOf(t, m))
	}
}
