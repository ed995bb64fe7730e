package memlimit

import (
	"context"
	"crypto/sha256"
	"fmt"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

var ctx = context.Background()

// allow asks lim for one call of cost 1 and fails the test on an error.
func allow(t *testing.T, lim *Limiter, l runtime.Limit, key string) runtime.Decision {
	t.Helper()
	d, err := lim.Allow(ctx, l, key)
	require.NoError(t, err)
	return d
}

func TestMemoryEvictsIdleKeys(t *testing.T) {
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	l := runtime.Limit{Name: "evict", Window: time.Second, Max: 1}
	const n = 20000
	for i := 0; i < n; i++ {
		allow(t, lim, l, "old"+strconv.Itoa(i))
	}
	require.Equal(t, n, lim.Len())

	// Once the old keys' admissions have left the window, new traffic evicts
	// them as it goes: the map holds the live keys plus bounded slack.
	clock.Advance(11 * time.Second)
	for i := 0; i < n; i++ {
		allow(t, lim, l, "new"+strconv.Itoa(i))
	}
	require.LessOrEqual(t, lim.Len(), n+shardCount*minSweep)

	// Keys still inside their window are never evicted: evicting one would
	// forget admissions and let extra calls through.
	for i := 0; i < n; i += 97 {
		require.False(t, allow(t, lim, l, "new"+strconv.Itoa(i)).Allowed)
	}
}

func TestMemoryGrowthStaysBounded(t *testing.T) {
	// A stream of distinct keys, each used once per window, keeps only about
	// a window's worth of keys alive.
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	l := runtime.Limit{Name: "stream", Window: 100 * time.Millisecond, Max: 1}
	peak := 0
	for i := 0; i < 200000; i++ {
		allow(t, lim, l, strconv.Itoa(i))
		clock.Advance(100 * time.Microsecond) // 1,000 keys per window
		if i%1000 == 0 {
			peak = max(peak, lim.Len())
		}
	}
	t.Logf("peak keys held: %d (1,000 live per window)", peak)
	require.Less(t, peak, 20000)
}

// heapInUse returns the bytes of live heap objects after a full collection.
func heapInUse() int64 {
	goruntime.GC()
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

const mib = 1 << 20

// longString returns a 1 MiB string of filler ending in tail.
func longString(filler byte, tail string) string {
	return strings.Repeat(string(filler), mib-len(tail)) + tail
}

func TestMemoryLongKeysAreDistinct(t *testing.T) {
	lim := New(WithClock(newFakeClock().Now))
	l := runtime.Limit{Name: "long", Window: time.Minute, Max: 1}

	// Two long keys differing only in their last byte count apart.
	a, b := longString('k', "a"), longString('k', "b")
	require.True(t, allow(t, lim, l, a).Allowed)
	require.False(t, allow(t, lim, l, a).Allowed, "the same long key shares one count")
	require.True(t, allow(t, lim, l, b).Allowed, "a long key differing in its last byte has its own count")

	// A short key made of exactly the 32 bytes a long key is stored under
	// is still a different key.
	c := longString('k', "c")
	require.True(t, allow(t, lim, l, digest(c)).Allowed)
	require.True(t, allow(t, lim, l, c).Allowed)
	require.False(t, allow(t, lim, l, c).Allowed)
	require.False(t, allow(t, lim, l, digest(c)).Allowed)

	// The same for limit names.
	la := runtime.Limit{Name: longString('n', "a"), Window: time.Minute, Max: 1}
	lb := runtime.Limit{Name: longString('n', "b"), Window: time.Minute, Max: 1}
	ld := runtime.Limit{Name: digest(la.Name), Window: time.Minute, Max: 1}
	require.True(t, allow(t, lim, la, "k").Allowed)
	require.False(t, allow(t, lim, la, "k").Allowed)
	require.True(t, allow(t, lim, lb, "k").Allowed, "a long name differing in its last byte is its own limit")
	require.True(t, allow(t, lim, ld, "k").Allowed, "a short name made of a long name's digest is its own limit")

	// Each part has its own flag: (long name, digest key) and (digest name,
	// long key) store the same bytes and must still differ.
	require.True(t, allow(t, lim, la, digest(c)).Allowed)
	require.True(t, allow(t, lim, ld, c).Allowed)

	// maxLiteralLen bytes are kept as they are, one more are hashed.
	edge := strings.Repeat("e", maxLiteralLen)
	require.True(t, allow(t, lim, l, edge).Allowed)
	require.True(t, allow(t, lim, l, edge+"e").Allowed)
	stored := map[string]bool{}
	forEachEntry(lim, func(e *entry) {
		if e.name == l.Name {
			stored[e.key] = e.keyHashed
		}
	})
	hashed, ok := stored[edge]
	require.True(t, ok && !hashed, "a key of maxLiteralLen bytes is stored verbatim")
	hashed, ok = stored[digest(edge+"e")]
	require.True(t, ok && hashed, "a longer key is stored as its digest")
}

func TestMemoryLongKeysDoNotPinMemory(t *testing.T) {
	// A caller who picks the key (from a header, say) must not be able to
	// make the limiter hold megabytes per key, as it held every key
	// verbatim: 100 keys of 1 MiB held 100 MB for a window.
	lim := New(WithClock(newFakeClock().Now))
	l := runtime.Limit{Name: "pin", Window: time.Hour, Max: 10}
	before := heapInUse()
	decideLongKeys(t, lim, l, 100)
	after := heapInUse()
	t.Logf("heap: %.2f MB before, %.2f MB after deciding 100 distinct 1 MiB keys (+%.2f MB, %d keys held)",
		float64(before)/1e6, float64(after)/1e6, float64(after-before)/1e6, lim.Len())

	require.Equal(t, 100, lim.Len())
	forEachEntry(lim, func(e *entry) {
		require.True(t, e.keyHashed)
		require.LessOrEqual(t, len(e.key), sha256.Size)
	})
	require.Less(t, after-before, int64(10*mib), "the limiter holds the long keys themselves")
	goruntime.KeepAlive(lim)
}

// decideLongKeys decides n distinct 1 MiB keys once each and keeps none of
// them.
//
//go:noinline
func decideLongKeys(t *testing.T, lim *Limiter, l runtime.Limit, n int) {
	buf := make([]byte, mib)
	for i := range buf {
		buf[i] = 'h'
	}
	for i := 0; i < n; i++ {
		copy(buf[mib-8:], fmt.Sprintf("%08d", i))
		require.True(t, allow(t, lim, l, string(buf)).Allowed)
	}
}

func TestMemorySweepReleasesMemory(t *testing.T) {
	// After a Redis outage, the fallback holds the keys the outage touched;
	// sweep must drop them and give the memory back, though Go maps never
	// shrink by themselves.
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	l := runtime.Limit{Name: "outage", Window: time.Second, Max: 1}
	const n = 300_000
	base := heapInUse()
	for i := 0; i < n; i++ {
		allow(t, lim, l, strconv.Itoa(i))
	}
	require.Equal(t, n, lim.Len())
	full := heapInUse()

	// Still in their window, nothing goes.
	require.Equal(t, n, lim.sweep())

	clock.Advance(time.Second + time.Microsecond)
	require.Zero(t, lim.sweep())
	require.Zero(t, lim.Len())
	after := heapInUse()
	t.Logf("heap: %.2f MB baseline, %.2f MB holding %d keys (+%.2f MB), %.2f MB after sweep (%+.2f MB)",
		float64(base)/1e6, float64(full)/1e6, n, float64(full-base)/1e6, float64(after)/1e6, float64(after-base)/1e6)
	require.Greater(t, full-base, int64(20*mib), "the keys should have cost tens of MB; the test measures nothing")
	require.Less(t, after-base, int64(10*mib), "sweep left the memory of the expired keys held")

	// The limiter still works, and the swept keys start afresh.
	require.True(t, allow(t, lim, l, "1").Allowed)
	require.False(t, allow(t, lim, l, "1").Allowed)
	goruntime.KeepAlive(lim)
}

func TestMemoryIdleShardLetsGo(t *testing.T) {
	// A burst of keys, then traffic on existing keys only: every shard
	// still sweeps once sweepInterval has passed, though none creates
	// a key, and gives the memory back.
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	l := runtime.Limit{Name: "burst", Window: time.Second, Max: 1}

	// One hot key per shard, kept alive throughout.
	var hot []string
	seen := map[uint64]bool{}
	for i := 0; len(hot) < shardCount; i++ {
		key := "hot" + strconv.Itoa(i)
		if sh := shardIndex(lim, l, key); !seen[sh] {
			seen[sh] = true
			hot = append(hot, key)
		}
	}
	base := heapInUse()
	for _, key := range hot {
		allow(t, lim, l, key)
	}
	const n = 300_000
	for i := 0; i < n; i++ {
		allow(t, lim, l, strconv.Itoa(i))
	}
	full := heapInUse()

	for step := 0; step < 24; step++ {
		clock.Advance(500 * time.Millisecond)
		for _, key := range hot {
			allow(t, lim, l, key)
		}
	}
	after := heapInUse()
	t.Logf("heap: %.2f MB baseline, %.2f MB after the burst of %d keys (+%.2f MB), %.2f MB after 12s of hot keys only (%+.2f MB, %d keys held)",
		float64(base)/1e6, float64(full)/1e6, n, float64(full-base)/1e6, float64(after)/1e6, float64(after-base)/1e6, lim.Len())
	require.Equal(t, len(hot), lim.Len())
	require.Less(t, after-base, int64(10*mib))
	goruntime.KeepAlive(lim)
}

func TestMemoryDecideKeepsAdmissionsWhenSweepDue(t *testing.T) {
	// A sweep falling due in the middle of a Decide must not delete an
	// entry the call already holds: the admission recorded in it would be
	// lost, and the next call admitted beyond Max.
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	l := runtime.Limit{Name: "all", Window: time.Second, Max: 1}
	l2 := runtime.Limit{Name: "all2", Window: time.Second, Max: 1}
	// a and b on one shard, b not yet known.
	a := "a"
	sa := shardIndex(lim, l, a)
	var b string
	for i := 0; ; i++ {
		b = "b" + strconv.Itoa(i)
		if shardIndex(lim, l2, b) == sa {
			break
		}
	}
	require.True(t, allow(t, lim, l, a).Allowed)
	// Enough other keys on the shard for its timed sweep to run.
	for i, filled := 0, 0; filled < 2*minSweep; i++ {
		key := "f" + strconv.Itoa(i)
		if shardIndex(lim, l, key) == sa {
			allow(t, lim, l, key)
			filled++
		}
	}
	// a's admission expires; the shard's timed sweep falls due.
	clock.Advance(time.Duration(sweepInterval)*time.Microsecond + time.Second)
	ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: a}, runtime.Request{Limit: l2, Key: b})
	require.NoError(t, err)
	require.True(t, ds.Allowed)
	require.False(t, allow(t, lim, l, a).Allowed, "the admission Decide recorded for a was lost")
	require.False(t, allow(t, lim, l2, b).Allowed)
}

