package redislimit

import (
	"context"
	"sync"
	"time"
)

// fakeClock is a clock tests move by hand, so that expectations about
// windows never depend on how fast the machine is. Both backends read it
// through WithClock (redislimit's, and runtime's for the memory limiter).
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

// newFakeClock starts at a fixed, microsecond-aligned instant.
func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

var ctx = context.Background()

func us(n int64) time.Duration { return time.Duration(n) * time.Microsecond }
