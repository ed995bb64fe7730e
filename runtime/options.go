package runtime

import "time"

// MemoryOption configures a MemoryLimiter.
type MemoryOption func(*MemoryLimiter)

// WithClock makes the memory limiter read time from now instead of the
// process's monotonic clock, for deterministic tests and for sharing one
// clock with another limiter.
func WithClock(now func() time.Time) MemoryOption {
	return func(m *MemoryLimiter) { m.clock = now }
}
