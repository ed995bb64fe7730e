package redislimit

import (
	"context"
	"errors"
	"slices"
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
func waitCalls(t testing.TB, srv *redistest.Server) int64 {
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
		keys := make([]string, 16)
		for c := range keys {
			keys[c] = "caller" + strconv.Itoa(c)
		}
		admitEach(t, lim, l, keys, l.Max, func(key string) bool {
			skey := lim.storageKey(l, key)
			want, _ := pc.Dump(ctx, skey).Result()
			for _, r := range replicas {
				if got, _ := r.Client(t).Dump(ctx, skey).Result(); got != want {
					return false
				}
			}
			return true
		}, "batched")
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
	// Room for every attempt that fails once the script ran.
	l := runtime.Limit{Name: "durable.behind", Window: time.Minute, Max: 1000}
	ctx := context.Background()
	awaitDurable(t, lim, l, "k", "durable with the replica up")
	left := remaining(t, lim, l, "k")

	replica.Pause(t)
	paused := true
	defer func() {
		if paused {
			replica.Resume(t)
		}
	}()
	_, err := lim.Allow(ctx, l, "k")
	require.ErrorIs(t, err, ErrNotReplicated)
	require.ErrorIs(t, err, runtime.ErrUnavailable, "FailClosed admits nothing")
	require.Equal(t, left-1, remaining(t, lim, l, "k"), "the unacknowledged call stays counted; a check waits for no replica")

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
	l := runtime.Limit{Name: "durable.gone", Window: time.Minute, Max: 1000}
	ctx := context.Background()
	awaitDurable(t, lim, l, "k", "durable with the replica up")

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
	_, err := New(pc, durableOpts(WithDurable(100*time.Millisecond))...).Check(ctx)
	require.ErrorIs(t, err, ErrNotReplicated, "Check finds the replica missing")
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

// TestDurableSentinel: on a Sentinel-managed server, decisions wait for
// the replica, also after SCRIPT FLUSH (EVAL and WAIT go again), and every
// admission a caller was told of survives a failover: the promoted replica
// denies the next call.
func TestDurableSentinel(t *testing.T) {
	s := redistest.StartSentinel(t)
	lim := New(s.Client(t), durableOpts()...)
	l := runtime.Limit{Name: "durable.sentinel", Window: time.Minute, Max: 6}
	ctx := context.Background()
	master, replica := s.Master(t), s.Replica(t)
	skey := lim.storageKey(l, "k")

	waits := waitCalls(t, master)
	for i := range l.Max {
		if i == l.Max/2 {
			require.NoError(t, master.Client(t).ScriptFlush(ctx).Err())
		}
		d, err := lim.Allow(ctx, l, "k")
		require.NoError(t, err, "call %d", i+1)
		require.True(t, d.Allowed, "call %d", i+1)
		requireReplicated(t, master.Client(t), replica.Client(t), skey, "call "+strconv.Itoa(i+1))
	}
	require.GreaterOrEqual(t, waitCalls(t, master)-waits, int64(l.Max), "every decision waited")

	promoted := s.Failover(t)
	require.Equal(t, replica, promoted)
	var lost bool
	require.Eventually(t, func() bool {
		d, err := lim.Allow(ctx, l, "k")
		lost = lost || (err == nil && d.Allowed)
		return err == nil
	}, switchBound, 10*time.Millisecond, "the promoted master decides, durably, once the old one replicates it")
	require.False(t, lost, "an admission was lost in the failover")
	require.Positive(t, waitCalls(t, promoted), "the promoted master waits for its replica")
}

// TestDurableCluster: on a Cluster, each decision waits for the replica of
// the master that made it, alone, batched, over several slots and after
// SCRIPT FLUSH; a master whose replica is gone decides nothing durably,
// while the other masters go on.
func TestDurableCluster(t *testing.T) {
	c := redistest.StartCluster(t)
	lim := New(c.Client(t), durableOpts()...)
	l := runtime.Limit{Name: "durable.cluster", Window: time.Minute, Max: 1000}
	ctx := context.Background()
	keys := make([]string, 12)
	for i := range keys {
		keys[i] = "user" + strconv.Itoa(i)
	}
	decideAll := func(msg string) {
		t.Helper()
		admitEach(t, lim, l, keys, 5, func(key string) bool {
			skey := lim.storageKey(l, key)
			m := c.MasterFor(t, skey)
			want, _ := m.Client(t).Dump(ctx, skey).Result()
			return replicaDump(ctx, c.ReplicaOf(t, m).Client(t), skey) == want
		}, msg)
	}
	decideAll("first decisions")
	// A call over several slots: one script per slot, each waiting.
	reqs := make([]runtime.Request, 4)
	for i := range reqs {
		reqs[i] = runtime.Request{Limit: l, Key: keys[i]}
	}
	ds, err := lim.Decide(ctx, reqs...)
	require.NoError(t, err)
	require.True(t, ds.Allowed)

	for _, m := range c.Masters() {
		require.NoError(t, m.Client(t).ScriptFlush(ctx).Err())
	}
	decideAll("after SCRIPT FLUSH")
	for _, m := range c.Masters() {
		require.Positive(t, waitCalls(t, m), "%s waited for its replica", m)
	}

	// keys[0]'s slot moves to another master behind the client's back:
	// the decision follows MOVED there, and waits for that master's
	// replica.
	skey := lim.storageKey(l, keys[0])
	from := c.MasterFor(t, skey)
	var to *redistest.Server
	for _, m := range c.Masters() {
		if m != from {
			to = m
			break
		}
	}
	c.MigrateSlot(t, c.KeySlot(t, skey), to)
	toWaits := waitCalls(t, to)
	d, err := lim.Allow(ctx, l, keys[0])
	require.NoError(t, err, "the decision follows the slot")
	require.True(t, d.Allowed)
	require.Greater(t, waitCalls(t, to), toWaits)
	require.Equal(t, replicaDump(ctx, c.ReplicaOf(t, to).Client(t), skey), func() string {
		v, _ := to.Client(t).Dump(ctx, skey).Result()
		return v
	}())

	// keys[1]'s slot is being migrated and the key has left: its master
	// answers ASK, and the decision goes to the importing master, after
	// ASKING, and waits for that master's replica.
	askKey := lim.storageKey(l, keys[1])
	from = c.MasterFor(t, askKey)
	for _, m := range c.Masters() {
		if m != from {
			to = m
			break
		}
	}
	mig := c.BeginSlotMigration(t, c.KeySlot(t, askKey), to)
	mig.MigrateKeys(t, askKey)
	toWaits = waitCalls(t, to)
	d, err = lim.Allow(ctx, l, keys[1])
	require.NoError(t, err, "the decision follows ASK")
	require.True(t, d.Allowed)
	require.Greater(t, waitCalls(t, to), toWaits, "the importing master waited for its replica")
	require.Equal(t, int64(0), from.Client(t).Exists(ctx, askKey).Val(), "the source recorded nothing")
	mig.Finish(t)
	require.Equal(t, replicaDump(ctx, c.ReplicaOf(t, to).Client(t), askKey), func() string {
		v, _ := to.Client(t).Dump(ctx, askKey).Result()
		return v
	}())

	// The replica of keys[0]'s master goes: that master's decisions are
	// not durable, the others' are.
	gone := c.MasterFor(t, lim.storageKey(l, keys[0]))
	c.ReplicaOf(t, gone).Stop(t)
	other := ""
	for _, key := range keys {
		if c.MasterFor(t, lim.storageKey(l, key)) != gone {
			other = key
			break
		}
	}
	require.NotEmpty(t, other)
	require.Eventually(t, func() bool {
		_, err := lim.Allow(ctx, l, keys[0])
		return errors.Is(err, ErrNotReplicated)
	}, 20*time.Second, 10*time.Millisecond, "no durable decision on a master without its replica")
	awaitDurable(t, lim, l, other, "the other masters decide durably")
}

// replicaDump returns what a Cluster replica holds of key: READONLY first,
// on the same connection, or it would redirect the read to its master.
func replicaDump(ctx context.Context, replica *redis.Client, key string) string {
	var dump *redis.StringCmd
	_, _ = replica.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ReadOnly(ctx)
		dump = p.Dump(ctx, key)
		return nil
	})
	return dump.Val()
}

