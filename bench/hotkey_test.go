package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/redislimit"
)

// BenchmarkHotKey is one key beyond one Redis node (issue 35): four
// limiters, each with its own client as four app instances would have,
// and 16 goroutines each, decide one key whose limit never binds (Max 100
// million per second), with leases off (one script call per batch of
// decisions) and on (redislimit.WithLeases(10ms)), in the same run.
// admitted/s is what the four admitted together per second of the run;
// scripts/1k-admitted is Redis's script calls (INFO commandstats) per
// 1,000 admitted. Both instances and Redis share the machine's cores, so
// on a shared machine compare the rows of one run, as ratios:
//
//	go test -run '^$' -bench HotKey -benchtime 3s
func BenchmarkHotKey(b *testing.B) {
	c := startRedis(b)
	addr := c.Options().Addr
	for _, algo := range []runtime.Algorithm{runtime.GCRA, runtime.TokenBucket, runtime.FixedWindow, runtime.SlidingWindow} {
		for _, leases := range []time.Duration{0, 10 * time.Millisecond} {
			name := "off"
			if leases > 0 {
				name = "on"
			}
			b.Run(fmt.Sprintf("algo=%s/leases=%s", algo, name), func(b *testing.B) {
				flush(b, c)
				l := runtime.Limit{Name: "hot", Window: time.Second, Max: 100_000_000, Algorithm: algo}
				var degraded atomic.Int64
				var lims []*redislimit.Limiter
				for range 4 {
					client := newClient(addr)
					b.Cleanup(func() { _ = client.Close() })
					lims = append(lims, redislimit.New(client, redislimit.WithInstances(4), redislimit.WithLeases(leases),
						redislimit.WithOnDegraded(func(redislimit.DegradedEvent) { degraded.Add(1) })))
				}
				resetServerStats(b, c)
				var next, admitted atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for _, lim := range lims {
					for range 16 {
						wg.Go(func() {
							n := int64(0)
							for next.Add(1) <= int64(b.N) {
								d, err := lim.Allow(context.Background(), l, "hot")
								if err != nil {
									b.Error(err)
									return
								}
								if d.Allowed {
									n++
								}
							}
							admitted.Add(n)
						})
					}
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				if n := degraded.Load(); n > 0 {
					b.Fatalf("%d decisions not made by Redis", n)
				}
				_, calls := scriptStats(b, c)
				b.ReportMetric(float64(admitted.Load())/elapsed.Seconds(), "admitted/s")
				b.ReportMetric(calls*1000/float64(max(admitted.Load(), 1)), "scripts/1k-admitted")
			})
		}
	}
}
