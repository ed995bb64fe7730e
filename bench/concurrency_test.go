package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/redislimit"
)

// BenchmarkConcurrency measures calls in flight against our GCRA on one
// Redis server, 10,000 keys, 64 callers, in one run:
//
//   - op=gcra: runtime.Enforce on a GCRA limit, the baseline;
//   - op=acquire-release: runtime.Admit on a concurrency limit of Max 100
//     (never full), then Settle, which releases the permit;
//   - op=semaphore: the minimal Lua semaphore a team would write, one
//     sorted set per key, one script call per acquire (drop expired,
//     count, add) and one per release (ZREM), unbatched.
func BenchmarkConcurrency(b *testing.B) {
	c := startRedis(b)
	keys := manyKeys(10000)
	const callers = 64
	b.Run("op=gcra", func(b *testing.B) {
		flush(b, c)
		check := &redisChecked{}
		check.lim = redislimit.New(c, redislimit.WithOnDegraded(func(redislimit.DegradedEvent) { check.degraded.Add(1) }))
		l := runtime.Limit{Name: "bench", Window: time.Second, Max: 1 << 20, Algorithm: runtime.GCRA}
		runParallel(b, func(ctx context.Context, key string) (bool, error) {
			ok, err := admitted(runtime.Enforce(ctx, check.lim, runtime.Request{Limit: l, Key: key}))
			if err == nil {
				err = check.err()
			}
			return ok, err
		}, keys, callers)
	})
	b.Run("op=acquire-release", func(b *testing.B) {
		flush(b, c)
		check := &redisChecked{}
		check.lim = redislimit.New(c, redislimit.WithOnDegraded(func(redislimit.DegradedEvent) { check.degraded.Add(1) }))
		l := runtime.Limit{Name: "bench", Window: time.Minute, Max: 100, Algorithm: runtime.Concurrency}
		runParallel(b, func(ctx context.Context, key string) (bool, error) {
			h, err := runtime.Admit(ctx, check.lim, runtime.Request{Limit: l, Key: key})
			if ok, err := admitted(err); !ok || err != nil {
				return ok, err
			}
			if err := h.Settle(ctx, 1); err != nil {
				return false, err
			}
			return true, check.err()
		}, keys, callers)
	})
	b.Run("op=semaphore", func(b *testing.B) {
		flush(b, c)
		s := newSemaphore(c, 100, time.Minute)
		runParallel(b, func(ctx context.Context, key string) (bool, error) {
			id, ok, err := s.acquire(ctx, key)
			if !ok || err != nil {
				return ok, err
			}
			return true, s.release(ctx, key, id)
		}, keys, callers)
	})
}

// semaphore is the minimal distributed semaphore on Redis: a sorted set
// per key whose members are permit ids scored by their expiry, on the
// server's clock.
type semaphore struct {
	c        *redis.Client
	max      int
	lease    time.Duration
	acq, rel *redis.Script
	ids      atomic.Int64
}

func newSemaphore(c *redis.Client, max int, lease time.Duration) *semaphore {
	return &semaphore{c: c, max: max, lease: lease,
		acq: redis.NewScript(`
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2]) / 1000))
return 1`),
		rel: redis.NewScript(`return redis.call('ZREM', KEYS[1], ARGV[1])`),
	}
}

func (s *semaphore) acquire(ctx context.Context, key string) (string, bool, error) {
	id := strconv.FormatInt(s.ids.Add(1), 36)
	n, err := s.acq.Run(ctx, s.c, []string{"sem:" + key}, s.max, s.lease.Microseconds(), id).Int()
	if err != nil {
		return "", false, fmt.Errorf("acquire: %w", err)
	}
	return id, n == 1, nil
}

func (s *semaphore) release(ctx context.Context, key, id string) error {
	return s.rel.Run(ctx, s.c, []string{"sem:" + key}, id).Err()
}
