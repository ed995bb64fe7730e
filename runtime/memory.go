package runtime

import (
	"context"
	"crypto/sha256"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// MemoryLimiter is a Limiter that keeps its counts in the process. It makes
// the same decisions as a RedisLimiter on the same clock, so it serves as the
// embedded default for tests and single-instance programs, and as the
// fallback of a RedisLimiter during a Redis outage. It is safe for concurrent
// use. Keys whose admissions have all stopped counting are evicted as the
// limiter is used, so memory stays proportional to the keys active within
// the longest window; names and keys longer than 180 bytes are held as their
// SHA-256, as in Redis, so that what a key costs does not depend on its
// length.
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
	// nextSweep (µs) also triggers a sweep, checked on every call, so that
	// a shard whose calls only visit existing keys still lets go of the
	// expired ones (see tidy).
	nextSweep int64
	// peak is the largest size of states since the map was made. A Go map
	// keeps the memory of deleted entries, so a sweep that leaves states
	// far below peak copies what is left into a map of the right size.
	peak int
	// committed receives the verdict that commit completes. The verdict's
	// address goes through the memState interface, so a local would escape
	// to the heap on every call; the shard is on the heap already, and
	// locked while it is used.
	committed verdict
}

const (
	memMinSweep      = 64
	memSweepInterval = int64(10 * time.Second / time.Microsecond)
	// memShrinkFactor: a sweep that leaves a map at or below 1/memShrinkFactor
	// of its peak size rebuilds it. The copy costs one step per entry left,
	// no more than a third of the deletions since the map last grew to its
	// peak, so it stays amortised O(1) per call.
	memShrinkFactor = 4
)

// memKey mirrors the Redis storage key: algorithm, limit name, key. A name
// or key longer than maxLiteralLen is held as its SHA-256, as appendEncoded
// does for Redis, so that a caller-chosen key (from a header, say) cannot
// make the limiter hold megabytes per key. The hashed flags keep a digest
// apart from a literal name or key made of the same 32 bytes. There is one
// flag per part: with a single one, (long name N, key D) and (name
// sha256(N), long key K) would share an entry whenever D is sha256(K).
type memKey struct {
	algo                  Algorithm
	name, key             string
	nameHashed, keyHashed bool
}

// newMemKey returns the memKey of (algo, name, key). Short names and keys
// are used as they are, so the common case costs no allocation.
func newMemKey(algo Algorithm, name, key string) memKey {
	k := memKey{algo: algo, name: name, key: key}
	if len(name) > maxLiteralLen {
		k.name, k.nameHashed = digest(name), true
	}
	if len(key) > maxLiteralLen {
		k.key, k.keyHashed = digest(key), true
	}
	return k
}

// digest returns s's SHA-256 as a 32-byte string.
func digest(s string) string {
	// Hash the string's own bytes: Sum256 only reads them, and []byte(s)
	// would copy the whole key on every call, as much work as the hash.
	sum := sha256.Sum256(unsafe.Slice(unsafe.StringData(s), len(s)))
	return string(sum[:])
}

// shard returns the index of k's shard. It hashes the stored form, so a
// long key is not read once more.
func (k *memKey) shard() uint32 {
	return shardOf(k.name, k.key)
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
	k := newMemKey(l.algorithm(), l.Name, key)
	s := &m.shards[k.shard()]
	p := paramsOf(l, n)

	s.mu.Lock()
	defer s.mu.Unlock()
	now := m.now()
	s.tidy(now)
	e := s.entry(k)
	v := e.state.check(now, p)
	if v.ok {
		s.committed = v
		e.state.commit(now, p, &s.committed)
		v = s.committed
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
	// Each key is built once, as hashing a long one is worth doing only
	// once; up to four of them stay on the stack.
	var keyBuf [4]memKey
	keys := keyBuf[:0]
	if len(reqs) > len(keyBuf) {
		keys = make([]memKey, 0, len(reqs))
	}
	idx := make([]uint32, 0, len(reqs))
	for _, r := range reqs {
		k := newMemKey(r.Limit.algorithm(), r.Limit.Name, r.Key)
		keys = append(keys, k)
		idx = append(idx, k.shard())
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
	// Sweep before the first lookup: a sweep between two lookups could
	// delete an expired entry the call already holds, and the admission
	// then recorded in it would be lost.
	for _, i := range order {
		m.shards[i].tidy(now)
	}
	entries := make([]*memEntry, len(reqs))
	vs := make([]verdict, len(reqs))
	all := true
	for i, r := range reqs {
		entries[i] = m.shards[idx[i]].entry(keys[i])
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

// tidy sweeps the shard when a sweep is due: the map has doubled since the
// last one, or memSweepInterval has passed and the map holds more than
// memMinSweep entries. It costs a few comparisons otherwise. Calls run it
// before looking up any entry, never between lookups, so that a sweep
// never deletes an entry a call holds. The shard must be locked.
//
// The timed sweep lets a shard that stops growing give back a burst's
// memory. A shard of at most memMinSweep entries is left alone: it holds
// no more than the slack the size trigger allows anyway, and forgetting a
// key changes decisions if the clock then jumps back before its expiry
// (Redis forgets on its own clock), which the differential tests rely on
// not happening when no key is created.
func (s *memShard) tidy(now int64) {
	if n := len(s.states); n >= s.sweepAt || (now >= s.nextSweep && n > memMinSweep) {
		s.sweep(now)
	}
}

// entry returns k's state, creating it if needed. The shard must be locked.
func (s *memShard) entry(k memKey) *memEntry {
	if e := s.states[k]; e != nil {
		return e
	}
	if !k.keyHashed {
		// The key may be a slice of a much larger string (a request body,
		// say); holding the slice would hold all of it.
		k.key = strings.Clone(k.key)
	}
	e := &memEntry{state: algoSpecs[k.algo].newState()}
	s.states[k] = e
	s.peak = max(s.peak, len(s.states))
	return e
}

// sweep deletes every state that holds nothing that counts, and rebuilds
// the map when that leaves it far below its peak size, since a Go map never
// shrinks by itself. It returns how many entries remain. The shard must be
// locked.
func (s *memShard) sweep(now int64) int {
	for k, e := range s.states {
		if e.expireAt <= now {
			delete(s.states, k)
		}
	}
	n := len(s.states)
	if s.peak > memMinSweep && n <= s.peak/memShrinkFactor {
		fresh := make(map[memKey]*memEntry, n)
		for k, e := range s.states {
			fresh[k] = e
		}
		s.states, s.peak = fresh, n
	}
	s.sweepAt = max(memMinSweep, 2*n)
	s.nextSweep = now + memSweepInterval
	return n
}

// sweep deletes the expired entries of every shard, rebuilding the maps
// that have shrunk far below their peak so that the memory really goes back
// to the runtime, and returns how many entries remain. It locks one shard
// at a time, so calls on the other shards go on meanwhile.
//
// A RedisLimiter calls it on its fallback once Redis decides again: the keys
// of an outage are then visited no more, and their shards might not sweep
// for a long while (a shard that no call reaches never does).
func (m *MemoryLimiter) sweep() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += s.sweep(m.now())
		s.mu.Unlock()
	}
	return n
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
