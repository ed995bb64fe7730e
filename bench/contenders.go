package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	ulredis "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/redislimit"
)

// spec is one policy, expressed in each library's own terms by its
// contender: at most max admissions per window.
type spec struct {
	window time.Duration
	max    int
}

// decideFunc decides one call for key: admitted or not. An error means no
// decision; benchmarks and tests stop on it.
type decideFunc func(ctx context.Context, key string) (bool, error)

// contender is one library (and algorithm) under comparison.
type contender struct {
	name string
	// algorithm is what the library promises, for the tables.
	algorithm string
	// clock is where decisions take their time from: "server" (Redis TIME
	// or key TTLs) or "client" (the caller's clock, passed in).
	clock string
	// build returns the decision function of one app instance. now is that
	// instance's clock; contenders whose clock is "server" ignore it.
	build func(c *redis.Client, s spec, now func() time.Time) (decideFunc, error)
	// contextTimeout runs the contender on a client with go-redis's
	// ContextTimeoutEnabled, instead of the default client everyone gets.
	contextTimeout bool
}

// ratelimitgen builds ratelimitgen's Redis limiter for one algorithm, on
// its defaults: FailLocal and the 500ms timeout, which counts only the
// time the process could run, so that a loaded 2-core box that starves the
// client for a while does not by itself end a wait. The benchmark measures
// what a service ships. What the defaults would hide is a decision made by
// the in-memory fallback instead of Redis: it is far cheaper, and a
// benchmark that quietly counted it would measure the wrong thing. So every
// decision Redis did not make is counted (WithOnDegraded, which runs on the
// deciding goroutine), and from the first one on every call returns an
// error, which stops the benchmark or test with its cause. FailClosed and
// a long timeout are no longer needed for honesty: the check is what keeps
// it. extra options come after the check; withClock makes the limiter read
// the instance's clock instead of Redis TIME.
// limitMax is the Max of ratelimitgen's limit for a spec's max under
// algo: max, but at most runtime.MaxSlidingLog for a sliding log, which
// refuses more because a key's memory grows with Max.
func limitMax(algo runtime.Algorithm, max int) int {
	if algo == runtime.SlidingLog {
		return min(max, runtime.MaxSlidingLog)
	}
	return max
}

func ratelimitgen(algo runtime.Algorithm, withClock bool, extra ...redislimit.Option) func(*redis.Client, spec, func() time.Time) (decideFunc, error) {
	return func(c *redis.Client, s spec, now func() time.Time) (decideFunc, error) {
		return ratelimitgenOn(c, algo, s, now, withClock, extra...)
	}
}

// ratelimitgenOn is ratelimitgen's decision function on any go-redis
// client: one server, a Cluster or a Ring.
func ratelimitgenOn(c redis.UniversalClient, algo runtime.Algorithm, s spec, now func() time.Time, withClock bool, extra ...redislimit.Option) (decideFunc, error) {
	var degraded atomic.Int64
	var first atomic.Pointer[redislimit.DegradedEvent]
	opts := []redislimit.Option{redislimit.WithOnDegraded(func(e redislimit.DegradedEvent) {
		first.CompareAndSwap(nil, &e)
		degraded.Add(1)
	})}
	if withClock {
		opts = append(opts, redislimit.WithClock(now))
	}
	opts = append(opts, extra...)
	lim := redislimit.New(c, opts...)
	l := runtime.Limit{Name: "bench", Window: s.window, Max: limitMax(algo, s.max), Algorithm: algo}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	return func(ctx context.Context, key string) (bool, error) {
		d, err := lim.Allow(ctx, l, key)
		if n := degraded.Load(); n > 0 {
			e := first.Load()
			return false, fmt.Errorf("%d decisions not made by Redis (%v decided instead), the first because of: %w", n, e.Policy, e.Err)
		}
		return d.Allowed, err
	}, nil
}

// unbatched is ratelimitgen as it was before batching and the deny cache:
// one script call per decision, no denial remembered in process. The
// -nobatch rows run it beside the defaults so that the gain stays visible.
var unbatched = []redislimit.Option{redislimit.WithBatching(false), redislimit.WithDenyCache(0)}

