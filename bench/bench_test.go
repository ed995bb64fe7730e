package bench

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// Each sub-benchmark is named lib=<contender>/callers=<n>/keys=<set> so
// that benchstat can pivot on any of them (e.g. -col /lib).
//
//   - keys=hot: every call on one key, Max 1<<20 per second, so nearly
//     every call is admitted and includes its write. ratelimitgen's sliding
//     log takes Max 1,000,000 at most (runtime.MaxSlidingLog), so it
//     decides this key at 1,000,000 per second. Every sliding log keeps
//     one entry per admission of the last second, which is what a hot key
//     with a high limit costs it.
//   - keys=10000: calls rotate over 10,000 keys, Max 100 per second each,
//     again nearly all admitted.
//   - keys=denied: one key under 100% denial, Max 1 per hour. Its first
//     call is made (and must be admitted) before the timer starts; every
//     timed call is denied. This is a key being hammered by abusive
//     traffic, where a deny cache answers without asking Redis.
//
// The admitted/op metric shows the fraction admitted.
type keySet struct {
	name string
	spec spec
	keys []string
	// denied: the set's first call is admitted before the timer and every
	// timed call must be denied.
	denied bool
	// paced: the set is benchmarked on a paced clock (see
	// BenchmarkRedisInstructions), and warmed until its logs are full.
	paced bool
}

var keySets = []keySet{
	{name: "hot", spec: spec{window: time.Second, max: 1 << 20}, keys: []string{"hot@example.com"}},
	{name: "10000", spec: spec{window: time.Second, max: 100}, keys: manyKeys(10000)},
	{name: "denied", spec: spec{window: time.Hour, max: 1}, keys: []string{"abuser@example.com"}, denied: true},
}

func manyKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "user" + strconv.Itoa(i) + "@example.com"
	}
	return keys
}

// callerCounts are the concurrent callers: one (latency-bound), then 16,
// 64 and 256 goroutines sharing one client, like a busy service instance.
// The client's pool is go-redis's default (10 connections per GOMAXPROCS).
var callerCounts = []int{1, 16, 64, 256}

// benchContenders are the rows of BenchmarkAllow, in table order:
// ratelimitgen with its defaults (batching and the deny cache on) and
// without them, the peers, the ceiling's two algorithms (ceiling.go), and
// the sliding log on a ContextTimeoutEnabled client.
func benchContenders() []contender {
	return []contender{
		contenders[0], unbatchedContenders[0],
		contenders[1], unbatchedContenders[1],
		contenders[2], contenders[3], contenders[4],
		ceilingContenders[0], ceilingContenders[1],
		contextTimeoutRatelimitgen,
	}
}

// perfTable restricts BenchmarkAllow to the rows of the Performance table
// in docs/performance.md (see tableRow); cmd/perftable sets it.
var perfTable = flag.Bool("perftable", false, "run only the rows of the Performance table in docs/performance.md")

// tableRow reports whether a row belongs to the Performance table: every
// contender but the ContextTimeoutEnabled variant, at 1, 64 and 256
// callers on 10,000 keys and at 64 callers on the denied key.
func tableRow(ct contender, callers int, keys string) bool {
	if ct.contextTimeout {
		return false
	}
	switch keys {
	case "10000":
		return callers == 1 || callers == 64 || callers == 256
	case "denied":
		return callers == 64
	}
	return false
}

func BenchmarkAllow(b *testing.B) {
	c := startRedis(b)
	cTimeout := newContextTimeoutClient(c.Options().Addr)
	b.Cleanup(func() { _ = cTimeout.Close() })
	// Settings outside, libraries inside: the libraries of one setting run
	// one after another, so that drift in a shared machine's load moves
	// them together.
	for _, callers := range callerCounts {
		for _, ks := range keySets {
			for _, ct := range benchContenders() {
				if *perfTable && !tableRow(ct, callers, ks.name) {
					continue
				}
				client := c
				if ct.contextTimeout {
					client = cTimeout
				}
				name := fmt.Sprintf("lib=%s/callers=%d/keys=%s", ct.name, callers, ks.name)
				b.Run(name, func(b *testing.B) {
					flush(b, c)
					decide, err := ct.build(client, ks.spec, time.Now)
					if err != nil {
						b.Fatal(err)
					}
					if ks.denied {
						// The one admission the hour allows, untimed.
						ok, err := decide(context.Background(), ks.keys[0])
						if err != nil {
							b.Fatal(err)
						}
						if !ok {
							b.Fatalf("%s denied the first call on a fresh key", ct.name)
						}
					}
					resetServerStats(b, c)
					cpu := processCPU()
					var admitted int64
					if callers == 1 {
						admitted = runSequential(b, decide, ks.keys)
					} else {
						admitted = runParallel(b, decide, ks.keys, callers)
					}
					b.StopTimer()
					if ks.denied && admitted > 0 {
						b.Fatalf("%s admitted %d calls on a key whose limit was used up for the hour", ct.name, admitted)
					}
					reportServerStats(b, c)
					b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/1e3/float64(b.N), "client-µs/op")
				})
			}
		}
	}
}

