package redislimit

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// The deny cache remembers Redis's denials in process and answers calls
// they cover without asking Redis (see WithDenyCache).
//
// Concurrency limits (see permit.go) are never remembered.
//
// What a denial proves: Redis denied a call of cost c on (limit, key) at
// its time T with RetryAfter r. Denials record nothing and every other
// call only consumes room, so no call of cost c or more can be admitted on
// that (limit, key) before T+r; only a refund, a settle that gives units
// back (see Limiter.Hold), a reset, the release or end of a lease (see
// WithLeases), Redis losing counts, or the limit's values
// changing can make room earlier: a denial then stays cached past the room
// made, which errs toward denial. The limit's values are
// part of a denial's identity (its Name and the key, and the numbers the
// script receives: algorithm, window, max and burst, as the call resolved
// them), so a changed limit is never answered from a denial made under
// other values. Each denial is kept with its full
// identity and compared in full: two different keys never share a denial,
// whatever their hashes.
//
// The cache never learns T itself. It reads its own clock just before the
// call is sent (T0 <= T) and keeps the denial in force on [T0, T0+r): by
// the time that ends, the proof's own end T+r may not have come yet, never
// the other way round. Its clock is the limiter's WithClock clock, which
// the script receives truncated to the microsecond, or else the process's
// monotonic clock measured against Redis's TIME, which runs at the same
// rate (see WithDenyCache for what a step of Redis's clock does).
//
// Memory: every denial is charged its real bytes (the entry, its name and
// key, and its share of the shard's map and ring, whose capacity Go never
// gives back and is therefore charged at its high-water mark); a shard
// that would exceed its share of the budget evicts with CLOCK, a
// second-chance approximation of least-recently-used: a hit only sets a
// bit, so that hits take the shard's read lock and never write anything
// shared but that bit, once. Expired denials are dropped when the hand
// passes them. Each shard also keeps the denial it last found in an atomic
// pointer, read without the lock, so that one key hammered by many
// callers costs no write to shared memory at all.

const (
	// denyMaxShards bounds the shards; a budget is split into shards of at
	// least denyMinShardBytes so that each holds dozens of denials.
	denyMaxShards     = 64
	denyMinShardBytes = 8 << 10
	// denySlotBytes is what one denial costs in its shard's map and ring:
	// a swiss-table slot of a uint64 and a pointer is 17 bytes, at a load
	// between 7/16 and 7/8, so at most 39 bytes per denial; the ring's
	// pointer is 8 bytes in a slice that grows to at most twice that.
	denySlotBytes = 64
)

// denyEntryBytes is what one denial whose name and key together are n
// bytes long costs, rounded up to Go's allocation size classes, which
// waste at most an eighth of an object above 128 bytes.
func denyEntryBytes(n int) int {
	return allocBytes(int(unsafe.Sizeof(denial{}))) + allocBytes(n)
}

// allocBytes bounds what the heap spends on an object of n bytes.
func allocBytes(n int) int {
	switch {
	case n == 0:
		return 0
	case n <= 128:
		return (n + 15) &^ 15
	}
	return n + n/8 + 16
}

// denyCache is the cache of one Limiter; nil when WithDenyCache(0).
type denyCache struct {
	seed maphash.Seed
	// clock is the limiter's WithClock clock, or nil for the monotonic
	// clock, read as the time since base.
	clock func() time.Time
	base  time.Time
	// seen is, with the limiter's clock, the latest time a script may
	// have run at (see ran).
	seen atomic.Int64
	// shift selects a shard from a hash's top bits (64 with one shard).
	shift      uint
	shardBytes int
	shards     []denyShard
	// held counts the denials in the shards (changed under a shard's
	// lock, read without): while it is 0, as it is for a limiter whose
	// calls are admitted, a lookup costs no hashing.
	held atomic.Int64
}

type denyShard struct {
	// hot is the shard's last denial found under the lock, read without
	// it: a key hammered by many callers is answered without touching the
	// lock's shared counters.
	hot atomic.Pointer[denial]
	mu  sync.RWMutex
	m   map[uint64]*denial
	// ring holds the shard's denials in the CLOCK hand's order; the hand
	// is the index of the next one to look at.
	ring []*denial
	hand int
	// bytes is what the denials themselves cost; slots is the high-water
	// mark of their number since the map was last rebuilt, for which the
	// map and the ring hold capacity.
	bytes int
	slots int
	_     [40]byte // 128 bytes: keep shards on cache lines of their own
}

