package ratelimithttp_test

import (
	"context"
	"sync"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// countLimiter is a test-only Limiter: each (limit, key) admits Max units
// and denies the rest, reporting fixed durations so that header values are
// exact without a clock. A call is admitted only if every limit has room,
// and each limit's decision says whether it had room, as runtime.Limiter
// requires. No Redis is involved.
type countLimiter struct {
	mu         sync.Mutex
	counts     map[string]int
	keys       []string
	retryAfter time.Duration
	resetAfter time.Duration
	err        error // returned instead of a decision when set
}

var _ runtime.Limiter = (*countLimiter)(nil)

func newCountLimiter(retryAfter, resetAfter time.Duration) *countLimiter {
	return &countLimiter{counts: map[string]int{}, retryAfter: retryAfter, resetAfter: resetAfter}
}

func (c *countLimiter) Decide(_ context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range reqs {
		c.keys = append(c.keys, r.Key)
	}
	if c.err != nil {
		return runtime.Decisions{}, c.err
	}
	if err := runtime.Validate(reqs...); err != nil {
		return runtime.Decisions{}, err
	}
	ds := runtime.Decisions{Allowed: true, Each: make([]runtime.Decision, len(reqs))}
	for i, r := range reqs {
		cost := max(int(r.Cost), 1)
		left := r.Limit.Max - c.counts[runtime.Key(r.Limit.Name, r.Key)]
		if left >= cost {
			ds.Each[i] = runtime.Decision{Allowed: true, Remaining: left - cost, ResetAfter: c.resetAfter}
			continue
		}
		ds.Allowed = false
		ds.Each[i] = runtime.Decision{Remaining: left, RetryAfter: c.retryAfter, ResetAfter: c.resetAfter}
	}
	if !ds.Allowed {
		// Nothing is recorded: a limit with room reports the room it has.
		for i := range ds.Each {
			if ds.Each[i].Allowed {
				ds.Each[i].Remaining += max(int(reqs[i].Cost), 1)
			}
		}
		return ds, nil
	}
	for _, r := range reqs {
		c.counts[runtime.Key(r.Limit.Name, r.Key)] += max(int(r.Cost), 1)
	}
	return ds, nil
}

func (c *countLimiter) seenKeys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.keys...)
}
