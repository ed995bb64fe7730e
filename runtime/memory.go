package runtime

import (
	"context"
	"sync"
	"time"
)

// MemoryLimiter is a Limiter that keeps its counts in the process. It makes
// the same decisions as a RedisLimiter on the same clock, so it serves as the
// embedded default for tests and single-instance programs, and as the
// fallback of a RedisLimiter during a Redis outage. It is safe for concurrent
// use. Keys whose admissions have all left their window are evicted as the
// limiter is used, so memory stays proportional to the keys active within
// the longest window.
type MemoryLimiter struct {
	now    func() int64 // microseconds
	shards [memShards]memShard
}

const memShards = 64

type memShard struct {
	mu   sync.Mutex
	logs map[memKey]*memLog
	// sweepAt is the map size at which the next sweep of expired keys runs;
	// doubling it after each sweep keeps sweeping amortised O(1) per call.
	sweepAt int
	// nextSweep (µs) also triggers a sweep, so that a shard that stops
	// growing still lets go of its expired keys.
	nextSweep int64
}

const (
	memMinSweep      = 64
	memSweepInterval = int64(10 * time.Second / time.Microsecond)
)

type memKey struct {
	name, key string
}

type memLog struct {
	log      slidingLog
	expireAt int64 // µs; after this the log holds nothing that counts
}

// NewMemoryLimiter returns an in-process Limiter. It honours WithClock;
// other options are ignored.
func NewMemoryLimiter(opts ...Option) *MemoryLimiter {
	c := newConfig(opts)
	m := &MemoryLimiter{now: func() int64 { return time.Now().UnixMicro() }}
	if c.clock != nil {
		clock := c.clock
		m.now = func() int64 { return clock().UnixMicro() }
	}
	for i := range m.shards {
		m.shards[i].logs = make(map[memKey]*memLog)
		m.shards[i].sweepAt = memMinSweep
	}
	return m
}

// Allow is AllowN with a cost of 1.
func (m *MemoryLimiter) Allow(ctx context.Context, l Limit, key string) (Decision, error) {
	return m.AllowN(ctx, l, key, 1)
}

// AllowN admits a call costing n units if the window has room for all of
// them, and records them; otherwise it records nothing and reports when
// there will be room. See the package documentation for the exact semantics.
func (m *MemoryLimiter) AllowN(ctx context.Context, l Limit, key string, n int) (Decision, error) {
	if err := checkRequest(l, n); err != nil {
		return Decision{}, err
	}
	if err := ctx.Err(); err != nil {
		return Decision{}, err
	}
	k := memKey{name: l.Name, key: key}
	s := &m.shards[shardOf(l.Name, key)]
	window := l.Window.Microseconds()

	s.mu.Lock()
	defer s.mu.Unlock()
	now := m.now()
	ml := s.logs[k]
	if ml == nil {
		if len(s.logs) >= s.sweepAt || now >= s.nextSweep {
			s.sweep(now)
		}
		ml = &memLog{}
		s.logs[k] = ml
	}
	d := ml.log.decide(now, window, l.Max, n)
	if d.Allowed {
		ml.expireAt = ml.log.newest() + window
	}
	if ml.log.len() == 0 {
		delete(s.logs, k)
	}
	return d, nil
}

// sweep deletes every log whose admissions have all expired.
func (s *memShard) sweep(now int64) {
	for k, ml := range s.logs {
		if ml.expireAt <= now {
			delete(s.logs, k)
		}
	}
	s.sweepAt = max(memMinSweep, 2*len(s.logs))
	s.nextSweep = now + memSweepInterval
}

// Len reports how many keys the limiter currently holds, expired ones not
// yet evicted included. It is meant for tests and metrics.
func (m *MemoryLimiter) Len() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += len(s.logs)
		s.mu.Unlock()
	}
	return n
}

func shardOf(name, key string) uint32 {
	const prime32 = 16777619
	h := uint32(2166136261)
	for i := 0; i < len(name); i++ {
		h = (h ^ uint32(name[i])) * prime32
	}
	h = (h ^ 0xff) * prime32
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * prime32
	}
	return h % memShards
}

// checkRequest validates what every backend validates before deciding.
func checkRequest(l Limit, n int) error {
	if err := l.Validate(); err != nil {
		return err
	}
	if n < 1 {
		return costError(l, n, "the cost must be at least 1")
	}
	if n > l.Max {
		return costError(l, n, "it is larger than the limit's Max, so it could never be admitted")
	}
	return nil
}
