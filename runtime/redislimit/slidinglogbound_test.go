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

// A sliding log's Redis time is what a call reads and writes of its
// string: a header, the entries it searches, and 7 bytes per unit it
// records. These tests check the log's size, which is deterministic,
// rather than the time a call takes; they log the time SLOWLOG records for
// the worst call, for the record.

// slidingLog returns the entries of the one log under prefix, oldest
// first, its length and its MEMORY USAGE (nil and zeros when there is none).
func slidingLog(t *testing.T, admin *redis.Client, prefix string) ([]int64, int, int64) {
	t.Helper()
	keys, err := admin.Keys(ctx, prefix+"*").Result()
	require.NoError(t, err)
	var logs []string
	for _, k := range keys {
		if typ, err := admin.Type(ctx, k).Result(); err == nil && typ == "string" {
			logs = append(logs, k)
		}
	}
	if len(logs) == 0 {
		return nil, 0, 0
	}
	require.Len(t, logs, 1, "one sliding log under %q", prefix)
	v, err := admin.Get(ctx, logs[0]).Result()
	require.NoError(t, err)
	mem, err := admin.MemoryUsage(ctx, logs[0], 0).Result()
	require.NoError(t, err)
	return logEntries(t, v), len(v), mem
}

// fullLogBytes bounds the MEMORY USAGE of a log of Max 1,000 on Redis 7:
// its 7,020 bytes take jemalloc's 7 KiB class, and the key, its object and
// its dictionary entry about 100 bytes more.
const fullLogBytes int64 = 8_100

// TestSlidingLogWorstCall shows the bound on one sliding-log call's work:
// at Max 1,000, over random calls of every cost up to the capacity, a key
// never holds more than Max entries nor takes more than its header and Max
// slots, within fullLogBytes; the worst call (cost Max on a full log whose
// every entry has stopped counting) overwrites the whole ring. A limit or
// a cost beyond runtime.MaxSlidingLog is refused before anything is sent
// to Redis.
func TestSlidingLogWorstCall(t *testing.T) {
	srv := redistest.StartServer(t)
	admin := srv.Client(t)
	const prefix = "slbound:"
	clock := newFakeClock()
	lim, scripts := countedLimiter(t, srv, WithClock(clock.Now), WithPrefix(prefix),
		WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithDenyCache(0))
	const full = 1000
	l := runtime.Limit{Name: "SlidingLog.Worst", Window: time.Minute, Max: full}
	decide := func(cost int) runtime.Decisions {
		t.Helper()
		ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: "someone@example.com", Cost: int64(cost)})
		require.NoError(t, err)
		return ds
	}
	slots := logHeaderBytes + logEntryBytes*full

	// Random calls: most of cost 1, some of any cost up to Max, the clock
	// moving on the window's scale.
	rng := rand.New(rand.NewPCG(32, 2))
	admitted, largest := 0, int64(0)
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
			cost = 1 + rng.IntN(full)
		}
		if decide(cost).Allowed {
			admitted++
		}
		entries, n, mem := slidingLog(t, admin, prefix)
		require.LessOrEqual(t, len(entries), full, "step %d: entries of one key", step)
		require.True(t, slices.IsSorted(entries), "step %d: entries in time order", step)
		require.LessOrEqual(t, n, slots, "step %d: length of one key", step)
		require.LessOrEqual(t, mem, fullLogBytes, "step %d: MEMORY USAGE of one key", step)
		largest = max(largest, mem)
	}
	require.Positive(t, admitted)

	// The worst call: a full log, every entry stale, then a call of cost
	// Max, which replaces them all.
	require.NoError(t, admin.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err())
	var slow []time.Duration
	for range 5 {
		entries, _, _ := slidingLog(t, admin, prefix)
		if len(entries) < full {
			clock.Advance(l.Window + time.Millisecond)
			require.True(t, decide(full).Allowed)
		}
		clock.Advance(l.Window + time.Millisecond)
		require.NoError(t, admin.SlowLogReset(ctx).Err())
		require.True(t, decide(full).Allowed)
		now := clock.Now().UnixMicro()
		entries, n, mem := slidingLog(t, admin, prefix)
		require.Equal(t, slices.Repeat([]int64{now}, full), entries, "the worst call replaces every entry")
		require.Equal(t, slots, n)
		require.LessOrEqual(t, mem, fullLogBytes)
		largest = max(largest, mem)
		logged, err := admin.SlowLogGet(ctx, 10).Result()
		require.NoError(t, err)
		for _, e := range logged {
			if len(e.Args) > 0 && strings.HasPrefix(strings.ToLower(e.Args[0]), "eval") {
				slow = append(slow, e.Duration)
			}
		}
	}
	require.NoError(t, admin.ConfigSet(ctx, "slowlog-log-slower-than", "10000").Err())
	t.Logf("Max %d: MEMORY USAGE at most %d B; SLOWLOG of the worst call: %v", full, largest, slow)

	// Beyond the bound nothing reaches Redis.
	before := scripts.calls(t)
	big := l
	big.Max = runtime.MaxSlidingLog + 1
	_, err := lim.Decide(ctx, runtime.Request{Limit: big, Key: "someone@example.com"})
	require.ErrorContains(t, err, fmt.Sprintf("can be at most %d", runtime.MaxSlidingLog))
	require.ErrorContains(t, err, "use SlidingWindow")
	require.NotContains(t, err.Error(), "someone@example.com")
	_, err = lim.Decide(ctx, runtime.Request{Limit: l, Key: "someone@example.com", Cost: full + 1})
	require.True(t, errors.Is(err, runtime.ErrInvalidCost), "cost above Max: %v", err)
	require.Equal(t, before, scripts.calls(t), "script calls for refused requests")
}

// TestBatchSlidingLogUnits shows that a batch, one script call, carries
// calls of sliding-log limits beyond its first only while their costs add
// up to at most maxBatchLogUnits, so that no script call writes much more
// than the largest single call; other algorithms batch up to maxBatch
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
	u := int64(maxBatchLogUnits)
	require.Equal(t, []int{2, 2, 1}, batches(q{log, []int64{2 * u / 5, u - 2*u/5, u - 2*u/5, 2 * u / 5, 1}}))
	require.Equal(t, []int{maxBatch, 200 - maxBatch}, batches(q{log, many(200, 1)}))
	require.Equal(t, []int{maxBatch, maxBatch, 44}, batches(q{gcra, many(2*maxBatch+44, runtime.MaxSlidingLog)}))
	// Other algorithms' calls join a batch whose sliding-log units are
	// spent; the next sliding-log call starts the next batch.
	require.Equal(t, []int{4, 4}, batches(q{log, []int64{u}}, q{gcra, many(3, 5)}, q{log, []int64{1}}, q{gcra, many(3, 5)}))
}
