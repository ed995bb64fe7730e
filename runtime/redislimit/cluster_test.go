package redislimit

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestCluster runs the Limiter against a real six-node Redis Cluster.
// Starting a cluster is the expensive part, so one cluster serves every
// subtest; they run in order, and the ones that change the topology
// (failover, a crashed master) come last.
func TestCluster(t *testing.T) {
	c := redistest.StartCluster(t)
	client := c.Client(t)

	// strict returns a limiter on which any Redis failure is an error and a
	// degraded event, so that a subtest can insist Redis made every decision.
	strict := func(t *testing.T, opts ...Option) (*Limiter, *degradedLog) {
		events := &degradedLog{}
		t.Cleanup(func() {
			if n := events.len(); n > 0 {
				t.Errorf("%d decisions were degraded; the first: %+v", n, events.since(0)[0])
			}
		})
		opts = append([]Option{WithFailurePolicy(FailClosed), WithTimeout(5 * time.Second),
			WithOnDegraded(events.record)}, opts...)
		return New(client, opts...), events
	}

	t.Run("keys of one limit spread over slots and masters", func(t *testing.T) {
		testClusterSpread(t, c, client, strict)
	})
	t.Run("each key is limited exactly", func(t *testing.T) {
		testClusterExact(t, client, strict)
	})
	t.Run("concurrent decisions share pipelines, exactly", func(t *testing.T) {
		testClusterBatching(t, strict)
	})
	t.Run("decisions on several slots of a node share a script call, exactly", func(t *testing.T) {
		testClusterNodeBatches(t, c, strict)
	})
	t.Run("a spread batch over a slot that moved or is moving", func(t *testing.T) {
		testClusterSpreadMoves(t, c, strict)
	})
	t.Run("a node that refuses spread batches", func(t *testing.T) {
		testClusterSpreadRefused(t, c, strict)
	})
	t.Run("a call over two slots of one node is one script call", func(t *testing.T) {
		testClusterCallOnOneNode(t, c, strict)
	})
	t.Run("modes, with limits on several slots", func(t *testing.T) {
		testClusterModes(t, client)
	})
	t.Run("MOVED: the count moves with its slot", func(t *testing.T) {
		testClusterMoved(t, c, client, strict)
	})
	t.Run("ASK: decisions during a slot migration", func(t *testing.T) {
		testClusterAsk(t, c, client, strict)
	})
	t.Run("NOSCRIPT after SCRIPT FLUSH on the key's master", func(t *testing.T) {
		testClusterNoScript(t, c, client, strict)
	})
	t.Run("a caller's deadline on a frozen master gets the policy's answer", func(t *testing.T) {
		testClusterCallerDeadline(t, c, client)
	})
	t.Run("an evicting policy on one master is reported", func(t *testing.T) {
		testClusterEvictionPolicy(t, c, client)
	})
	t.Run("a failover while batches run", func(t *testing.T) {
		testClusterFailoverMidBatches(t, c, client)
	})
	t.Run("manual failover", func(t *testing.T) {
		testClusterFailover(t, c, client, strict)
	})
	t.Run("crashed master replaced by its replica", func(t *testing.T) {
		testClusterCrashedMaster(t, c, client)
	})
}

// strictLimiter builds a limiter that fails closed and records degraded
// events; see TestCluster.
type strictLimiter func(t *testing.T, opts ...Option) (*Limiter, *degradedLog)

// awkwardKey returns the i-th of a family of user keys full of the bytes
// that mean something to Redis Cluster or to key parsers: braces (hash
// tags), colons (namespaces) and asterisks (patterns).
func awkwardKey(i int) string {
	switch i % 6 {
	case 0:
		return fmt.Sprintf("{user%d}", i)
	case 1:
		return fmt.Sprintf("}%d{", i)
	case 2:
		return fmt.Sprintf("a:b:%d:c", i)
	case 3:
		return fmt.Sprintf("*%d*{x}", i)
	case 4:
		return fmt.Sprintf("{}%d{}", i)
	default:
		return fmt.Sprintf("user%d@example.com", i)
	}
}

