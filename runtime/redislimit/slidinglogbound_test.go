package redislimit

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// A sliding log's Redis time is its sorted-set work: each unit admitted is
// a member added, each that stopped counting one removed. These tests
// measure that work, which is deterministic, rather than the time it takes;
// they log the time SLOWLOG records for the worst call, for the record.

// slidingLogMembers returns the members of the one sorted set under
// prefix, and its MEMORY USAGE (0 and nil when there is none).
func slidingLogMembers(t *testing.T, admin *redis.Client, prefix string) ([]string, int64) {
	t.Helper()
	keys, err := admin.Keys(ctx, prefix+"*").Result()
	require.NoError(t, err)
	var logs []string
	for _, k := range keys {
		if typ, err := admin.Type(ctx, k).Result(); err == nil && typ == "zset" {
			logs = append(logs, k)
		}
	}
	if len(logs) == 0 {
		return nil, 0
	}
	require.Len(t, logs, 1, "one sliding log under %q", prefix)
	members, err := admin.ZRange(ctx, logs[0], 0, -1).Result()
	require.NoError(t, err)
	mem, err := admin.MemoryUsage(ctx, logs[0], 0).Result() // SAMPLES 0: every member, not an estimate
	require.NoError(t, err)
	return members, mem
}

// churn is how many members differ between two sorted sets' member lists:
// those removed plus those added.
func churn(before, after []string) int {
	in := func(s []string, m string) bool { return slices.Contains(s, m) }
	n := 0
	for _, m := range before {
		if !in(after, m) {
			n++
		}
	}
	for _, m := range after {
		if !in(before, m) {
			n++
		}
	}
	return n
}

// maxLogBytes bounds the MEMORY USAGE of a sliding log of Max
// runtime.MaxSlidingLog on Redis 7: about 118 KB filled by one call, up to
// about 128 KB once its members have been replaced (a skiplist's node
// levels are random, so the figure varies by a few hundred bytes).
const maxLogBytes int64 = 140_000

// TestSlidingLogWorstCall shows the bound on one sliding-log call's Redis
// work: at Max runtime.MaxSlidingLog, over random calls of every cost up to
// the capacity, a key never holds more than Max members and no call
// changes more than 2×Max of them, which the worst call (cost Max on a log
// whose Max entries have all stopped counting) reaches exactly; the key
// stays within maxLogBytes. A limit or a cost beyond the bound is refused
// before anything is sent to Redis.
func TestSlidingLogWorstCall(t *testing.T) {
	srv := redistest.StartServer(t)
	admin := srv.Client(t)
	const prefix = "slbound:"
	clock := newFakeClock()
	lim, scripts := countedLimiter(t, srv, WithClock(clock.Now), WithPrefix(prefix),
		WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithDenyCache(0))
	l := runtime.Limit{Name: "SlidingLog.Worst", Window: time.Minute, Max: runtime.MaxSlidingLog}
	decide := func(cost int) runtime.Decisions {
		t.Helper()
		ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: "someone@example.com", Cost: int64(cost)})
		require.NoError(t, err)
		return ds
	}

	// Random calls: most of cost 1, some of any cost up to Max, the clock
	// moving on the window's scale.
	rng := rand.New(rand.NewPCG(32, 2))
	most, admitted, largest := 0, 0, int64(0)
	var members []string
	for step := range 300 {
		switch r := rng.Float64(); {
		case r < 0.5:
			clock.Advance(us(rng.Int64N(l.Window.Microseconds() / 50)))
		case r < 0.9:
			clock.Advance(us(rng.Int64N(l.Window.Microseconds() / 4)))
		default:
			clock.Advance(l.Window + us(rng.Int64N(1000)))
		}
		cost := 1
		if rng.IntN(4) == 0 {
			cost = 1 + rng.IntN(runtime.MaxSlidingLog)
		}
		if decide(cost).Allowed {
			admitted++
		}
		after, mem := slidingLogMembers(t, admin, prefix)
		require.LessOrEqual(t, len(after), runtime.MaxSlidingLog, "step %d: members of one key", step)
		require.LessOrEqual(t, mem, maxLogBytes, "step %d: MEMORY USAGE of one key", step)
		c := churn(members, after)
		require.LessOrEqual(t, c, 2*runtime.MaxSlidingLog, "step %d: members one call of cost %d added and removed", step, cost)
		most = max(most, c)
		largest = max(largest, mem)
		members = after
	}
	require.Positive(t, admitted)

	// The worst call: a full log, every entry stale, then a call of cost
	// Max, which removes them all and adds Max more.
	require.NoError(t, admin.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err())
	var slow []time.Duration
	for range 5 {
		if len(members) < runtime.MaxSlidingLog {
			clock.Advance(l.Window + us(int64(runtime.MaxSlidingLog)))
			require.True(t, decide(runtime.MaxSlidingLog).Allowed)
			members, _ = slidingLogMembers(t, admin, prefix)
			require.Equal(t, runtime.MaxSlidingLog, len(members), "members of a full log")
		}
		clock.Advance(l.Window + us(int64(runtime.MaxSlidingLog)))
		require.NoError(t, admin.SlowLogReset(ctx).Err())
		require.True(t, decide(runtime.MaxSlidingLog).Allowed)
		after, mem := slidingLogMembers(t, admin, prefix)
		require.Equal(t, runtime.MaxSlidingLog, len(after), "members after the worst call")
		require.Equal(t, 2*runtime.MaxSlidingLog, churn(members, after), "the worst call replaces every member")
		require.LessOrEqual(t, mem, maxLogBytes)
		largest = max(largest, mem)
		members = after
		entries, err := admin.SlowLogGet(ctx, 10).Result()
		require.NoError(t, err)
		for _, e := range entries {
			if len(e.Args) > 0 && strings.HasPrefix(strings.ToLower(e.Args[0]), "eval") {
				slow = append(slow, e.Duration)
			}
		}
	}
	require.NoError(t, admin.ConfigSet(ctx, "slowlog-log-slower-than", "10000").Err())
	t.Logf("Max %d: at most %d members changed by one call in random use, %d by the worst call; MEMORY USAGE at most %d B; SLOWLOG of the worst call: %v",
		runtime.MaxSlidingLog, most, 2*runtime.MaxSlidingLog, largest, slow)

	// Beyond the bound nothing reaches Redis.
	before := scripts.calls(t)
	big := l
	big.Max = runtime.MaxSlidingLog + 1
	_, err := lim.Decide(ctx, runtime.Request{Limit: big, Key: "someone@example.com"})
	require.ErrorContains(t, err, "can be at most 1000")
	require.ErrorContains(t, err, "use SlidingWindow")
	require.NotContains(t, err.Error(), "someone@example.com")
	_, err = lim.Decide(ctx, runtime.Request{Limit: l, Key: "someone@example.com", Cost: runtime.MaxSlidingLog + 1})
	require.True(t, errors.Is(err, runtime.ErrInvalidCost), "cost above Max: %v", err)
	require.Equal(t, before, scripts.calls(t), "script calls for refused requests")
}

