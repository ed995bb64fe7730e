package bench

import (
	"context"
	"sync"
	"time"

	"github.com/sethvargo/go-limiter/memorystore"
	"golang.org/x/time/rate"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// localContender is one in-process limiter under comparison: no Redis, no
// network, decisions in the calling goroutine.
type localContender struct {
	name string
	// algorithm is what the library promises, for the tables.
	algorithm string
	// build returns a fresh limiter for s and a function that releases it
	// (stops background goroutines); release may be nil.
	build func(s spec) (decide localDecideFunc, release func())
	// oneKey marks a limiter that ignores the key: a single x/time/rate
	// limiter, the yardstick for one hot key. It runs only on keys=hot.
	oneKey bool
}

// localDecideFunc decides one call for key: admitted or not. None of the
// in-process contenders can fail once built.
type localDecideFunc func(ctx context.Context, key string) bool

// memoryLimiter is ratelimitgen's memlimit.Limiter deciding with algo.
func memoryLimiter(algo runtime.Algorithm) func(spec) (localDecideFunc, func()) {
	return func(s spec) (localDecideFunc, func()) {
		lim := memlimit.New()
		l := runtime.Limit{Name: "bench", Window: s.window, Max: limitMax(algo, s.max), Algorithm: algo}
		if err := l.Validate(); err != nil {
			panic(err)
		}
		return func(ctx context.Context, key string) bool {
			d, err := lim.Allow(ctx, l, key)
			if err != nil {
				panic(err)
			}
			return d.Allowed
		}, nil
	}
}

// sethvargoMemorystore is github.com/sethvargo/go-limiter's memorystore
// with its defaults: a map of buckets under one RWMutex, a mutex per
// bucket, and a goroutine that sweeps idle buckets every 6 hours. Its
// bucket refills to Tokens once per Interval since the key's first call.
func sethvargoMemorystore(s spec) (localDecideFunc, func()) {
	store, err := memorystore.New(&memorystore.Config{Tokens: uint64(s.max), Interval: s.window})
	if err != nil {
		panic(err)
	}
	return func(ctx context.Context, key string) bool {
			_, _, _, ok, err := store.Take(ctx, key)
			if err != nil {
				panic(err)
			}
			return ok
		}, func() {
			_ = store.Close(context.Background())
		}
}

// xtimeRateMap is the common hand-rolled keyed limiter: a sync.Map of
// golang.org/x/time/rate token buckets (rate Max per Window, burst Max),
// created on first use. It never forgets a key.
func xtimeRateMap(s spec) (localDecideFunc, func()) {
	var m sync.Map
	every := rate.Every(s.window / time.Duration(s.max))
	if s.window/time.Duration(s.max) == 0 {
		every = rate.Limit(float64(s.max) / s.window.Seconds())
	}
	return func(_ context.Context, key string) bool {
		v, ok := m.Load(key)
		if !ok {
			v, _ = m.LoadOrStore(key, rate.NewLimiter(every, s.max))
		}
		return v.(*rate.Limiter).Allow()
	}, nil
}

// xtimeRateSingle is one x/time/rate limiter for every call, whatever the
// key: the cheapest a hot key can be, and the yardstick for it.
func xtimeRateSingle(s spec) (localDecideFunc, func()) {
	lim := rate.NewLimiter(rate.Limit(float64(s.max)/s.window.Seconds()), s.max)
	return func(context.Context, string) bool { return lim.Allow() }, nil
}

// localContenders are the in-process limiters the InProcess benchmarks
// run, in table order: ratelimitgen's memlimit.Limiter with each algorithm,
// then the peers.
var localContenders = []localContender{
	{name: "memory-sliding-log", algorithm: "sliding log (exact)", build: memoryLimiter(runtime.SlidingLog)},
	{name: "memory-sliding-window", algorithm: "sliding window, 10 buckets", build: memoryLimiter(runtime.SlidingWindow)},
	{name: "memory-fixed-window", algorithm: "fixed window", build: memoryLimiter(runtime.FixedWindow)},
	{name: "memory-token-bucket", algorithm: "token bucket", build: memoryLimiter(runtime.TokenBucket)},
	{name: "memory-gcra", algorithm: "GCRA", build: memoryLimiter(runtime.GCRA)},
	{name: "sethvargo-memorystore", algorithm: "bucket refilled per interval", build: sethvargoMemorystore},
	{name: "xtime-rate-syncmap", algorithm: "token bucket", build: xtimeRateMap},
	{name: "xtime-rate-single", algorithm: "token bucket, one for all keys", build: xtimeRateSingle, oneKey: true},
}