// TestDurableHoldsPermitsLeases: held calls and their settles, permits
// acquired in line, renewed and released, and lease grants all wait for
// the replica (which receives writes replicaLag late) before their callers
// learn of them; while the replica does not acknowledge, a hold and a
// renewal fail with ErrNotReplicated.
func TestDurableHoldsPermitsLeases(t *testing.T) {
	primary := redistest.StartServer(t)
	replica := startReplicas(t, primary, 1, replicaLag)[0]
	pc, rc := primary.Client(t), replica.Client(t)
	lim := New(pc, durableOpts(WithDurable(time.Second), WithLeases(time.Second))...)
	ctx := context.Background()
	rate := runtime.Limit{Name: "durable.hold", Algorithm: runtime.SlidingWindow, Window: time.Minute, Max: 1000}
	conc := runtime.Limit{Name: "durable.permit", Algorithm: runtime.Concurrency, Window: time.Minute, Max: 5}
	rkey, ckey := lim.storageKey(rate, "held"), lim.storageKey(conc, "k")

	ds, h, err := lim.Hold(ctx, runtime.Request{Limit: rate, Key: "held", Cost: 2})
	require.NoError(t, err)
	require.True(t, ds.Allowed)
	requireReplicated(t, pc, rc, rkey, "held call")
	require.NoError(t, h.Settle(ctx, 5))
	requireReplicated(t, pc, rc, rkey, "settle charging more")

	ds, ph, err := lim.HoldWait(ctx, time.Second, runtime.Request{Limit: conc, Key: "k"})
	require.NoError(t, err)
	require.True(t, ds.Allowed)
	requireReplicated(t, pc, rc, ckey, "permit acquired")
	p := ph.(runtime.PermitHold)
	require.NoError(t, p.Renew(ctx))
	requireReplicated(t, pc, rc, ckey, "permit renewed")

	// A hot key leases: the grant's records are on the replica once the
	// lease serves calls.
	hot := runtime.Limit{Name: "durable.lease", Algorithm: runtime.SlidingWindow, Window: time.Minute, Max: 100000}
	awaitSource := func() bool {
		d, err := lim.Decide(ctx, runtime.Request{Limit: hot, Key: "hot"})
		require.NoError(t, err)
		lim.leases.settle()
		return d.Source == runtime.SourceLease
	}
	require.Eventually(t, awaitSource, 10*time.Second, time.Millisecond, "the hot key leases")
	requireReplicated(t, pc, rc, lim.storageKey(hot, "hot")+leaseRecordsSuffix, "lease granted")

	replica.Pause(t)
	defer replica.Resume(t)
	_, _, err = lim.Hold(ctx, runtime.Request{Limit: rate, Key: "held"})
	require.ErrorIs(t, err, ErrNotReplicated)
	time.Sleep(20 * time.Millisecond) // past the retry interval: Redis is asked again
	require.ErrorIs(t, p.Renew(ctx), ErrNotReplicated)
}

