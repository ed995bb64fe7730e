package memlimit

import "time"

// Option configures a Limiter.
type Option func(*Limiter)

// WithClock makes the limiter read time from now instead of the
// process's monotonic clock, for deterministic tests and for sharing one
// clock with another limiter.
func WithClock(now func() time.Time) Option {
	return func(m *Limiter) { m.clock = now }
}

// WithMaxMemory sets the most memory, in bytes, that the limiter's keys
// may hold (default 64 MiB; maxBytes <= 0 keeps it). A new key that does
// not fit is still decided: room is made by evicting keys whose admissions
// have all expired, then keys unused since the eviction hand last passed
// them (SIEVE). When a key that still counted admissions goes, the call's
// Decisions.Cause is ErrFull (Allow cannot say); the call's own keys
// always stay. docs/runtime.md says what a key is charged.
func WithMaxMemory(maxBytes int) Option {
	return func(m *Limiter) { m.maxBytes = maxBytes }
}