// runSequential makes every call from one goroutine and returns how many
// were admitted. Each call is timed into one histogram.
func runSequential(b *testing.B, decide decideFunc, keys []string) int64 {
	ctx := context.Background()
	lat := new(latencies)
	admitted, i := int64(0), 0
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		ok, err := decide(ctx, keys[i%len(keys)])
		lat.record(time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		if ok {
			admitted++
		}
		i++
	}
	b.ReportMetric(float64(admitted)/float64(b.N), "admitted/op")
	lat.report(b)
	return admitted
}

// runParallel makes the calls from callers goroutines (b.RunParallel) and
// returns how many were admitted. Each goroutine times its calls into a
// histogram of its own, allocated before the timer starts; they are merged
// at the end.
func runParallel(b *testing.B, decide decideFunc, keys []string, callers int) int64 {
	ctx := context.Background()
	var admitted, goroutine atomic.Int64
	// RunParallel starts parallelism*GOMAXPROCS goroutines.
	parallelism := max(1, callers/runtime.GOMAXPROCS(0))
	b.SetParallelism(parallelism)
	hists := make([]latencies, parallelism*runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		g := int(goroutine.Add(1))
		lat := &hists[g-1]
		// Start each goroutine at a different key so that they do not
		// walk the key set in lockstep.
		i := g * 7919
		n := int64(0)
		for pb.Next() {
			start := time.Now()
			ok, err := decide(ctx, keys[i%len(keys)])
			lat.record(time.Since(start))
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
	b.StopTimer()
	all := new(latencies)
	for i := range hists {
		all.merge(&hists[i])
	}
	b.ReportMetric(float64(admitted.Load())/float64(b.N), "admitted/op")
	all.report(b)
	return admitted.Load()
}

func TestTableRows(t *testing.T) {
	// The Performance table: 9 libraries (ratelimitgen's two algorithms with
	// and without batching, the three peers and the ceiling's two
	// algorithms) in 4 settings.
	var rows []string
	for _, ct := range benchContenders() {
		for _, callers := range callerCounts {
			for _, ks := range keySets {
				if tableRow(ct, callers, ks.name) {
					rows = append(rows, fmt.Sprintf("%s/%d/%s", ct.name, callers, ks.name))
				}
			}
		}
	}
	if len(rows) != 9*4 {
		t.Fatalf("%d table rows, want 36: %v", len(rows), rows)
	}
	for _, want := range []string{"redis_rate/1/10000", "ceiling-gcra/64/10000", "ceiling-sliding-log/256/10000", "ratelimitgen-gcra/256/10000", "seed-lua/64/denied", "ratelimitgen-sliding-log-nobatch/64/denied"} {
		if !slices.Contains(rows, want) {
			t.Errorf("table rows lack %s", want)
		}
	}
}

// TestDeniedKey checks the keys=denied setting for every benchmarked
// contender, quickly and without timing: on a fresh key the first call is
// admitted, and every later call, from many goroutines at once, is denied.
func TestDeniedKey(t *testing.T) {
	c := startRedis(t)
	cTimeout := newContextTimeoutClient(c.Options().Addr)
	t.Cleanup(func() { _ = cTimeout.Close() })
	ks := keySets[slices.IndexFunc(keySets, func(k keySet) bool { return k.denied })]
	ctx := context.Background()
	for _, ct := range benchContenders() {
		client := c
		if ct.contextTimeout {
			client = cTimeout
		}
		flush(t, c)
		decide, err := ct.build(client, ks.spec, time.Now)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := decide(ctx, ks.keys[0]); err != nil || !ok {
			t.Fatalf("%s: first call on a fresh key: admitted %v, error %v", ct.name, ok, err)
		}
		var admitted atomic.Int64
		errs := make(chan error, 16)
		for range 16 {
			go func() {
				for range 20 {
					ok, err := decide(ctx, ks.keys[0])
					if err != nil {
						errs <- err
						return
					}
					if ok {
						admitted.Add(1)
					}
				}
				errs <- nil
			}()
		}
		for range 16 {
			if err := <-errs; err != nil {
				t.Fatalf("%s: %v", ct.name, err)
			}
		}
		if n := admitted.Load(); n != 0 {
			t.Errorf("%s admitted %d of 320 calls after its one admission of the hour", ct.name, n)
		}
	}
}
