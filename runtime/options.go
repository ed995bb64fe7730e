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

// WithMaxMemory sets the most memory, in bytes, that the limiter's keys
// may hold (default 64 MiB; maxBytes <= 0 keeps it), split evenly between
// its 64 shards. A key is charged its entry, its state (a sliding log 8
// bytes per admission in its window), its copy of the key, and its table
// slots; a limit's name is shared, not copied, unless longer than 180 bytes.
//
// A new key that does not fit is still decided, in its own new entry: room
// is made by evicting keys whose admissions have all expired, then keys
// unused since the eviction hand last passed them (SIEVE), so that keys in
// steady use outlast a flood of one-time keys. When a key that still
// counted admissions goes, the call's Decisions.Cause is ErrMemoryFull
// (Allow, which returns no Decisions, cannot say); the call's own keys
// always stay. Room is made as keys are added: a state that grows
// meanwhile is charged at once, and made room for by the next new key.
func WithMaxMemory(maxBytes int) MemoryOption {
	return func(m *MemoryLimiter) { m.maxBytes = maxBytes }
}