// TestDurableMinimalACL: durable decisions work as the user of
// docs/redis.md's ACL, and without +wait or +info the limiter names the
// permission missing.
func TestDurableMinimalACL(t *testing.T) {
	primary := redistest.StartServer(t)
	startReplicas(t, primary, 1, 0)
	rules := docsACL(t)
	l := runtime.Limit{Name: "durable.acl", Window: time.Minute, Max: 3}
	primary.SetUser(t, "ratelimit", rules...)
	lim := New(primary.ClientAs(t, "ratelimit", "secret"), durableOpts()...)
	admitMaxWaiting(t, lim, l, primary)
	waits := waitCalls(t, primary)
	_, err := lim.Check(context.Background())
	require.NoError(t, err)
	require.Greater(t, waitCalls(t, primary), waits, "Check's scripts wait for the replica")

	for _, rule := range []string{"+wait", "+info"} {
		primary.SetUser(t, "ratelimit", slices.DeleteFunc(slices.Clone(rules), func(r string) bool { return r == rule })...)
		_, err := New(primary.ClientAs(t, "ratelimit", "secret"), durableOpts()...).Allow(context.Background(), l, "other")
		require.ErrorIs(t, err, ErrPermission, "without %s", rule)
		require.Contains(t, err.Error(), "add "+rule+" to the user's ACL")
		_, err = New(primary.ClientAs(t, "ratelimit", "secret"), durableOpts()...).Check(context.Background())
		require.ErrorIs(t, err, ErrPermission, "Check, without %s", rule)
		require.Contains(t, err.Error(), "add "+rule+" to the user's ACL", "Check")
	}
}