// denial is one remembered denial. Once in a shard, its fields other than
// ref and pos never change (a newer denial of the same identity is a new
// denial), so that the shard's hot denial can be read without the lock:
// a denial that was in the shard remains a true one until its end, except
// after forget, which takes it out of hot too.
type denial struct {
	hash uint64
	// id is the limit's Name followed by the key, copied into one
	// allocation of the cache's own; nameLen splits it.
	id      string
	nameLen int
	// window is in µs, as the script receives it.
	window int64
	max    int64
	burst  int64
	algo   uint8
	// ref is CLOCK's referenced bit: set by a hit, cleared by the hand.
	ref atomic.Bool
	// pos is the denial's index in its shard's ring.
	pos int
	// cost is the denied cost: calls of at least this cost are covered.
	cost int64
	// from and until bound when the denial is in force, [from, until), on
	// the cache's clock in ns: from just before the call was sent.
	from, until int64
	// retryAt is when the caller is told to retry: r after Redis's reply
	// arrived, so that the RetryAfter a cached denial reports is never
	// shorter than Redis's own would be.
	retryAt int64
	// remaining and reset are Redis's Remaining and ResetAfter at from.
	remaining int
	reset     time.Duration
}

func newDenyCache(maxBytes int, clock func() time.Time) *denyCache {
	if maxBytes <= 0 {
		return nil
	}
	n := 1
	for n < denyMaxShards && maxBytes/(2*n) >= denyMinShardBytes {
		n *= 2
	}
	c := &denyCache{
		seed:       maphash.MakeSeed(),
		clock:      clock,
		base:       time.Now(),
		shift:      uint(64 - bits.TrailingZeros(uint(n))),
		shardBytes: maxBytes / n,
		shards:     make([]denyShard, n),
	}
	return c
}

// now reads the cache's clock in ns: the limiter's clock truncated to the
// microsecond, as the script receives it, or the monotonic clock.
func (c *denyCache) now() int64 {
	return c.nowAt(time.Now())
}

// nowAt is now, given the process's clock read at at.
func (c *denyCache) nowAt(at time.Time) int64 {
	if c.clock != nil {
		return c.clock().UnixMicro() * 1000
	}
	return int64(at.Sub(c.base))
}

// hash spreads a denial's identity over 64 bits with the cache's seed. It
// only places denials: their identities are compared in full.
func (c *denyCache) hash(q runtime.Request, a *ask) uint64 {
	// Two one-shot hashes cost less than streaming both strings through a
	// maphash.Hash; the rotation keeps (name, key) and (key, name) apart.
	x := bits.RotateLeft64(maphash.String(c.seed, q.Limit.Name), 17) ^ maphash.String(c.seed, q.Key)
	x ^= uint64(a.window) * 0x9e3779b97f4a7c15
	x = bits.RotateLeft64(x, 29) ^ uint64(a.max)*0xbf58476d1ce4e5b9
	x = bits.RotateLeft64(x, 31) ^ uint64(a.burst)*0x94d049bb133111eb ^ uint64(a.algo())
	return x * 0xff51afd7ed558ccd
}

func (c *denyCache) shard(h uint64) *denyShard {
	return &c.shards[h>>c.shift]
}

// matches reports whether e is the denial of exactly q's limit and key,
// which resolved to a.
func (e *denial) matches(q runtime.Request, a *ask) bool {
	name, key := q.Limit.Name, q.Key
	return e.nameLen == len(name) && len(e.id) == len(name)+len(key) &&
		e.window == a.window && e.max == a.max && e.burst == a.burst && e.algo == a.algo() &&
		e.id[:e.nameLen] == name && e.id[e.nameLen:] == key
}

// ran notes that a script ran at or before t, on the limiter's clock.
func (c *denyCache) ran(t int64) {
	for {
		seen := c.seen.Load()
		if t <= seen || c.seen.CompareAndSwap(seen, t) {
			return
		}
	}
}

// lookup reads the clock (the process's was read at at) and denies reqs
// from the cache when a denial in force covers every request not in
// runtime.ModeOff and at least one of them is enforced, filling their
// verdicts as the script would. A denial
// of a shadow limit is as exact as any but never denies: a call with an
// uncovered limit, or with no enforced one, goes to Redis whole. It
// returns the time it read, for remember. A nil cache answers nothing.
func (c *denyCache) lookup(reqs []runtime.Request, asks []ask, vs []verdict, at time.Time) (int64, bool) {
	if c == nil {
		return 0, false
	}
	now := c.nowAt(at)
	if c.clock != nil && now < c.seen.Load() {
		// The limiter's clock went back behind a script it ran: that
		// script may have tidied away admissions that count again now,
		// which no denial foresaw.
		return now, false
	}
	if c.held.Load() == 0 {
		return now, false
	}
	enforced := false
	for i, q := range reqs {
		if q.Limit.Mode == runtime.ModeOff {
			continue
		}
		v, ok := c.find(q, &asks[i], now)
		if !ok {
			return now, false
		}
		vs[i] = v
		enforced = enforced || q.Limit.Mode == runtime.ModeEnforce
	}
	return now, enforced
}