// TestBatchSlidingLogUnits shows that a batch, one script call, carries
// calls of sliding-log limits only while their costs add up to at most
// runtime.MaxSlidingLog, so that no script call holds Redis much longer
// than the worst single call; other algorithms batch up to maxBatch
// limits whatever their costs.
func TestBatchSlidingLogUnits(t *testing.T) {
	srv := redistest.StartServer(t)
	lim := New(srv.Client(t), WithInstances(1))
	b := lim.batch
	require.NotNil(t, b)
	log := runtime.Limit{Name: "batch.log", Window: time.Minute, Max: runtime.MaxSlidingLog}
	shadow := log
	shadow.Mode = runtime.ModeShadow
	gcra := runtime.Limit{Name: "batch.gcra", Window: time.Minute, Max: runtime.MaxSlidingLog, Algorithm: runtime.GCRA}
	type q struct {
		l     runtime.Limit
		costs []int64
	}
	many := func(n int, c int64) []int64 { return slices.Repeat([]int64{c}, n) }
	// batches queues a call per cost and returns the sizes of the batches
	// that take forms of them.
	batches := func(qs ...q) []int {
		b.mu.Lock()
		for _, x := range qs {
			for i, c := range x.costs {
				d := &resolvedCall{now: -1, asks: lim.resolve(nil, []runtime.Request{{Limit: x.l, Key: fmt.Sprint("k", i), Cost: c}})}
				b.queue = append(b.queue, b.newCall(d, []int{0}))
			}
		}
		b.inFlight++
		b.mu.Unlock()
		var sizes []int
		for batch := b.take(0); batch != nil; batch = b.take(0) {
			sizes = append(sizes, len(batch))
		}
		return sizes
	}
	require.Equal(t, slices.Repeat([]int{1}, 5), batches(q{log, many(5, runtime.MaxSlidingLog)}))
	require.Equal(t, slices.Repeat([]int{1}, 3), batches(q{shadow, many(3, runtime.MaxSlidingLog)}))
	require.Equal(t, []int{2, 2, 1}, batches(q{log, []int64{400, 600, 600, 400, 1}}))
	require.Equal(t, []int{maxBatch, 200 - maxBatch}, batches(q{log, many(200, 1)}))
	require.Equal(t, []int{maxBatch, maxBatch, 44}, batches(q{gcra, many(2*maxBatch+44, runtime.MaxSlidingLog)}))
	// Other algorithms' calls join a batch whose sliding-log units are
	// spent; the next sliding-log call starts the next batch.
	require.Equal(t, []int{4, 4}, batches(q{log, []int64{runtime.MaxSlidingLog}}, q{gcra, many(3, 5)}, q{log, []int64{1}}, q{gcra, many(3, 5)}))
}
