package bench

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// Each sub-benchmark is named lib=<contender>/callers=<n>/keys=<hot|10000>
// so that benchstat can pivot on any of them (e.g. -col /lib).
//
// Both key sets use a limit large enough that nearly every call is
// admitted, so each decision includes its write; the admitted/op metric
// shows the fraction that was.
//
//   - keys=hot: every call on one key, Max 1<<20 per second. For the two
//     sliding logs this keeps one entry per admission of the last second,
//     which is what a hot key with a high limit costs them.
//   - keys=10000: calls rotate over 10,000 keys, Max 100 per second each.
var keySets = []struct {
	name string
	spec spec
	keys []string
}{
	{"hot", spec{window: time.Second, max: 1 << 20}, []string{"hot@example.com"}},
	{"10000", spec{window: time.Second, max: 100}, manyKeys(10000)},
}

func manyKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "user" + strconv.Itoa(i) + "@example.com"
	}
	return keys
}

// callerCounts are the concurrent callers: one (latency-bound), then 16
// and 64 goroutines sharing one client, like a busy service instance. The
// client's pool is go-redis's default (10 connections per GOMAXPROCS).
var callerCounts = []int{1, 16, 64}

func BenchmarkAllow(b *testing.B) {
	c := startRedis(b)
	cTimeout := newContextTimeoutClient(c.Options().Addr)
	b.Cleanup(func() { _ = cTimeout.Close() })
	all := append(append([]contender(nil), contenders...), contextTimeoutRatelimitgen)
	for _, ct := range all {
		client := c
		if ct.contextTimeout {
			client = cTimeout
		}
		for _, callers := range callerCounts {
			for _, ks := range keySets {
				name := fmt.Sprintf("lib=%s/callers=%d/keys=%s", ct.name, callers, ks.name)
				b.Run(name, func(b *testing.B) {
					flush(b, c)
					decide, err := ct.build(client, ks.spec, time.Now)
					if err != nil {
						b.Fatal(err)
					}
					resetServerStats(b, c)
					if callers == 1 {
						runSequential(b, decide, ks.keys)
					} else {
						runParallel(b, decide, ks.keys, callers)
					}
					b.StopTimer()
					b.ReportMetric(serverMicros(b, c)/float64(b.N), "redis-µs/op")
				})
			}
		}
	}
}

func runSequential(b *testing.B, decide decideFunc, keys []string) {
	ctx := context.Background()
	admitted, i := 0, 0
	b.ReportAllocs()
	for b.Loop() {
		ok, err := decide(ctx, keys[i%len(keys)])
		if err != nil {
			b.Fatal(err)
		}
		if ok {
			admitted++
		}
		i++
	}
	b.ReportMetric(float64(admitted)/float64(b.N), "admitted/op")
}

func runParallel(b *testing.B, decide decideFunc, keys []string, callers int) {
	ctx := context.Background()
	var admitted, goroutine atomic.Int64
	// RunParallel starts parallelism*GOMAXPROCS goroutines.
	b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		// Start each goroutine at a different key so that they do not
		// walk the key set in lockstep.
		i := int(goroutine.Add(1)) * 7919
		n := int64(0)
		for pb.Next() {
			ok, err := decide(ctx, keys[i%len(keys)])
			if err != nil {
				b.Error(err)
				return
			}
			if ok {
				n++
			}
			i++
		}
		admitted.Add(n)
	})
	b.ReportMetric(float64(admitted.Load())/float64(b.N), "admitted/op")
}
