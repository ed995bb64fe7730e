package redislimit

import (
	"context"
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

// switchBound bounds how long, once the sentinels agree on a promoted
// master, the limiter's decisions may take to reach it. A go-redis failover
// client moves when its sentinel announces +switch-master, or when a
// connection to the old master breaks and a new dial asks the sentinels;
// either takes a moment, never 15 s. Decisions in between may fail (under
// FailClosed): the test tolerates that for this long, and no longer.
const switchBound = 15 * time.Second

// TestSentinel runs the Limiter on a go-redis failover client
// (redis.NewFailoverClient) against real sentinels watching a real master
// and replica. Each subtest has its own setup, since each ends with a
// different master, and they run in parallel to keep the test short.
func TestSentinel(t *testing.T) {
	t.Run("graceful failover", func(t *testing.T) {
		t.Parallel()
		testSentinelFailover(t)
	})
	t.Run("crashed master", func(t *testing.T) {
		t.Parallel()
		testSentinelCrashedMaster(t)
	})
}

// testSentinelFailover holds a limit exactly, fails over with SENTINEL
// FAILOVER, and checks that the count survives, that decisions resume on
// the promoted master by themselves, and that the script, which a replica
// never has, is loaded there transparently.
func testSentinelFailover(t *testing.T) {
	s := redistest.StartSentinel(t)
	client := s.Client(t)
	clock := newFakeClock()
	events := &degradedLog{}
	// FailClosed, so any decision Redis did not make is an error this test
	// sees; a generous timeout, so that only a real failure is one.
	// Without the deny cache: the test needs every call to reach Redis.
	lim := New(client, WithClock(clock.Now), WithFailurePolicy(FailClosed),
		WithTimeout(5*time.Second), WithRetryInterval(10*time.Millisecond), WithOnDegraded(events.record), WithDenyCache(0))
	l := runtime.Limit{Name: "sentinel.failover", Window: time.Minute, Max: 3}
	const key = "alice@example.com"
	old, replica := s.Master(t), s.Replica(t)
	oldClient, replicaClient := old.Client(t), replica.Client(t)

	admitThenDeny(t, lim, l, key)
	require.Zero(t, events.len(), "Redis must make every decision while the master is healthy")
	require.Equal(t, int64(l.Max), zcard(t, oldClient, l, key), "the admissions are stored on the master")
	require.True(t, scriptLoaded(t, oldClient))
	require.False(t, scriptLoaded(t, replicaClient),
		"a replica receives the script's writes, not the script: after a failover the limiter must load it")

	// A caller keeps deciding on the full key while the sentinels fail
	// over, as a live service would, until its decisions have reached the
	// promoted master (which then has the script).
	caller := startCaller(lim, l, key)
	t.Cleanup(func() { caller.stop() }) // should the test end early
	promoted := s.Failover(t)
	require.Equal(t, replica, promoted)
	deadline := time.Now().Add(switchBound)
	for !scriptLoaded(t, replicaClient) {
		if time.Now().After(deadline) {
			res := caller.stop()
			t.Fatalf("%v after the sentinels promoted %s the limiter still has not run its script there "+
				"(%d decisions during the failover, %d failed, last error: %v)",
				switchBound, promoted, res.calls, len(res.errs), res.lastErr())
		}
		time.Sleep(10 * time.Millisecond)
	}
	res := caller.stop()
	t.Logf("during the failover: %d decisions, %d denied, %d failed (last error: %v)",
		res.calls, res.denied, len(res.errs), res.lastErr())
	// Decisions in the switch may fail, when a connection to the old master
	// is closed under the client or the old master refuses writes once
	// demoted. Under FailClosed those must be ErrUnavailable: an outage, not
	// a denial. Every decision Redis made must be a denial, on either
	// server: the count survived the failover.
	require.Zero(t, res.admitted, "the limit was full before the failover: an admission means the count was lost")
	require.Equal(t, res.calls, res.denied+len(res.errs))
	for _, err := range res.errs {
		require.ErrorIs(t, err, runtime.ErrUnavailable, "a failure during the switch must be reported as an outage")
		require.NotErrorIs(t, err, runtime.ErrLimited)
	}
	require.Equal(t, len(res.errs), events.len(), "every failed decision, and only those, must be reported as degraded")
	require.Positive(t, commandStat(t, replicaClient, "evalsha", "failed_calls"),
		"the promoted master must have answered NOSCRIPT to EVALSHA, and the limiter sent EVAL instead")

	// Once switched, no error leaks: the promoted master denies the full
	// window by itself.
	before := events.len()
	d, err := lim.Allow(context.Background(), l, key)
	require.NoError(t, err)
	require.False(t, d.Allowed)
	require.Equal(t, l.Window, d.RetryAfter)

	// From now on Redis, on the promoted master, makes every decision: a
	// new window admits exactly Max there.
	clock.Advance(l.Window + time.Millisecond)
	admitThenDeny(t, lim, l, key)
	require.Equal(t, before, events.len(), "no decision may fail once the client has switched")
	require.Equal(t, int64(l.Max), zcard(t, replicaClient, l, key), "the new window's admissions are on the promoted master")
	require.Equal(t, int64(l.Max), zcard(t, client, l, key))
}

// testSentinelCrashedMaster kills the master. Until the sentinels promote
// the replica, decisions follow the default FailLocal policy; afterwards
// they go back to Redis without help.
func testSentinelCrashedMaster(t *testing.T) {
	s := redistest.StartSentinel(t)
	client := s.Client(t)
	clock := newFakeClock()
	events := &degradedLog{}
	// A timeout above the default so that, on a busy machine, the healthy
	// decisions below are surely Redis's; a dead master still costs a
	// caller at most this long.
	lim := New(client, WithClock(clock.Now), WithTimeout(time.Second), WithInstances(1),
		WithRetryInterval(10*time.Millisecond), WithOnDegraded(events.record))
	l := runtime.Limit{Name: "sentinel.crash", Window: time.Minute, Max: 3}
	const key = "bob@example.com"
	master, replica := s.Master(t), s.Replica(t)

	admitThenDeny(t, lim, l, key)
	require.Zero(t, events.len(), "Redis must make every decision while the master is healthy")
	require.Equal(t, int64(l.Max), zcard(t, master.Client(t), l, key))

	// Replication is asynchronous: wait until the replica has the three
	// admissions, so that what survives the crash is certain.
	require.Equal(t, replica, s.Replica(t))
	master.Stop(t)
	// The sentinels need at least down-after-milliseconds (3 s) to call the
	// master down, so the sentinels still name the dead master and this
	// decision cannot reach Redis: the local fallback makes it. Its
	// window for the key is empty, so it admits.
	const outageKey = "carol@example.com"
	for i := 0; i < l.Max+1; i++ {
		d, err, degraded := allowDirect(lim, events, l, outageKey)
		require.NoError(t, err, "FailLocal decides while there is no master")
		if i == 0 {
			require.True(t, degraded, "a decision while the master is dead must be reported as degraded")
		}
		if !degraded {
			break // the sentinels were fast; the fallback's count is moot
		}
		require.Equal(t, i < l.Max, d.Allowed, "the fallback enforces Max on its own (call %d)", i+1)
	}
	evs := events.since(0)
	require.NotEmpty(t, evs)
	require.Equal(t, FailLocal, evs[0].Policy)
	require.NotErrorIs(t, evs[0].Err, ErrCircuitOpen, "the first failure must carry the client's own error")
	t.Logf("first degraded decision's cause: %v", evs[0].Err)

	// How long the sentinels take to promote the replica is not the
	// limiter's doing: wait for it first.
	require.Equal(t, replica, s.Master(t), "the sentinels must promote the replica")
	promoted := time.Now()
	d := awaitRedisDecides(t, lim, events, l, outageKey)
	t.Logf("limiter used the promoted master %v after the sentinels agreed on it", time.Since(promoted))
	require.True(t, d.Allowed, "Redis never saw the outage's decisions, so it admits")
	require.Equal(t, l.Max-1, d.Remaining)
	require.Equal(t, int64(1), zcard(t, replica.Client(t), l, outageKey), "the decision is stored on the promoted master")

	// The admissions replicated before the crash survived it: the full
	// window is denied by Redis on the promoted master.
	d, err, degraded := allowDirect(lim, events, l, key)
	require.NoError(t, err)
	require.False(t, degraded, "once recovered, decisions stay with Redis")
	require.False(t, d.Allowed, "the admissions the replica had received must survive the crash")
	require.Equal(t, int64(l.Max), zcard(t, client, l, key))
}

// admitThenDeny checks that lim admits exactly l.Max calls for key at the
// current instant, with Redis making every decision, and denies the next.
func admitThenDeny(t *testing.T, lim *Limiter, l runtime.Limit, key string) {
	t.Helper()
	for i := 0; i < l.Max; i++ {
		d, err := lim.Allow(context.Background(), l, key)
		require.NoError(t, err, "call %d", i+1)
		require.True(t, d.Allowed, "call %d", i+1)
		require.Equal(t, l.Max-1-i, d.Remaining, "call %d", i+1)
	}
	d, err := lim.Allow(context.Background(), l, key)
	require.NoError(t, err)
	require.False(t, d.Allowed, "call %d is beyond Max", l.Max+1)
	require.Equal(t, l.Window, d.RetryAfter)
}

// caller decides on one key in a loop, from its own goroutine, until
// stopped, as a service handling requests would.
type caller struct {
	done chan struct{}
	out  chan callerResult
	once sync.Once
	res  callerResult
}

// callerResult tallies a caller's decisions.
type callerResult struct {
	calls, admitted, denied int
	errs                    []error
}

func (r callerResult) lastErr() error {
	if len(r.errs) == 0 {
		return nil
	}
	return r.errs[len(r.errs)-1]
}

func startCaller(lim *Limiter, l runtime.Limit, key string) *caller {
	c := &caller{done: make(chan struct{}), out: make(chan callerResult, 1)}
	go func() {
		var res callerResult
		defer func() { c.out <- res }()
		for {
			select {
			case <-c.done:
				return
			default:
			}
			d, err := lim.Allow(context.Background(), l, key)
			res.calls++
			switch {
			case err != nil:
				res.errs = append(res.errs, err)
			case d.Allowed:
				res.admitted++
			default:
				res.denied++
			}
			// Leave the two cores to the servers and sentinels.
			time.Sleep(time.Millisecond)
		}
	}()
	return c
}

// stop ends the loop and returns its tally; later calls return it again.
func (c *caller) stop() callerResult {
	c.once.Do(func() {
		close(c.done)
		c.res = <-c.out
	})
	return c.res
}

// commandStat returns one counter of INFO commandstats for cmd, such as
// the failed_calls of evalsha, or 0 if the server has not seen cmd.
func commandStat(t *testing.T, c *redis.Client, cmd, field string) int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	for line := range strings.Lines(info) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":")
		if !ok {
			continue
		}
		for kv := range strings.SplitSeq(rest, ",") {
			if k, v, _ := strings.Cut(kv, "="); k == field {
				n, err := strconv.Atoi(v)
				require.NoError(t, err, "INFO commandstats: %q", line)
				return n
			}
		}
	}
	return 0
}