// find returns the denial of q in force at now, as the script's verdict.
// It allocates nothing.
func (c *denyCache) find(q runtime.Request, a *ask, now int64) (verdict, bool) {
	h := c.hash(q, a)
	s := c.shard(h)
	if e := s.hot.Load(); e != nil && e.hash == h {
		if e.covers(q, a, now) {
			return e.verdict(now), true
		}
	}
	s.mu.RLock()
	e := s.m[h]
	if e == nil || !e.covers(q, a, now) {
		s.mu.RUnlock()
		return verdict{}, false
	}
	if s.hot.Load() != e {
		s.hot.Store(e)
	}
	s.mu.RUnlock()
	return e.verdict(now), true
}

// covers reports whether e denies q at now, and marks it used. Only a call
// of the denied cost is covered: a larger one might have to wait longer
// than e says.
func (e *denial) covers(q runtime.Request, a *ask, now int64) bool {
	if a.cost != e.cost || now < e.from || now >= e.until || !e.matches(q, a) {
		return false
	}
	if !e.ref.Load() {
		e.ref.Store(true)
	}
	return true
}

// verdict is e's answer at now, in µs like the script's, rounded up: its
// RetryAfter runs to retryAt, which is never before Redis's own answer
// would say room may appear.
func (e *denial) verdict(now int64) verdict {
	return verdict{
		remaining: int64(e.remaining),
		retry:     ceilMicros(e.retryAt - now),
		reset:     max(0, ceilMicros(int64(e.reset)-(now-e.from))),
	}
}

func ceilMicros(ns int64) int64 {
	return (ns + 999) / 1000
}

// remember keeps the denials of a call that Redis decided, asked at t0 (as
// lookup returned it), from its verdicts vs: each limit that had no room
// is a denial for that limit alone, at the cost it was asked with, whether
// or not the call had other limits or was admitted (a shadow limit without
// room in an admitted call). The denial holds whatever the limit's mode
// later: a shadow limit without room records nothing and one with room
// records the call, as an enforced one does, so room appears in the same
// ways. Limits in runtime.ModeOff were not asked and teach nothing. A call
// with several limits also forgets the denials its limits with room
// contradict: on a Redis Cluster such a call may have refunded them (see
// forget). Single-limit admissions teach nothing. err is run's: a failed
// call may still have run on Redis, at its time.
func (c *denyCache) remember(reqs []runtime.Request, d *resolvedCall, err error, t0 int64) {
	if c == nil {
		return
	}
	from, slack := t0, int64(0)
	// t1 is read only when needed (most calls are admitted).
	var t1 int64
	read := c.clock != nil
	if read {
		t1 = c.now()
		c.ran(t1)
		// The script read the clock after t0; if it went backwards in
		// between, the script's time is unknown.
		if t1 < t0 {
			return
		}
	} else {
		// Redis truncates its time to the microsecond, so room may appear
		// up to 1µs before T+r by the process's clock.
		slack = int64(time.Microsecond)
	}
	vs := d.vs
	if err != nil || len(vs) != len(reqs) {
		return
	}
	if len(reqs) > 1 {
		for i, v := range vs {
			if v.ok && reqs[i].Limit.Mode != runtime.ModeOff {
				c.forget(reqs[i], &d.asks[i])
			}
		}
	}
	for i, v := range vs {
		// A concurrency limit's denial proves nothing about the next call:
		// a release may free a permit at any moment (its RetryAfter is 0).
		if v.ok || v.retry <= 0 || reqs[i].Limit.Mode == runtime.ModeOff || d.asks[i].algo() == codeConcurrency {
			continue
		}
		until := from + int64(micros(v.retry)) - slack
		if until <= from {
			continue
		}
		if !read {
			t1, read = c.now(), true
		}
		c.insert(reqs[i], &d.asks[i], from, until, t1+int64(micros(v.retry)), v, t1)
	}
}