// TestDurableRing: on a Ring, each decision waits for the replica of the
// shard that made it (a replica that receives writes replicaLag late), and
// each shard keeps its own replica count.
func TestDurableRing(t *testing.T) {
	shards := map[string]*redistest.Server{}
	replicaOf := map[string]*redistest.Server{}
	addrs := map[string]string{}
	for _, name := range []string{"a", "b"} {
		p := redistest.StartServer(t)
		shards[p.Addr()], addrs[name] = p, p.Addr()
		replicaOf[p.Addr()] = startReplicas(t, p, 1, replicaLag)[0]
	}
	ring := redis.NewRing(&redis.RingOptions{Addrs: addrs})
	t.Cleanup(func() { _ = ring.Close() })
	lim := New(ring, durableOpts()...)
	l := runtime.Limit{Name: "durable.ring", Window: time.Minute, Max: 100}
	ctx := context.Background()
	used := map[string]bool{}
	reqs := make([]runtime.Request, 0, 12)
	for i := range 12 {
		key := "user" + strconv.Itoa(i)
		skey := lim.storageKey(l, key)
		d, err := lim.Allow(ctx, l, key)
		require.NoError(t, err)
		require.True(t, d.Allowed)
		shard, err := ring.GetShardClientForKey(skey)
		require.NoError(t, err)
		addr := shard.Options().Addr
		used[addr] = true
		requireReplicated(t, shards[addr].Client(t), replicaOf[addr].Client(t), skey, key)
		reqs = append(reqs, runtime.Request{Limit: l, Key: key})
	}
	require.Len(t, used, 2, "the keys fall on both shards")
	// A call over both shards: one script per slot, each waiting.
	ds, err := lim.Decide(ctx, reqs...)
	require.NoError(t, err)
	require.True(t, ds.Allowed)
	for addr, p := range shards {
		n, err := p.Client(t).Get(ctx, "ratelimit:replicas").Int()
		require.NoError(t, err)
		require.Equal(t, 1, n, "%s keeps its own count", addr)
		require.Positive(t, waitCalls(t, p))
	}
}

// admitEach has lim admit n calls of l for each of keys, the keys at once,
// one goroutine each, and checks after each admission that replicated(key)
// holds.
func admitEach(t *testing.T, lim *Limiter, l runtime.Limit, keys []string, n int, replicated func(key string) bool, msg string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(keys))
	for _, key := range keys {
		wg.Go(func() {
			for range n {
				d, err := lim.Allow(context.Background(), l, key)
				if err == nil && !d.Allowed {
					err = errors.New("denied below Max")
				}
				if err == nil && !replicated(key) {
					err = errors.New("a replica lacks an admitted decision's writes")
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, msg)
	}
}

// TestDurableFailoverCluster: a ClusterClient over a Sentinel-managed
// server (redis.NewFailoverClusterClient) waits for the replica, counted
// as a single server's.
func TestDurableFailoverCluster(t *testing.T) {
	s := redistest.StartSentinel(t)
	client := redis.NewFailoverClusterClient(&redis.FailoverOptions{MasterName: s.MasterName(), SentinelAddrs: s.SentinelAddrs()})
	t.Cleanup(func() { _ = client.Close() })
	lim := New(client, durableOpts()...)
	l := runtime.Limit{Name: "durable.failovercluster", Window: time.Minute, Max: 3}
	master, replica := s.Master(t), s.Replica(t)
	admitMaxWaiting(t, lim, l, master)
	requireReplicated(t, master.Client(t), replica.Client(t), lim.storageKey(l, "k"), "every call")
}

// admitMaxWaiting checks that lim admits exactly l.Max calls on a fresh
// key and denies the next, each decision waiting for primary's replicas.
func admitMaxWaiting(t *testing.T, lim *Limiter, l runtime.Limit, primary *redistest.Server) {
	t.Helper()
	waits := waitCalls(t, primary)
	for i := range l.Max + 1 {
		d, err := lim.Allow(context.Background(), l, "k")
		require.NoError(t, err)
		require.Equal(t, i < l.Max, d.Allowed, "call %d", i+1)
	}
	require.GreaterOrEqual(t, waitCalls(t, primary)-waits, int64(l.Max), "the admissions waited for the replicas")
}
