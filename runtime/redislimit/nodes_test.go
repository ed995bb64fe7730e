package redislimit

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// clusterScripts is how many scripts the Cluster's masters have run.
func clusterScripts(t *testing.T, c *redistest.Cluster) int {
	n := 0
	for _, m := range c.Masters() {
		n += evalCalls(t, m)
	}
	return n
}

// testClusterNodeBatches: 64 callers on two limiters decide calls over
// keys of many slots on every master. Each node's calls share script
// calls, and every key still admits exactly Max.
func testClusterNodeBatches(t *testing.T, c *redistest.Cluster, strict strictLimiter) {
	var lims []*Limiter
	for range 2 {
		lim, _ := strict(t, WithDenyCache(0))
		lims = append(lims, lim)
	}
	l := runtime.Limit{Name: "cluster.nodes", Window: time.Hour, Max: 20}
	keys := stormKeys(48)
	slots := map[int]bool{}
	for _, k := range keys {
		slots[c.KeySlot(t, storageKeyOf(l, k))] = true
	}
	require.Greater(t, len(slots), 24, "the keys must spread over many slots")
	// Each caller asks once for every key: 64 calls per key.
	const callers, calls = 64, 48
	before := clusterScripts(t, c)
	admitted := storm(t, lims, callers, calls, keys, l)
	scripts := clusterScripts(t, c) - before
	for _, k := range keys {
		require.Equal(t, l.Max, admitted[k], "key %q", k)
	}
	// A pipeline of one script call per decision would take callers*calls.
	require.Less(t, scripts, callers*calls, "no decisions of several slots shared a script call")
	t.Logf("%d decisions over %d slots in %d script calls", callers*calls, len(slots), scripts)
}