func TestMemorySweepConcurrent(t *testing.T) {
	// sweep locks one shard at a time while calls go on; run with -race.
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	l := runtime.Limit{Name: "conc", Window: time.Millisecond, Max: 2}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				key := strconv.Itoa(g*100000 + i%500)
				if _, err := lim.Allow(ctx, l, key); err != nil {
					t.Error(err)
					return
				}
				if i%100 == 0 {
					clock.Advance(time.Millisecond)
				}
			}
		}()
	}
	for i := 0; i < 50; i++ {
		lim.sweep()
	}
	wg.Wait()
	clock.Advance(time.Second)
	require.Zero(t, lim.sweep())
}

// forEachEntry calls f with every entry lim holds.
func forEachEntry(lim *Limiter, f func(*entry)) {
	for i := range lim.shards {
		s := &lim.shards[i]
		s.mu.Lock()
		t := s.tab.Load()
		for i := range t.slots {
			if e := t.slots[i].entry(); e != nil && e != deleted {
				f(e)
			}
		}
		s.mu.Unlock()
	}
}

// shardIndex returns the index of the shard of (l, key) in lim.
func shardIndex(lim *Limiter, l runtime.Limit, key string) uint64 {
	algo, ok := algoIndexOf(l.Algorithm)
	if !ok {
		panic("unknown algorithm")
	}
	var d keyDigests
	k := newStoreKey(algo, l.Name, key, &d)
	return shardOf(lim.hash(&k))
}

