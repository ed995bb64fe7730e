package runtime

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"
)

// MemoryLimiter is a Limiter that keeps its counts in the process. It makes
// the same decisions as a RedisLimiter on the same clock, so it serves as the
// embedded default for tests and single-instance programs, and as the
// fallback of a RedisLimiter during a Redis outage. It is safe for concurrent
// use. Keys whose admissions have all stopped counting are evicted as the
// limiter is used, so memory stays proportional to the keys active within
// the longest window.
type MemoryLimiter struct {
	now    func() int64 // microseconds
	shards [memShards]memShard
}

const memShards = 64

type memShard struct {
	mu     sync.Mutex
	states map[memKey]*memEntry
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

// memKey mirrors the Redis storage key: algorithm, limit name, key.
type memKey struct {
	algo      Algorithm
	name, key string
}

type memEntry struct {
	state    memState
	expireAt int64 // µs; from then on the state holds nothing that counts
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
		m.shards[i].states = make(map[memKey]*memEntry)
		m.shards[i].sweepAt = memMinSweep
	}
	return m
}

// Allow is AllowN with a cost of 1.
func (m *MemoryLimiter) Allow(ctx context.Context, l Limit, key string) (Decision, error) {
	return m.AllowN(ctx, l, key, 1)
}

// AllowN admits a call costing n units if the limit has room for all of
// them, and records them; otherwise it records nothing and reports when
// there will be room. See the package documentation for the exact semantics.
func (m *MemoryLimiter) AllowN(ctx context.Context, l Limit, key string, n int) (Decision, error) {
	if err := checkRequest(l, n); err != nil {
		return Decision{}, err
	}
	if err := ctx.Err(); err != nil {
		return Decision{}, err
	}
	k := memKey{algo: l.algorithm(), name: l.Name, key: key}
	s := &m.shards[shardOf(l.Name, key)]
	p := paramsOf(l, n)

	s.mu.Lock()
	defer s.mu.Unlock()
	now := m.now()
	e := s.entry(k, now)
	v := e.state.check(now, p)
	if v.ok {
		e.state.commit(now, p, &v)
		e.expireAt = now + v.reset
	}
	return v.decision(v.ok), nil
}

// AllowAll admits a call only if every request's limit has room, recording
// it in all of them; otherwise it records nothing. The shards of all keys
// are locked together, in a fixed order, so the decision is atomic.
func (m *MemoryLimiter) AllowAll(ctx context.Context, reqs ...Request) (Decisions, error) {
	if err := checkRequests(reqs); err != nil {
		return Decisions{}, err
	}
	if err := ctx.Err(); err != nil {
		return Decisions{}, err
	}
	idx := make([]uint32, 0, len(reqs))
	for _, r := range reqs {
		idx = append(idx, shardOf(r.Limit.Name, r.Key))
	}
	order := slices.Clone(idx)
	slices.Sort(order)
	order = slices.Compact(order)
	for _, i := range order {
		m.shards[i].mu.Lock()
	}
	defer func() {
		for _, i := range order {
			m.shards[i].mu.Unlock()
		}
	}()

	now := m.now()
	entries := make([]*memEntry, len(reqs))
	vs := make([]verdict, len(reqs))
	all := true
	for i, r := range reqs {
		entries[i] = m.shards[idx[i]].entry(memKey{algo: r.Limit.algorithm(), name: r.Limit.Name, key: r.Key}, now)
		vs[i] = entries[i].state.check(now, paramsOf(r.Limit, r.cost()))
		all = all && vs[i].ok
	}
	if all {
		for i, r := range reqs {
			entries[i].state.commit(now, paramsOf(r.Limit, r.cost()), &vs[i])
			entries[i].expireAt = now + vs[i].reset
		}
	}
	return combine(vs, all), nil
}

// entry returns k's state, creating it (and sweeping first, when due).
// The shard must be locked.
func (s *memShard) entry(k memKey, now int64) *memEntry {
	if e := s.states[k]; e != nil {
		return e
	}
	if len(s.states) >= s.sweepAt || now >= s.nextSweep {
		s.sweep(now)
	}
	e := &memEntry{state: algoSpecs[k.algo].newState()}
	s.states[k] = e
	return e
}

// sweep deletes every state that holds nothing that counts.
func (s *memShard) sweep(now int64) {
	for k, e := range s.states {
		if e.expireAt <= now {
			delete(s.states, k)
		}
	}
	s.sweepAt = max(memMinSweep, 2*len(s.states))
	s.nextSweep = now + memSweepInterval
}

// Len reports how many keys the limiter currently holds, expired ones not
// yet evicted included. It is meant for tests and metrics.
func (m *MemoryLimiter) Len() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += len(s.states)
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
	if c := l.capacity(); n > c {
		return costError(l, n, "it is larger than the limit's capacity ("+strconv.Itoa(c)+"), so it could never be admitted")
	}
	return nil
}