func redisRate(c *redis.Client, s spec, _ func() time.Time) (decideFunc, error) {
	return redisRateOn(c, s)
}

// redisRateOn is redisRate on any go-redis client.
func redisRateOn(c redis.UniversalClient, s spec) (decideFunc, error) {
	lim := redis_rate.NewLimiter(c)
	l := redis_rate.Limit{Rate: s.max, Burst: s.max, Period: s.window}
	return func(ctx context.Context, key string) (bool, error) {
		res, err := lim.Allow(ctx, key, l)
		if err != nil {
			return false, err
		}
		return res.Allowed > 0, nil
	}, nil
}

func ulule(c *redis.Client, s spec, _ func() time.Time) (decideFunc, error) {
	store, err := ulredis.NewStoreWithOptions(c, limiter.StoreOptions{Prefix: "ulule"})
	if err != nil {
		return nil, fmt.Errorf("ulule/limiter redis store: %w", err)
	}
	lim := limiter.New(store, limiter.Rate{Period: s.window, Limit: int64(s.max)})
	return func(ctx context.Context, key string) (bool, error) {
		lc, err := lim.Get(ctx, key)
		if err != nil {
			return false, err
		}
		return !lc.Reached, nil
	}, nil
}

func seed(c *redis.Client, s spec, now func() time.Time) (decideFunc, error) {
	if now == nil {
		now = time.Now
	}
	sl := seedLimiter{client: c, now: now}
	window := s.window.Milliseconds()
	return func(ctx context.Context, key string) (bool, error) {
		return sl.tryAcquire(ctx, "seed:"+key, s.max, window)
	}, nil
}

// contenders are the libraries every benchmark and comparison runs, in
// table order. Each uses its library's documented entry point with default
// options; ratelimitgen's rows also check that Redis made every decision
// (see ratelimitgen).
var contenders = []contender{
	{name: "ratelimitgen-sliding-log", algorithm: "sliding log (exact)", clock: "server", build: ratelimitgen(runtime.SlidingLog, false)},
	{name: "ratelimitgen-gcra", algorithm: "GCRA", clock: "server", build: ratelimitgen(runtime.GCRA, false)},
	{name: "redis_rate", algorithm: "GCRA", clock: "server", build: redisRate},
	{name: "ulule", algorithm: "fixed window from first call", clock: "server", build: ulule},
	{name: "seed-lua", algorithm: "sliding log (exact)", clock: "client", build: seed},
}

// unbatchedContenders are ratelimitgen's two algorithms with batching and
// the deny cache off (see unbatched), benchmarked beside the defaults.
var unbatchedContenders = []contender{
	{name: "ratelimitgen-sliding-log-nobatch", algorithm: "sliding log (exact)", clock: "server", build: ratelimitgen(runtime.SlidingLog, false, unbatched...)},
	{name: "ratelimitgen-gcra-nobatch", algorithm: "GCRA", clock: "server", build: ratelimitgen(runtime.GCRA, false, unbatched...)},
}

// clientClockRatelimitgen is ratelimitgen's sliding log with WithClock, the
// option for callers that trust their own clocks; the skew comparison runs
// it beside the server-clock default.
var clientClockRatelimitgen = contender{
	name: "ratelimitgen-sliding-log+WithClock", algorithm: "sliding log (exact)", clock: "client",
	build: ratelimitgen(runtime.SlidingLog, true),
}

// contextTimeoutRatelimitgen is ratelimitgen's sliding log on a client
// with ContextTimeoutEnabled, whose reads would follow a context deadline
// that a paused process passes: there the limiter waits for every reply on
// a goroutine of its own, where on a default client a lone decision is
// read on its caller's goroutine. Benchmarked beside the default to show
// what that costs.
var contextTimeoutRatelimitgen = contender{
	name: "ratelimitgen-sliding-log+ctxtimeout", algorithm: "sliding log (exact)", clock: "server",
	build: ratelimitgen(runtime.SlidingLog, false), contextTimeout: true,
}

// newClient is the one client configuration every contender gets:
// go-redis defaults, as a service would construct it.
func newClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr})
}

// newContextTimeoutClient is newClient with ContextTimeoutEnabled.
func newContextTimeoutClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
}
