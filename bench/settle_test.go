package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/redislimit"
)

// BenchmarkSettle measures what settling a call after it returns costs, on
// one Redis server, 10,000 keys of Max 100 per second:
//
//   - op=enforce: runtime.Enforce, the decision alone (the baseline);
//   - op=admit: runtime.Admit, never settled: a method with refund= whose
//     calls all count;
//   - op=admit-giveback: runtime.Admit, then Settle(0): every call given
//     back, as successful logins are;
//   - op=peek: runtime.Peek, which records nothing.
//
// Rows at 1 caller compare latency (p50), at 64 throughput (ns/op).
func BenchmarkSettle(b *testing.B) {
	c := startRedis(b)
	type op struct {
		name string
		call func(ctx context.Context, lim runtime.Limiter, l runtime.Limit, key string) (bool, error)
	}
	ops := []op{
		{"enforce", func(ctx context.Context, lim runtime.Limiter, l runtime.Limit, key string) (bool, error) {
			return admitted(runtime.Enforce(ctx, lim, runtime.Request{Limit: l, Key: key}))
		}},
		{"admit", func(ctx context.Context, lim runtime.Limiter, l runtime.Limit, key string) (bool, error) {
			_, err := runtime.Admit(ctx, lim, runtime.Request{Limit: l, Key: key})
			return admitted(err)
		}},
		{"admit-giveback", func(ctx context.Context, lim runtime.Limiter, l runtime.Limit, key string) (bool, error) {
			h, err := runtime.Admit(ctx, lim, runtime.Request{Limit: l, Key: key})
			if ok, err := admitted(err); !ok || err != nil {
				return ok, err
			}
			return true, h.Settle(ctx, 0)
		}},
		{"peek", func(ctx context.Context, lim runtime.Limiter, l runtime.Limit, key string) (bool, error) {
			ds, err := runtime.Peek(ctx, lim, runtime.Request{Limit: l, Key: key})
			return ds.Allowed, err
		}},
	}
	keys := manyKeys(10000)
	for _, algo := range []runtime.Algorithm{runtime.GCRA, runtime.SlidingLog} {
		for _, callers := range []int{1, 64} {
			for _, o := range ops {
				b.Run(fmt.Sprintf("algo=%s/callers=%d/op=%s", algo, callers, o.name), func(b *testing.B) {
					flush(b, c)
					check := &redisChecked{}
					check.lim = redislimit.New(c, redislimit.WithOnDegraded(func(redislimit.DegradedEvent) { check.degraded.Add(1) }))
					l := runtime.Limit{Name: "bench", Window: time.Second, Max: 100, Algorithm: algo}
					decide := func(ctx context.Context, key string) (bool, error) {
						ok, err := o.call(ctx, check.lim, l, key)
						if err == nil {
							err = check.err()
						}
						return ok, err
					}
					if callers == 1 {
						runSequential(b, decide, keys)
					} else {
						runParallel(b, decide, keys, callers)
					}
				})
			}
		}
	}
}

// admitted turns Enforce's answer into a decision: a denial is no error.
func admitted(err error) (bool, error) {
	if errors.Is(err, runtime.ErrLimited) {
		return false, nil
	}
	return err == nil, err
}

// redisChecked is a Redis limiter whose decisions the fallback made are
// counted: a benchmark that quietly counted them would measure the wrong
// thing (see ratelimitgen in contenders.go).
type redisChecked struct {
	lim      *redislimit.Limiter
	degraded atomic.Int64
}

func (r *redisChecked) err() error {
	if n := r.degraded.Load(); n > 0 {
		return fmt.Errorf("%d decisions not made by Redis", n)
	}
	return nil
}