func TestMemoryAllowDoesNotAllocate(t *testing.T) {
	// Once a key is held, a decision allocates nothing, whatever the
	// algorithm, admitted or denied, and for long names and keys too (their
	// digests stay on the stack).
	if testing.Short() {
		t.Skip("counts allocations")
	}
	lim := New(WithClock(newFakeClock().Now))
	long := strings.Repeat("k", 4*maxLiteralLen)
	for _, algo := range runtime.Algorithms() {
		for _, max := range []int{3, 1 << 20} {
			if algo == runtime.SlidingLog {
				max = min(max, runtime.MaxSlidingLog)
			}
			l := runtime.Limit{Name: "alloc", Window: time.Minute, Max: max, Algorithm: algo}
			ll := runtime.Limit{Name: long, Window: time.Minute, Max: max, Algorithm: algo}
			for _, c := range []struct {
				l   runtime.Limit
				key string
			}{{l, "user@example.com"}, {l, long}, {ll, "k"}} {
				allow(t, lim, c.l, c.key) // creates the key
				n := testing.AllocsPerRun(100, func() {
					if _, err := lim.Allow(ctx, c.l, c.key); err != nil {
						t.Fatal(err)
					}
				})
				if algo == runtime.SlidingLog && max > 3 {
					// The log grows with its admissions; appending is
					// amortised, so allow for the occasional growth.
					require.LessOrEqual(t, n, 0.1, "%s Max %d name %d key %d bytes", algo, max, len(c.l.Name), len(c.key))
					continue
				}
				require.Zero(t, n, "%s Max %d name %d key %d bytes", algo, max, len(c.l.Name), len(c.key))
			}
		}
	}
}