func testClusterSpread(t *testing.T, c *redistest.Cluster, client *redis.ClusterClient, strict strictLimiter) {
	lim, _ := strict(t)
	l := runtime.Limit{Name: "cluster.spread", Window: time.Minute, Max: 2}
	const keys = 200
	want := map[string]bool{}
	for i := 0; i < keys; i++ {
		k := awkwardKey(i)
		d, err := lim.Allow(context.Background(), l, k)
		require.NoError(t, err, "key %q", k)
		require.True(t, d.Allowed, "key %q", k)
		want[storageKeyOf(l, k)] = true
	}
	require.Len(t, want, keys, "distinct user keys must have distinct storage keys")

	// Find the storage keys where Redis put them: SCAN each master.
	found := map[string]*redistest.Server{}
	for _, m := range c.Masters() {
		iter := m.Client(t).Scan(context.Background(), 0, defaultPrefix+"*", 1000).Iterator()
		for iter.Next(context.Background()) {
			if k := iter.Val(); want[k] {
				require.NotContains(t, found, k, "storage key %q on two masters", k)
				found[k] = m
			}
		}
		require.NoError(t, iter.Err())
	}
	require.Len(t, found, keys, "every admission must be stored on some master")

	masters := map[*redistest.Server]int{}
	slots := map[int]bool{}
	for k, m := range found {
		masters[m]++
		slot := c.KeySlot(t, k)
		slots[slot] = true

		// Exactly one hash tag, right after the prefix, holding the 8 hex
		// digits of the tag: whatever braces the user key holds come later
		// and cannot choose the slot.
		require.True(t, strings.HasPrefix(k, defaultPrefix+"{"), "storage key %q", k)
		open := len(defaultPrefix)
		closing := strings.IndexByte(k[open:], '}')
		require.Equal(t, 9, closing, "storage key %q must have an 8-digit hash tag", k)
		tag := k[open+1 : open+closing]
		require.Regexp(t, "^[0-9a-f]{8}$", tag)
		require.Equal(t, c.KeySlot(t, tag), slot, "the slot of %q must be the slot of its tag alone", k)
	}
	require.GreaterOrEqual(t, len(masters), 2, "200 keys of one limit must not all land on one master: %v", masters)
	require.Greater(t, len(slots), keys/2, "200 keys of one limit should spread over many slots")
	t.Logf("200 keys: %d slots, keys per master %v", len(slots), masterCounts(masters))

	// User braces do not pick the slot: keys sharing a brace-delimited part
	// would all hash to one slot if they did.
	same := map[int]bool{}
	for _, k := range []string{"{same}a", "{same}b", "{same}c", "{same}d"} {
		same[c.KeySlot(t, storageKeyOf(l, k))] = true
	}
	require.Greater(t, len(same), 1, "keys that share a {tag} landed in one slot: user braces chose the slot")
}

func masterCounts(m map[*redistest.Server]int) []int {
	var out []int
	for _, n := range m {
		out = append(out, n)
	}
	return out
}

func testClusterExact(t *testing.T, client *redis.ClusterClient, strict strictLimiter) {
	clock := newFakeClock()
	lim, _ := strict(t, WithClock(clock.Now))
	l := runtime.Limit{Name: "cluster.exact", Window: time.Minute, Max: 3}
	var keys []string
	for i := 0; i < 24; i++ {
		keys = append(keys, awkwardKey(i))
	}
	for round := 0; round < 2; round++ {
		for _, k := range keys {
			for i := 0; i < l.Max; i++ {
				d, err := lim.Allow(context.Background(), l, k)
				require.NoError(t, err)
				require.True(t, d.Allowed, "round %d, key %q, call %d", round, k, i+1)
				require.Equal(t, l.Max-1-i, d.Remaining, "round %d, key %q, call %d", round, k, i+1)
			}
			d, err := lim.Allow(context.Background(), l, k)
			require.NoError(t, err)
			require.False(t, d.Allowed, "round %d, key %q: more than Max admitted", round, k)
			require.Equal(t, l.Window, d.RetryAfter, "round %d, key %q", round, k)
			require.Equal(t, int64(l.Max), zcard(t, client, l, k), "round %d, key %q", round, k)
		}
		clock.Advance(l.Window + time.Millisecond)
	}
}

// migrationTarget returns a master other than the one serving slot.
func migrationTarget(t *testing.T, c *redistest.Cluster, slot int) *redistest.Server {
	from := c.MasterForSlot(t, slot)
	for _, m := range c.Masters() {
		if m != from {
			return m
		}
	}
	t.Fatalf("no master other than %s", from)
	return nil
}

