package redislimit

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// Benchmarks use a limit large enough that most calls are admitted, so they
// measure the full path including the write. The memory limiter's run
// beside the Redis limiter's, as the baseline a network round trip adds to.

func BenchmarkMemoryAllow(b *testing.B) {
	lim := memlimit.New()
	l := runtime.Limit{Name: "bench", Window: time.Second, Max: 1 << 30, Algorithm: runtime.GCRA}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := lim.Allow(ctx, l, "user@example.com"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMemoryAllowParallelKeys(b *testing.B) {
	lim := memlimit.New()
	l := runtime.Limit{Name: "bench", Window: time.Second, Max: 100}
	keys := make([]string, 4096)
	for i := range keys {
		keys[i] = "user" + strconv.Itoa(i) + "@example.com"
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := lim.Allow(ctx, l, keys[i%len(keys)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

func BenchmarkRedisAllow(b *testing.B) {
	srv := redistest.StartServer(b)
	lim := New(srv.Client(b), WithFailurePolicy(FailClosed), WithTimeout(5*time.Second))
	l := runtime.Limit{Name: "bench", Window: time.Second, Max: 100}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		// Spread calls over keys so the log stays at its steady size.
		if _, err := lim.Allow(ctx, l, strconv.Itoa(i%1024)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkRedisAllowParallel(b *testing.B) {
	for _, batching := range []bool{true, false} {
		b.Run(fmt.Sprintf("batching=%v", batching), func(b *testing.B) {
			srv := redistest.StartServer(b)
			lim := New(srv.Client(b), WithFailurePolicy(FailClosed), WithTimeout(5*time.Second), WithBatching(batching))
			l := runtime.Limit{Name: "bench", Window: time.Second, Max: 100, Algorithm: runtime.GCRA}
			b.ReportAllocs()
			allowParallel(b, lim, l)
		})
	}
}

// BenchmarkDurable measures WithDurable's price on a Sentinel-managed
// server and its two replicas: the decisions per second of 64 parallel
// callers (32 per core on 2 cores), and a lone caller's median latency,
// each with durable decisions off and on.
func BenchmarkDurable(b *testing.B) {
	s := redistest.StartSentinelWith(b, redistest.WithReplicas(2))
	client, master := s.Client(b), s.Master(b)
	l := runtime.Limit{Name: "bench.durable", Window: time.Second, Max: 100, Algorithm: runtime.GCRA}
	ctx := context.Background()
	for _, durable := range []bool{false, true} {
		opts := []Option{WithFailurePolicy(FailClosed), WithTimeout(5 * time.Second)}
		if durable {
			opts = append(opts, WithDurable(time.Second))
		}
		lim := New(client, opts...)
		b.Run(fmt.Sprintf("callers=64/durable=%v", durable), func(b *testing.B) {
			waits := waitCalls(b, master)
			allowParallel(b, lim, l)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
			b.ReportMetric(float64(waitCalls(b, master)-waits)/float64(b.N), "waits/decision")
		})
		b.Run(fmt.Sprintf("callers=1/durable=%v", durable), func(b *testing.B) {
			var took []time.Duration
			i := 0
			for b.Loop() {
				start := time.Now()
				if _, err := lim.Allow(ctx, l, strconv.Itoa(i%10000)); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
				i++
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
		})
	}
}

// allowParallel runs b's calls of l through lim from 32 goroutines per
// processor, over 10000 keys.
func allowParallel(b *testing.B, lim *Limiter, l runtime.Limit) {
	ctx := context.Background()
	b.SetParallelism(32)
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		i := int(n.Add(1)) * 7919
		for pb.Next() {
			if _, err := lim.Allow(ctx, l, strconv.Itoa(i%10000)); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
