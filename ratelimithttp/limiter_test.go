package ratelimithttp_test

import (
	"context"
	"sync"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// countLimiter is a test-only Limiter: it admits the first Max calls of each
// (limit, key) and denies the rest, reporting fixed durations so that header
// values are exact without a clock. No Redis is involved in this package.
type countLimiter struct {
	mu         sync.Mutex
	counts     map[string]int
	keys       []string
	retryAfter time.Duration
	resetAfter time.Duration
	err        error // returned instead of a decision when set
}

func newCountLimiter(retryAfter, resetAfter time.Duration) *countLimiter {
	return &countLimiter{counts: map[string]int{}, retryAfter: retryAfter, resetAfter: resetAfter}
}

func (c *countLimiter) Allow(_ context.Context, l runtime.Limit, key string) (runtime.Decision, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keys = append(c.keys, key)
	if c.err != nil {
		return runtime.Decision{}, c.err
	}
	k := runtime.Key(l.Name, key)
	if c.counts[k] >= l.Max {
		return runtime.Decision{RetryAfter: c.retryAfter, ResetAfter: c.resetAfter}, nil
	}
	c.counts[k]++
	return runtime.Decision{Allowed: true, Remaining: l.Max - c.counts[k], ResetAfter: c.resetAfter}, nil
}

func (c *countLimiter) seenKeys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.keys...)
}