func TestMemoryNamesThatHashAlike(t *testing.T) {
	// nameFold reads only a long name's ends, so these two names give every
	// key the same hash: their entries share a chain. They must still count
	// apart, and a sweep must drop the expired one and keep the other.
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	a := runtime.Limit{Name: "Notifier.A.SendCode", Window: time.Second, Max: 1}
	b := runtime.Limit{Name: "Notifier.B.SendCode", Window: time.Hour, Max: 1}
	require.Equal(t, nameFold(a.Name, algoSlidingLog), nameFold(b.Name, algoSlidingLog))
	require.Equal(t, shardIndex(lim, a, "k"), shardIndex(lim, b, "k"))
	require.True(t, allow(t, lim, a, "k").Allowed)
	require.True(t, allow(t, lim, b, "k").Allowed)
	require.False(t, allow(t, lim, a, "k").Allowed)
	require.False(t, allow(t, lim, b, "k").Allowed)
	require.Equal(t, 2, lim.Len())

	clock.Advance(2 * time.Second)
	require.Equal(t, 1, lim.sweep())
	require.True(t, allow(t, lim, a, "k").Allowed, "a's window has passed")
	require.False(t, allow(t, lim, b, "k").Allowed, "the sweep lost b's admission")
	clock.Advance(2 * time.Second)
	require.Equal(t, 1, lim.sweep())
	require.False(t, allow(t, lim, b, "k").Allowed)
}

func TestMemoryHotKeyIsExact(t *testing.T) {
	// Calls on one key take the entry's lock (GCRA: swap its arrival time)
	// without the shard's; Decide with several limits holds the shards and
	// then the entries; sweeps run meanwhile. On a stopped clock exactly
	// Max calls of each algorithm get in, however they interleave, and a
	// Decide records in both of its limits or in neither. Run with -race.
	for _, algo := range runtime.Algorithms() {
		t.Run(string(algo), func(t *testing.T) {
			clock := newFakeClock()
			lim := New(WithClock(clock.Now))
			l := runtime.Limit{Name: "hot", Window: time.Hour, Max: 200, Algorithm: algo}
			roomy := runtime.Limit{Name: "roomy", Window: time.Hour, Max: 1 << 20, Algorithm: runtime.SlidingWindow}
			var wg sync.WaitGroup
			var mu sync.Mutex
			allowed, decided := 0, 0
			for g := 0; g < 8; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 400; i++ {
						var ok, both bool
						if g%2 == 0 {
							d, err := lim.Allow(ctx, l, "k")
							if err != nil {
								t.Error(err) // FailNow may only be called from the test goroutine
								return
							}
							ok = d.Allowed
						} else {
							ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: "k"}, runtime.Request{Limit: roomy, Key: "k"})
							if err != nil {
								t.Error(err)
								return
							}
							ok, both = ds.Allowed, ds.Allowed
						}
						mu.Lock()
						if ok {
							allowed++
						}
						if both {
							decided++
						}
						mu.Unlock()
					}
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 200; i++ {
					lim.sweep()
				}
			}()
			wg.Wait()
			require.Equal(t, int(l.Max), allowed)
			d := allow(t, lim, roomy, "k")
			require.Equal(t, int(roomy.Max)-decided-1, d.Remaining, "a Decide recorded in one limit only")
			clock.Advance(2 * time.Hour)
			require.Zero(t, lim.sweep())
		})
	}
}

// sweep deletes the expired entries of every shard now, whatever their
// timed sweeps, and returns how many entries remain.
func (m *Limiter) sweep() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += s.sweep(m.now(), nil)
		s.mu.Unlock()
	}
	return n
}
