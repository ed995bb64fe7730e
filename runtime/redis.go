package runtime

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisLimiter is a Limiter whose counts live in Redis, so that every
// instance of a service shares them. It works with a single server, a Redis
// Cluster and a Sentinel-managed failover client alike: each decision is one
// Lua script on one key, run with EVALSHA and reloaded transparently when a
// server answers NOSCRIPT (after SCRIPT FLUSH, a restart, a failover or on a
// new cluster node). Time comes from the Redis server unless WithClock is
// given. It is safe for concurrent use.
//
// When Redis fails or does not answer within the timeout, the decision
// follows the FailurePolicy; see WithFailurePolicy, WithTimeout and
// WithOnDegraded.
type RedisLimiter struct {
	client   redis.UniversalClient
	cfg      config
	fallback Limiter
	breaker  breaker
	// honoursDeadline is true when the client itself abandons a reply at
	// the context's deadline; otherwise run waits on a goroutine so that
	// the timeout holds whatever the client's read timeout is.
	honoursDeadline bool
}

// NewRedisLimiter returns a Limiter backed by c, which may be a
// *redis.Client, a *redis.ClusterClient or a failover client. The defaults
// are: server time, prefix "ratelimit:", a 100ms timeout per decision, and
// FailLocal with an in-memory fallback.
func NewRedisLimiter(c redis.UniversalClient, opts ...Option) *RedisLimiter {
	cfg := newConfig(opts)
	r := &RedisLimiter{client: c, cfg: cfg, fallback: cfg.fallback}
	if r.fallback == nil {
		var memOpts []Option
		if cfg.clock != nil {
			memOpts = append(memOpts, WithClock(cfg.clock))
		}
		r.fallback = NewMemoryLimiter(memOpts...)
	}
	r.breaker.interval = cfg.retryInterval
	switch c := c.(type) {
	case *redis.Client:
		r.honoursDeadline = c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		r.honoursDeadline = c.Options().ContextTimeoutEnabled
	}
	return r
}

//go:embed lua/sliding_log.lua
var slidingLogSource string

var slidingLogScript = redis.NewScript(slidingLogSource)

// storageAlgo tags the sliding log's keys, so that algorithms added later
// never read each other's data structures.
const storageAlgo = "sl"

// Allow is AllowN with a cost of 1.
func (r *RedisLimiter) Allow(ctx context.Context, l Limit, key string) (Decision, error) {
	return r.AllowN(ctx, l, key, 1)
}

// AllowN admits a call costing n units if the window has room for all of
// them, and records them; otherwise it records nothing and reports when
// there will be room. An error means no decision was made: the request was
// invalid, ctx was done, or Redis failed under FailClosed.
func (r *RedisLimiter) AllowN(ctx context.Context, l Limit, key string, n int) (Decision, error) {
	if err := checkRequest(l, n); err != nil {
		return Decision{}, err
	}
	if err := ctx.Err(); err != nil {
		return Decision{}, err
	}
	start := time.Now()
	ask, probe := r.breaker.allow(start)
	if !ask {
		return r.degrade(ctx, l, key, n, ErrCircuitOpen)
	}

	d, err := r.run(ctx, l, key, n)
	if err == nil {
		r.breaker.record(start, false, probe)
		return d, nil
	}
	if ctx.Err() != nil {
		// The caller gave up; that says nothing about Redis.
		r.breaker.record(start, false, probe)
		return Decision{}, ctx.Err()
	}
	trip := tripsBreaker(err)
	r.breaker.record(time.Now(), trip, probe)
	if trip {
		r.reloadTopology()
	}
	return r.degrade(ctx, l, key, n, err)
}

// reloadTopology makes a cluster client re-read the slot map after a
// failure. go-redis reloads it on MOVED or ASK, or once a minute, but not
// when a crashed master refuses connections; without this the limiter
// would stay degraded for up to a minute after a replica took over.
func (r *RedisLimiter) reloadTopology() {
	if c, ok := r.client.(interface{ ReloadState(context.Context) }); ok {
		c.ReloadState(context.Background())
	}
}

// run asks Redis for one decision within the configured timeout.
func (r *RedisLimiter) run(ctx context.Context, l Limit, key string, n int) (Decision, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.timeout)
	defer cancel()

	now := int64(-1)
	if r.cfg.clock != nil {
		now = r.cfg.clock().UnixMicro()
	}
	buf := make([]byte, 0, 64+len(r.cfg.prefix)+len(l.Name)+len(key))
	skey := string(appendStorageKey(buf, r.cfg.prefix, storageAlgo, l.Name, key))
	res, err := r.eval(ctx, skey, l.Window.Microseconds(), int64(l.Max), int64(n), now)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			err = fmt.Errorf("no answer within %v: %w", r.cfg.timeout, err)
		}
		return Decision{}, err
	}
	return decisionFromReply(res)
}

// eval runs the script, returning by ctx's deadline even when the client
// would wait longer for a reply (its ReadTimeout, 3s by default, applies
// unless ContextTimeoutEnabled is set). An abandoned call may still be
// recorded when Redis answers late; that over-counts, never over-admits.
func (r *RedisLimiter) eval(ctx context.Context, skey string, args ...any) ([]int64, error) {
	keys := []string{skey}
	if r.honoursDeadline {
		return slidingLogScript.Run(ctx, r.client, keys, args...).Int64Slice()
	}
	type reply struct {
		res []int64
		err error
	}
	ch := make(chan reply, 1)
	go func() {
		res, err := slidingLogScript.Run(ctx, r.client, keys, args...).Int64Slice()
		ch <- reply{res, err}
	}()
	select {
	case rep := <-ch:
		return rep.res, rep.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// decisionFromReply turns a script's {allowed, remaining, retry_us, reset_us}
// reply into a Decision; every algorithm's script answers in this shape.
func decisionFromReply(res []int64) (Decision, error) {
	if len(res) != 4 {
		return Decision{}, fmt.Errorf("ratelimit: unexpected script reply %v; is the server a Redis 5+ with Lua?", res)
	}
	return Decision{
		Allowed:    res[0] == 1,
		Remaining:  int(res[1]),
		RetryAfter: micros(res[2]),
		ResetAfter: micros(res[3]),
	}, nil
}

// degrade makes the decision Redis could not make, per the policy.
func (r *RedisLimiter) degrade(ctx context.Context, l Limit, key string, n int, cause error) (Decision, error) {
	ev := DegradedEvent{Limit: l, Policy: r.cfg.policy, Err: cause}
	var (
		d   Decision
		err error
	)
	switch r.cfg.policy {
	case FailOpen:
		d = Decision{Allowed: true, Remaining: l.Max - n}
	case FailClosed:
		err = &UnavailableError{Limit: l, Err: cause}
	default:
		d, err = AllowN(ctx, r.fallback, l, key, n)
		if err != nil {
			err = &UnavailableError{Limit: l, Err: fmt.Errorf("%v; the local fallback failed too: %w", cause, err)}
		}
	}
	ev.Decision = d
	if r.cfg.onDegraded != nil {
		r.cfg.onDegraded(ev)
	}
	return d, err
}

// tripsBreaker reports whether err suggests Redis itself is unavailable, as
// opposed to a problem with one key (a key of another type, say), which
// should not send every other key to the fallback.
func tripsBreaker(err error) bool {
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		return !strings.HasPrefix(msg, "WRONGTYPE") && !strings.HasPrefix(msg, "ERR")
	}
	return true
}