// nodeKeys returns n user keys of l whose storage keys are on n different
// slots that master serves.
func nodeKeys(t *testing.T, c *redistest.Cluster, master *redistest.Server, l runtime.Limit, n int) []string {
	var keys []string
	slots := map[int]bool{}
	for i := 0; len(keys) < n; i++ {
		k := fmt.Sprint("node", i, "@example.com")
		skey := storageKeyOf(l, k)
		if slot := c.KeySlot(t, skey); !slots[slot] && c.MasterFor(t, skey) == master {
			slots[slot] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// spread has a Cluster node's lane send a batch of a call per key of l,
// and returns the calls' verdicts.
func spread(t *testing.T, lim *Limiter, l runtime.Limit, keys ...string) []verdict {
	b := newBatcher(lim, laneNode)
	var batch []*call
	f := newFlight(context.Background(), len(keys), connectBound{})
	for _, k := range keys {
		d := &resolvedCall{now: -1, asks: lim.resolve(nil, []runtime.Request{{Limit: l, Key: k}})}
		c := b.newCall(d, []int{0})
		c.flight = f
		batch = append(batch, c)
	}
	b.fly(0, batch, lim.client)
	var vs []verdict
	for i, c := range batch {
		require.NoError(t, c.err, "key %q", keys[i])
		require.Equal(t, c.d.vs[0].ok, c.committed)
		vs = append(vs, c.d.vs[0])
	}
	return vs
}

// testClusterSpreadMoves: a spread batch whose keys include some of a slot
// that moved (MOVED) or is moving (ASK) since the client mapped it. The
// script stops at the first such key, having written nothing for it, and
// the calls from there on go one by one: every call counts exactly once.
func testClusterSpreadMoves(t *testing.T, c *redistest.Cluster, strict strictLimiter) {
	clock := newFakeClock()
	lim, _ := strict(t, WithClock(clock.Now))
	client := lim.client.(*redis.ClusterClient)
	l := runtime.Limit{Name: "cluster.spread.moves", Window: time.Minute, Max: 3}
	master := c.Masters()[0]
	keys := nodeKeys(t, c, master, l, 5)
	remaining := func(want ...int) {
		t.Helper()
		vs := spread(t, lim, l, keys...)
		for i, v := range vs {
			require.Equal(t, want[i] >= 0, v.ok, "key %d", i)
			require.Equal(t, int64(max(want[i], 0)), v.remaining, "key %d", i)
		}
	}
	remaining(2, 2, 2, 2, 2)

	// The client still maps keys[1]'s slot to master; keys[3]'s is
	// migrating, and keys[3] is at the target already.
	moved := c.KeySlot(t, storageKeyOf(l, keys[1]))
	to := migrationTarget(t, c, moved)
	c.MigrateSlot(t, moved, to)
	moving := c.KeySlot(t, storageKeyOf(l, keys[3]))
	m := c.BeginSlotMigration(t, moving, migrationTarget(t, c, moving))
	m.MigrateKeys(t, storageKeyOf(l, keys[3]))
	remaining(1, 1, 1, 1, 1)

	client.ReloadState(context.Background())
	remaining(0, 0, 0, 0, 0)
	remaining(-1, -1, -1, -1, -1)
	m.Finish(t)
	for i, k := range keys {
		require.Equal(t, int64(l.Max), logLen(t, client, storageKeyOf(l, k)), "key %d holds every admission once", i)
	}
}

// testClusterSpreadRefused: a node that refuses scripts touching keys of
// a slot they do not declare (as Redis does for a script with flags that
// lack allow-cross-slot-keys) stops the first spread batch at its second
// slot; those calls go one by one, and so does every later batch.
func testClusterSpreadRefused(t *testing.T, c *redistest.Cluster, strict strictLimiter) {
	l := runtime.Limit{Name: "cluster.spread.refused", Window: time.Minute, Max: 2}
	code := algoSpecs[runtime.SlidingLog].code
	plain := codeScripts[code]
	codeScripts[code] = newScript("#!lua\n" + plain.src.(string))
	t.Cleanup(func() { codeScripts[code] = plain })

	lim, _ := strict(t)
	keys := nodeKeys(t, c, c.Masters()[1], l, 4)
	for _, want := range []int{1, 0} {
		for i, v := range spread(t, lim, l, keys...) {
			require.True(t, v.ok, "key %d", i)
			require.Equal(t, int64(want), v.remaining, "key %d", i)
		}
		require.True(t, lim.lanes.refused.Load(), "the refusal was not noticed")
	}
	b := newBatcher(lim, laneNode)
	require.Equal(t, lanePipeline, b.sends([]*call{
		b.newCall(&resolvedCall{asks: lim.resolve(nil, []runtime.Request{{Limit: l, Key: keys[0]}})}, []int{0}),
		b.newCall(&resolvedCall{asks: lim.resolve(nil, []runtime.Request{{Limit: l, Key: keys[1]}})}, []int{0}),
	}))
	for i, k := range keys {
		require.Equal(t, int64(l.Max), logLen(t, lim.client, storageKeyOf(l, k)), "key %d holds every admission once", i)
	}
}

// TestRingShardBatches: on a Ring of two servers, each shard's concurrent
// calls share script calls, and every key still admits exactly Max.
func TestRingShardBatches(t *testing.T) {
	a, b := redistest.StartServer(t), redistest.StartServer(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": a.Addr(), "b": b.Addr()}})
	t.Cleanup(func() { _ = ring.Close() })
	lim := New(ring, WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithDenyCache(0), WithInstances(1))
	l := runtime.Limit{Name: "ring.shards", Window: time.Hour, Max: 20, Algorithm: runtime.GCRA}
	keys := stormKeys(48)
	const callers, calls = 64, 48
	before := evalCalls(t, a) + evalCalls(t, b)
	admitted := storm(t, []*Limiter{lim}, callers, calls, keys, l)
	scripts := evalCalls(t, a) + evalCalls(t, b) - before
	for _, k := range keys {
		require.Equal(t, l.Max, admitted[k], "key %q", k)
	}
	require.Less(t, scripts, callers*calls, "no decisions shared a script call")
	on := 0
	for _, s := range []*redistest.Server{a, b} {
		n, err := s.Client(t).DBSize(context.Background()).Result()
		require.NoError(t, err)
		if n > 0 {
			on++
		}
	}
	require.Equal(t, 2, on, "the keys must spread over both shards")
	t.Logf("%d decisions in %d script calls", callers*calls, scripts)
}

// testClusterFailoverMidBatches: callers keep deciding over keys of every
// master while one master fails over to its replica (coordinated, so no
// acknowledged write is lost). Decisions may fail meanwhile, but no key
// admits more than Max, and the promoted master holds every admission a
// caller was told of.
func testClusterFailoverMidBatches(t *testing.T, c *redistest.Cluster, client *redis.ClusterClient) {
	lim := New(client, WithFailurePolicy(FailClosed), WithTimeout(5*time.Second), WithDenyCache(0))
	l := runtime.Limit{Name: "cluster.failover.batches", Window: time.Hour, Max: 300}
	master := c.Masters()[0]
	keys := append(nodeKeys(t, c, master, l, 16), stormKeys(16)...)
	var (
		mu       sync.Mutex
		admitted = map[string]int{}
		after    atomic.Int64
		failed   atomic.Int64
		stop     = make(chan struct{})
		promoted atomic.Bool
		wg       sync.WaitGroup
	)
	for g := range 32 {
		wg.Go(func() {
			for i := g; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := keys[i%len(keys)]
				ds, err := lim.Decide(context.Background(), runtime.Request{Limit: l, Key: k})
				switch {
				case err != nil:
					failed.Add(1)
				case ds.Allowed:
					mu.Lock()
					admitted[k]++
					mu.Unlock()
				}
				if promoted.Load() && err == nil {
					after.Add(1)
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	c.Failover(t, master)
	promoted.Store(true)
	require.Eventually(t, func() bool { return after.Load() >= 200 }, 30*time.Second, 10*time.Millisecond,
		"decisions must resume after the failover")
	close(stop)
	wg.Wait()
	total := 0
	for _, k := range keys {
		stored := logLen(t, client, storageKeyOf(l, k))
		require.LessOrEqual(t, admitted[k], l.Max, "key %q admitted more than Max", k)
		require.GreaterOrEqual(t, stored, int64(admitted[k]), "key %q: the promoted master lost admissions", k)
		total += admitted[k]
	}
	require.Greater(t, total, 0)
	t.Logf("%d admissions; %d decisions failed during the failover", total, failed.Load())
}

// testClusterCallOnOneNode: a call whose limits' keys are of two slots of
// one master is one script call there, all or nothing, with no refund to
// make; the same call over two masters still goes slot by slot.
func testClusterCallOnOneNode(t *testing.T, c *redistest.Cluster, strict strictLimiter) {
	clock := newFakeClock()
	lim, _ := strict(t, WithClock(clock.Now), WithInstances(1))
	a := runtime.Limit{Name: "cluster.onenode.a", Window: time.Minute, Max: 2}
	b := runtime.Limit{Name: "cluster.onenode.b", Window: time.Minute, Max: 1}
	master := c.Masters()[2]
	ka := nodeKeys(t, c, master, a, 1)[0]
	var kb string
	for _, k := range nodeKeys(t, c, master, b, 2) {
		if c.KeySlot(t, storageKeyOf(b, k)) != c.KeySlot(t, storageKeyOf(a, ka)) {
			kb = k
			break
		}
	}
	call := []runtime.Request{{Limit: a, Key: ka}, {Limit: b, Key: kb}}
	// The client maps the nodes, and the master loads the script.
	_, err := lim.Allow(context.Background(), a, nodeKeys(t, c, master, a, 2)[1])
	require.NoError(t, err)
	require.Len(t, lim.groups(lim.resolve(nil, call)), 2, "the call's keys must be of two slots")
	decide := func(want bool, remaining ...int) {
		t.Helper()
		before := evalCalls(t, master)
		ds, err := lim.Decide(context.Background(), call...)
		require.NoError(t, err)
		require.Equal(t, want, ds.Allowed)
		for i, r := range remaining {
			require.Equal(t, r, ds.Each[i].Remaining, "limit %d", i)
		}
		require.Equal(t, 1, evalCalls(t, master)-before, "one script call decides the call")
	}
	decide(true, 1, 0)
	decide(false, 1, 0)
	require.Equal(t, int64(1), logLen(t, master.Client(t), storageKeyOf(a, ka)), "a denied call recorded nothing")
	markers, err := master.Client(t).Keys(context.Background(), defaultPrefix+"*refund*").Result()
	require.NoError(t, err)
	require.Empty(t, markers, "nothing to refund")

	// kb's slot moves to another master, which the client learns only
	// when it asks: the call's script stops before it wrote anything, and
	// the call goes slot by slot; it counts once either way.
	clock.Advance(a.Window + time.Millisecond)
	slot := c.KeySlot(t, storageKeyOf(b, kb))
	to := migrationTarget(t, c, slot)
	c.MigrateSlot(t, slot, to)
	for i, want := range []bool{true, false} {
		ds, err := lim.Decide(context.Background(), call...)
		require.NoError(t, err)
		require.Equal(t, want, ds.Allowed, "call %d after the move", i)
	}
	require.Equal(t, int64(1), logLen(t, master.Client(t), storageKeyOf(a, ka)), "a's key holds the one admission of this window")
	require.Equal(t, int64(1), logLen(t, to.Client(t), storageKeyOf(b, kb)), "b's key moved with its slot and counts once")
}

// TestReadSpread reads the replies a spread batch may give: every call
// decided; a stop after the first, with the error that stopped it; and
// replies no script gives, which fail every call.
func TestReadSpread(t *testing.T) {
	lim := New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), WithInstances(1))
	b := newBatcher(lim, laneNode)
	l := runtime.Limit{Name: "read.spread", Window: time.Minute, Max: 5}
	batch := func() []*call {
		var cs []*call
		for _, k := range []string{"a", "b", "c"} {
			cs = append(cs, b.newCall(&resolvedCall{now: -1, asks: lim.resolve(nil, []runtime.Request{{Limit: l, Key: k}})}, []int{0}))
		}
		return cs
	}
	nums := func(n ...int64) string {
		var s []byte
		for _, v := range n {
			s = binary.LittleEndian.AppendUint64(s, uint64(v))
		}
		return string(s)
	}
	// remaining*2 + allowed, retry, reset per call.
	all := batch()
	_, left, stop := readSpread(nil, nums(3, 9, 0, 1, 0, 0, 1, 3, 0, 5), nil, all, true)
	require.Empty(t, left)
	require.Empty(t, stop)
	require.Equal(t, []bool{true, false, true}, []bool{all[0].committed, all[1].committed, all[2].committed})
	require.Equal(t, int64(4), all[0].d.vs[0].remaining)

	some := batch()
	_, left, stop = readSpread(nil, nums(1, 7, 0, 0)+"ERR non local key", nil, some, true)
	require.Equal(t, some[1:], left)
	require.Equal(t, "ERR non local key", stop)
	require.NoError(t, some[0].err)
	require.True(t, some[0].committed)

	for _, reply := range []string{"", nums(4), nums(2, 1, 0, 0)} {
		bad := batch()
		_, left, _ = readSpread(nil, reply, nil, bad, true)
		require.Empty(t, left, "reply %x", reply)
		for _, c := range bad {
			require.Error(t, c.err, "reply %x", reply)
		}
	}
}