// insert keeps one denial, replacing the one of the same identity (or,
// rarely, of the same hash) unless that one covers at least as much for at
// least as long. now is the time, for dropping expired denials.
func (c *denyCache) insert(q runtime.Request, a *ask, from, until, retryAt int64, v verdict, now int64) {
	l := q.Limit
	h := c.hash(q, a)
	s := c.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	defer c.count(s, len(s.ring))
	if e := s.m[h]; e != nil {
		if e.matches(q, a) {
			if e.cost == a.cost && e.from <= from && e.until >= until {
				return
			}
			// Replaced by a new denial: the old one may be hot.
			n := &denial{hash: h, id: e.id, nameLen: e.nameLen, pos: e.pos}
			n.set(a, from, until, retryAt, v)
			n.ref.Store(true)
			s.m[h] = n
			s.ring[e.pos] = n
			s.hot.CompareAndSwap(e, n)
			return
		}
		// Another identity with the same 64-bit hash: the newer denial
		// takes its place.
		s.remove(e)
	}
	size := denyEntryBytes(len(l.Name) + len(q.Key))
	if size+denySlotBytes > c.shardBytes {
		return
	}
	// Expired denials are given back even when the cache is far from full.
	s.dropExpired(now)
	for len(s.ring) > 0 && s.bytes+size+denySlotBytes*max(s.slots, len(s.ring)+1) > c.shardBytes {
		s.evict(now)
		if len(s.ring) < s.slots/2 {
			s.rebuild()
		}
	}
	if s.bytes+size+denySlotBytes*max(s.slots, len(s.ring)+1) > c.shardBytes {
		s.rebuild()
	}
	e := &denial{hash: h, id: l.Name + q.Key, nameLen: len(l.Name)}
	e.set(a, from, until, retryAt, v)
	// A new denial starts referenced: it survives the hand's next pass.
	e.ref.Store(true)
	if s.m == nil {
		s.m = make(map[uint64]*denial)
	}
	s.m[h] = e
	e.pos = len(s.ring)
	s.ring = append(s.ring, e)
	s.bytes += size
	s.slots = max(s.slots, len(s.ring))
}

// forget drops the denial of q's limit and key if Redis just found room
// for q, which that denial says cannot be: room appeared that the denial
// did not foresee. Only a refund (or Redis losing counts) does that; the
// calls that refund are the multi-limit calls, and their limits with room
// report it after the refund, so this process stops denying from a denial
// its own refund made wrong.
func (c *denyCache) forget(q runtime.Request, a *ask) {
	h := c.hash(q, a)
	s := c.shard(h)
	s.mu.RLock()
	e := s.m[h]
	s.mu.RUnlock()
	if e == nil {
		return
	}
	s.mu.Lock()
	if e := s.m[h]; e != nil && e.cost <= a.cost && e.matches(q, a) {
		s.remove(e)
		c.held.Add(-1)
	}
	s.mu.Unlock()
}

// count adds to held what s, locked, gained since it held before denials.
func (c *denyCache) count(s *denyShard, before int) {
	if n := len(s.ring) - before; n != 0 {
		c.held.Add(int64(n))
	}
}

func (e *denial) set(a *ask, from, until, retryAt int64, v verdict) {
	e.window, e.max, e.burst, e.algo = a.window, a.max, a.burst, a.algo()
	e.cost, e.from, e.until, e.retryAt = a.cost, from, until, retryAt
	e.remaining, e.reset = int(v.remaining), micros(v.reset)
}

// dropExpired looks at the next two denials from the hand and removes
// those that expired, moving the hand past the others, so that expired
// denials go at least as fast as new ones come.
func (s *denyShard) dropExpired(now int64) {
	for range 2 {
		if len(s.ring) == 0 {
			return
		}
		s.hand %= len(s.ring)
		if e := s.ring[s.hand]; now >= e.until || now < e.from {
			s.removeAt(s.hand)
		} else {
			s.hand++
		}
	}
}

// evict removes one denial: the first at or after the hand that expired or
// was not referenced since the hand last passed it.
func (s *denyShard) evict(now int64) {
	for len(s.ring) > 0 {
		s.hand %= len(s.ring)
		e := s.ring[s.hand]
		if now < e.until && now >= e.from && e.ref.Load() {
			e.ref.Store(false)
			s.hand++
			continue
		}
		s.removeAt(s.hand)
		return
	}
}

// remove removes e, which is in the shard.
func (s *denyShard) remove(e *denial) {
	s.removeAt(e.pos)
}

// removeAt removes the ring's i-th denial, moving the last into its place.
func (s *denyShard) removeAt(i int) {
	e := s.ring[i]
	if s.m[e.hash] == e {
		delete(s.m, e.hash)
	}
	if s.hot.Load() == e {
		s.hot.Store(nil)
	}
	last := len(s.ring) - 1
	s.ring[i] = s.ring[last]
	s.ring[i].pos = i
	s.ring[last] = nil
	s.ring = s.ring[:last]
	s.bytes -= denyEntryBytes(len(e.id))
}

// rebuild gives back the capacity the map and the ring hold beyond the
// denials left: Go never shrinks a map.
func (s *denyShard) rebuild() {
	m := make(map[uint64]*denial, len(s.ring))
	for _, e := range s.ring {
		m[e.hash] = e
	}
	s.m = m
	s.ring = append([]*denial(nil), s.ring...)
	s.slots = len(s.ring)
}

// len returns how many denials the cache holds, expired ones included.
func (c *denyCache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += len(s.ring)
		s.mu.RUnlock()
	}
	return n
}

// bytes returns what the cache charges against its budget.
func (c *denyCache) bytes() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += s.bytes + denySlotBytes*s.slots
		s.mu.RUnlock()
	}
	return n
}
