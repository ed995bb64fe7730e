// Package testclock is a clock that tests move by hand, so that
// expectations about windows never depend on how fast the machine is. The
// limiters of both backends read it through their WithClock options.
package testclock

import (
	"sync"
	"time"
)

// Clock is a manually advanced clock, safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a Clock at a fixed, microsecond-aligned instant.
func New() *Clock {
	return &Clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock by d, which may be negative.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
