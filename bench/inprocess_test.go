package bench

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// localKeySets are the workloads of BenchmarkInProcess:
//
//   - keys=hot: every call on one key, Max 1<<20 per second. Every
//     contender but the sliding log admits about a million calls a second
//     on it (GCRA cannot space admissions closer than 1µs, the others
//     refill at that rate) after a first burst of 1<<20, and denies the
//     rest; admitted/op shows the share. The sliding log takes Max
//     1,000,000 at most (runtime.MaxSlidingLog), so it admits 1,000,000 a
//     second.
//   - keys=4096: calls rotate over 4,096 keys, Max 1,000 per second each,
//     the target workload. Once a key's first Max calls are in,
//     the fastest contenders outrun the refill and part of the calls are
//     denied; admitted/op shows how many were admitted.
var localKeySets = []struct {
	name string
	spec spec
	keys []string
}{
	{"hot", spec{window: time.Second, max: 1 << 20}, []string{"hot@example.com"}},
	{"4096", spec{window: time.Second, max: 1000}, manyKeys(4096)},
}

// localCallers: one caller; 2 and 64 goroutines (b.RunParallel with
// SetParallelism(callers/GOMAXPROCS), at least 1): 2 is one per CPU on a
// 2-CPU machine.
var localCallers = []int{1, 2, 64}

// BenchmarkInProcess runs every in-process contender on every workload.
// Sub-benchmarks are named lib=<contender>/callers=<1|2|64>/keys=<hot|4096>.
func BenchmarkInProcess(b *testing.B) {
	for _, ct := range localContenders {
		for _, callers := range localCallers {
			for _, ks := range localKeySets {
				if ct.oneKey && len(ks.keys) > 1 {
					continue
				}
				name := fmt.Sprintf("lib=%s/callers=%d/keys=%s", ct.name, callers, ks.name)
				b.Run(name, func(b *testing.B) {
					decide, release := ct.build(ks.spec)
					if release != nil {
						defer release()
					}
					if callers == 1 {
						runLocalSequential(b, decide, ks.keys)
					} else {
						runLocalParallel(b, decide, ks.keys, callers)
					}
				})
			}
		}
	}
}

func runLocalSequential(b *testing.B, decide localDecideFunc, keys []string) {
	ctx := context.Background()
	admitted, i := 0, 0
	b.ReportAllocs()
	for b.Loop() {
		if decide(ctx, keys[i%len(keys)]) {
			admitted++
		}
		i++
	}
	b.ReportMetric(float64(admitted)/float64(b.N), "admitted/op")
}

func runLocalParallel(b *testing.B, decide localDecideFunc, keys []string, callers int) {
	ctx := context.Background()
	var admitted, goroutine atomic.Int64
	b.SetParallelism(max(1, callers/goruntime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		// Start each goroutine at a different key so that they do not
		// walk the key set in lockstep.
		i := int(goroutine.Add(1)) * 7919
		n := int64(0)
		for pb.Next() {
			if decide(ctx, keys[i%len(keys)]) {
				n++
			}
			i++
		}
		admitted.Add(n)
	})
	b.ReportMetric(float64(admitted.Load())/float64(b.N), "admitted/op")
}

// idleKeys is how many distinct keys BenchmarkInProcessIdleKey creates per
// iteration: enough that the map's fixed overhead (memorystore allocates
// room for 4,096 keys up front, ratelimitgen has 64 shards) is spread thin.
const idleKeys = 100_000

// BenchmarkInProcessIdleKey measures what a key costs each contender once
// it is idle: each iteration builds a fresh limiter, makes one call on
// each of idleKeys distinct keys (all admitted), collects garbage, and
// counts the live heap the limiter holds. Reported per key:
//
//   - B/idle-key: live heap after the calls (the map entry, the key's
//     bytes, the per-key state), what an idle key costs until evicted;
//   - ns/op, B/op, allocs/op: one decision on a key never seen before.
//
// Keys are "user<i>@example.com", 16-21 bytes, Max 1,000 per hour.
func BenchmarkInProcessIdleKey(b *testing.B) {
	keys := manyKeys(idleKeys)
	// A window far longer than the fill, so that no contender may let go
	// of a key before it is measured.
	s := spec{window: time.Hour, max: 1000}
	for _, ct := range localContenders {
		if ct.oneKey {
			continue
		}
		b.Run("lib="+ct.name, func(b *testing.B) {
			ctx := context.Background()
			var held, allocs, allocBytes int64
			var decideTime time.Duration
			for b.Loop() {
				before := liveHeap()
				var ms0, ms1 goruntime.MemStats
				goruntime.ReadMemStats(&ms0)
				decide, release := ct.build(s)
				start := time.Now()
				for _, k := range keys {
					if !decide(ctx, k) {
						b.Fatalf("%s denied the first call on a key", ct.name)
					}
				}
				decideTime += time.Since(start)
				goruntime.ReadMemStats(&ms1)
				allocs += int64(ms1.Mallocs - ms0.Mallocs)
				allocBytes += int64(ms1.TotalAlloc - ms0.TotalAlloc)
				held += liveHeap() - before
				// Keep the limiter reachable until measured.
				decide(ctx, keys[0])
				if release != nil {
					release()
				}
			}
			n := float64(b.N) * idleKeys
			b.ReportMetric(float64(held)/n, "B/idle-key")
			b.ReportMetric(float64(decideTime.Nanoseconds())/n, "ns/op")
			b.ReportMetric(float64(allocBytes)/n, "B/op")
			b.ReportMetric(float64(allocs)/n, "allocs/op")
		})
	}
}

// liveHeap returns the bytes of live heap objects after two full
// collections.
func liveHeap() int64 {
	goruntime.GC()
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestInProcessContenders checks that every in-process contender decides
// as its spec says on a fresh key: Max calls admitted, the next denied.
// It keeps the benchmarks honest (a contender built wrongly would measure
// something else) and runs in a few milliseconds.
func TestInProcessContenders(t *testing.T) {
	ctx := context.Background()
	s := spec{window: time.Hour, max: 5}
	for _, ct := range localContenders {
		decide, release := ct.build(s)
		for i := range s.max {
			if !decide(ctx, "k") {
				t.Errorf("%s denied call %d of %d", ct.name, i+1, s.max)
			}
		}
		if decide(ctx, "k") {
			t.Errorf("%s admitted call %d at Max %d", ct.name, s.max+1, s.max)
		}
		if !ct.oneKey && !decide(ctx, "other"+strconv.Itoa(1)) {
			t.Errorf("%s denied another key's first call", ct.name)
		}
		if release != nil {
			release()
		}
	}
}