func testClusterMoved(t *testing.T, c *redistest.Cluster, client *redis.ClusterClient, strict strictLimiter) {
	clock := newFakeClock()
	lim, _ := strict(t, WithClock(clock.Now))
	l := runtime.Limit{Name: "cluster.moved", Window: time.Minute, Max: 5}
	const key = "hot@example.com"
	skey := storageKeyOf(l, key)
	slot := c.KeySlot(t, skey)

	for i := 0; i < 3; i++ {
		d, err := lim.Allow(context.Background(), l, key)
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	to := migrationTarget(t, c, slot)
	c.MigrateSlot(t, slot, to)
	require.Equal(t, to, c.MasterFor(t, skey))

	// The client still maps the slot to the old master, which answers MOVED.
	for i := 3; i < l.Max; i++ {
		d, err := lim.Allow(context.Background(), l, key)
		require.NoError(t, err)
		require.True(t, d.Allowed, "call %d", i+1)
		require.Equal(t, l.Max-1-i, d.Remaining, "call %d: the count must have moved with the slot", i+1)
	}
	d, err := lim.Allow(context.Background(), l, key)
	require.NoError(t, err)
	require.False(t, d.Allowed, "the slot's new master admitted more than Max")
	require.Equal(t, l.Window, d.RetryAfter)
	require.Equal(t, int64(l.Max), logLen(t, to.Client(t), skey), "the new master must hold every admission")

	clock.Advance(l.Window + time.Millisecond)
	d, err = lim.Allow(context.Background(), l, key)
	require.NoError(t, err)
	require.True(t, d.Allowed, "a new window admits again")
}

func testClusterAsk(t *testing.T, c *redistest.Cluster, client *redis.ClusterClient, strict strictLimiter) {
	clock := newFakeClock()
	lim, _ := strict(t, WithClock(clock.Now))
	l := runtime.Limit{Name: "cluster.ask", Window: time.Minute, Max: 4}
	const key = "ask@example.com"
	skey := storageKeyOf(l, key)
	slot := c.KeySlot(t, skey)
	allowed := func(want bool, remaining int, what string) {
		t.Helper()
		d, err := lim.Allow(context.Background(), l, key)
		require.NoError(t, err, what)
		require.Equal(t, want, d.Allowed, what)
		require.Equal(t, remaining, d.Remaining, what)
	}

	allowed(true, 3, "before the migration")
	m := c.BeginSlotMigration(t, slot, migrationTarget(t, c, slot))
	allowed(true, 2, "slot migrating, key still on the source")
	m.MigrateKeys(t, skey)
	// The source no longer has the key and answers ASK; the target, which
	// has never run the script, answers NOSCRIPT first.
	allowed(true, 1, "key moved to the target, slot not yet reassigned (ASK)")
	allowed(true, 0, "ASK again")
	allowed(false, 0, "ASK: the target must see every admission")
	m.Finish(t)
	allowed(false, 0, "after the migration")
	require.Equal(t, int64(l.Max), logLen(t, m.To().Client(t), skey))
}

func testClusterFailover(t *testing.T, c *redistest.Cluster, client *redis.ClusterClient, strict strictLimiter) {
	clock := newFakeClock()
	lim, _ := strict(t, WithClock(clock.Now))
	l := runtime.Limit{Name: "cluster.failover", Window: time.Minute, Max: 3}
	const key = "failover@example.com"
	skey := storageKeyOf(l, key)

	for i := 0; i < 2; i++ {
		d, err := lim.Allow(context.Background(), l, key)
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	old := c.MasterFor(t, skey)
	promoted := c.Failover(t, old)
	require.Equal(t, promoted, c.MasterFor(t, skey))

	// A coordinated failover waits for the replica to catch up, so the
	// count survives: one more admission, then a denial. (An unplanned
	// failover can lose the admissions not yet replicated; see
	// testClusterCrashedMaster.)
	d, err := lim.Allow(context.Background(), l, key)
	require.NoError(t, err, "decisions must resume on the promoted master without an error")
	require.True(t, d.Allowed)
	require.Equal(t, 0, d.Remaining, "the promoted master must hold the admissions made before the failover")
	d, err = lim.Allow(context.Background(), l, key)
	require.NoError(t, err)
	require.False(t, d.Allowed)
}

// testClusterCrashedMaster kills a master outright. Until its replica is
// promoted the slot has no master, so decisions for keys there degrade to
// the local fallback; afterwards they go back to Redis by themselves.
func testClusterCrashedMaster(t *testing.T, c *redistest.Cluster, client *redis.ClusterClient) {
	clock := newFakeClock()
	events := &degradedLog{}
	lim := New(client, WithClock(clock.Now), WithRetryInterval(10*time.Millisecond), WithInstances(1),
		WithOnDegraded(events.record))
	l := runtime.Limit{Name: "cluster.crash", Window: time.Minute, Max: 1000}
	const key = "crash@example.com"
	skey := storageKeyOf(l, key)

	d, err := lim.Allow(context.Background(), l, key)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.Zero(t, events.len())

	master := c.MasterFor(t, skey)
	replica := c.ReplicaOf(t, master).Client(t)
	master.Stop(t)
	d, err = lim.Allow(context.Background(), l, key)
	require.NoError(t, err, "FailLocal decides while the slot has no master")
	require.True(t, d.Allowed)
	require.NotZero(t, events.len(), "a decision for a key on a dead master must be reported as degraded")
	require.Equal(t, FailLocal, events.since(0)[0].Policy)

	// The cluster promotes the replica after cluster-node-timeout. Wait
	// for that first: how long the cluster takes is not the limiter's doing.
	deadline := time.Now().Add(30 * time.Second)
	for {
		role, err := replica.Do(context.Background(), "ROLE").Slice()
		require.NoError(t, err)
		if role[0] == "master" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica of the stopped master was not promoted within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	promoted := time.Now()
	// Then the limiter must find the new master without help.
	awaitRedisDecides(t, lim, events, l, key)
	t.Logf("limiter used the promoted master %v after its promotion", time.Since(promoted))
	require.NotEqual(t, master, c.MasterFor(t, skey))
	n := zcard(t, client, l, key)
	// What the replica had received before the crash survives; an
	// admission still in flight to it may not, so only a range is certain:
	// at least the admission made just now, at most every Redis admission.
	require.GreaterOrEqual(t, n, int64(1))
	require.LessOrEqual(t, n, int64(2))
	t.Logf("after the crash the promoted replica holds %d of the 2 admissions Redis made", n)
}
