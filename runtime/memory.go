package runtime

import (
	"context"
	"crypto/sha256"
	"hash/maphash"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/ratelimitgen/ratelimitgen/runtime/internal/sweep"
)

// MemoryLimiter is a Limiter that keeps its counts in the process. It makes
// the same decisions as runtime/redislimit's Limiter on the same clock, so it serves as the
// embedded default for tests and single-instance programs, and as the
// fallback of a Redis limiter during a Redis outage. It is safe for concurrent
// use. Keys whose admissions have all stopped counting are evicted as the
// limiter is used, so memory stays proportional to the keys active within
// the longest window; names and keys longer than 180 bytes are held as their
// SHA-256, as in Redis, so that what a key costs does not depend on its
// length.
//
// A decision costs no allocation once its key is held: the key is hashed
// once, that hash picks one of 64 shards, each with its own lock, and finds
// the key's entry in the shard's table, and the entry holds the algorithm's
// state in the same allocation. An idle key costs one entry (48 bytes, plus
// its algorithm's state: 16 to 48 bytes), a copy of the key's bytes, and
// 16 bytes of table at a load between 3/8 and 3/4; a sliding log adds 8
// bytes per admission still in its window.
type MemoryLimiter struct {
	shards [memShards]memShard

	// clock is WithClock's clock, or nil for the default one. The default
	// reads the monotonic clock only, counted from epoch: that costs half
	// of what time.Now costs (which also reads the wall clock), and the
	// clock then never steps back when the wall clock is set. It starts at
	// the wall clock's time when the limiter is made and advances as the
	// monotonic clock does.
	clock       func() time.Time
	epoch       time.Time
	epochMicros int64

	// keySeed seeds the hash of keys. It is random per limiter, so that no
	// caller can choose keys that collide.
	keySeed maphash.Seed
}

const (
	memShardBits = 6
	memShards    = 1 << memShardBits
)

// memShard holds the keys whose hashes start with its index. Its fields
// are padded to two cache lines, so that a call on one shard never takes
// the cache line of another's lock away from the core that is using it.
type memShard struct {
	memShardState
	_ [128 - unsafe.Sizeof(memShardState{})%128]byte
}

type memShardState struct {
	mu sync.Mutex
	// n is how many entries the shard holds.
	n int
	// sweepAt is the size at which the next sweep of expired keys runs;
	// doubling it after each sweep keeps sweeping amortised O(1) per call.
	sweepAt int
	// nextSweep (µs) also triggers a sweep, checked on every call, so that
	// a shard whose calls only visit existing keys still lets go of the
	// expired ones (see tidy).
	nextSweep int64
	// last is the latest default-clock time (µs) a call on the shard used.
	// The default clock is read before the lock is taken, to keep the
	// lock's hold short, so a call that waited for the lock may carry an
	// older time than the one before it; it then decides at last instead,
	// and the shard's time never goes back, as when the clock was read
	// under the lock.
	last int64
	// slots is an open-addressing hash table of the shard's entries by
	// their 64-bit hash, probed linearly from the hash's low bits; its
	// length is a power of two. A Go map would hash the hash again, and
	// needs a chain for keys whose hashes are equal; here such keys simply
	// take further slots. An empty slot has a nil entry; a slot whose
	// entry a sweep deleted holds memDeleted, so that probes go past it,
	// until an insertion reuses it or the table is rebuilt.
	slots []memSlot
	// used counts the slots that are not empty: n plus the deleted ones.
	used int
	// peak is the largest n since the table was last sized. A sweep that
	// leaves n far below it rebuilds the table to fit, so that the memory
	// of a burst of keys goes back to the runtime.
	peak int
}

type memSlot struct {
	h uint64
	e *memEntry
}

// memDeleted marks a slot whose entry was swept.
var memDeleted = new(memEntry)

// memMinSlots is the smallest table.
const memMinSlots = 8

const (
	memMinSweep      = 64
	memSweepInterval = int64(10 * time.Second / time.Microsecond)
	// memShrinkFactor: a sweep that leaves a table at or below
	// 1/memShrinkFactor of its peak size rebuilds it. The copy costs one
	// step per slot, no more than the sweep itself, so it stays amortised
	// O(1) per call.
	memShrinkFactor = 4
)

// memAlgo numbers the algorithms for the memory limiter's keys, so that an
// entry records its algorithm in one byte.
type memAlgo uint8

const (
	memSlidingLog memAlgo = iota
	memSlidingWindow
	memFixedWindow
	memTokenBucket
	memGCRA
	memAlgos
)

// memAlgoOf returns a's number; the zero Algorithm is SlidingLog. ok is
// false for an unknown algorithm, which Validate rejects.
func memAlgoOf(a Algorithm) (_ memAlgo, ok bool) {
	switch a {
	case SlidingLog, "":
		return memSlidingLog, true
	case SlidingWindow:
		return memSlidingWindow, true
	case FixedWindow:
		return memFixedWindow, true
	case TokenBucket:
		return memTokenBucket, true
	case GCRA:
		return memGCRA, true
	}
	return 0, false
}

// memKey mirrors the Redis storage key: algorithm, limit name, key. A name
// or key longer than maxLiteralLen is held as its SHA-256, as appendEncoded
// does for Redis, so that a caller-chosen key (from a header, say) cannot
// make the limiter hold megabytes per key. The hashed flags keep a digest
// apart from a literal name or key made of the same 32 bytes. There is one
// flag per part: with a single one, (long name N, key D) and (name
// sha256(N), long key K) would share an entry whenever D is sha256(K).
//
// name and key are the stored forms: the caller's strings, or views of
// digests kept in the caller's frame (see memDigests), so that even a long
// key costs no allocation until the limiter first stores it.
type memKey struct {
	name, key             string
	algo                  memAlgo
	nameHashed, keyHashed bool
}

// memDigests holds the digests of a memKey's long parts.
type memDigests struct {
	name, key [sha256.Size]byte
}

// newMemKey returns the key of (algo, name, key), hashing the long parts
// into d, which must live as long as the key. (It returns the key rather
// than filling one in place so that escape analysis can see that d lives
// only as long as the key does, and keep both on the caller's stack.)
func newMemKey(algo memAlgo, name, key string, d *memDigests) memKey {
	k := memKey{algo: algo, name: name, key: key}
	if len(name) > maxLiteralLen {
		d.name = sum256(name)
		k.name, k.nameHashed = unsafe.String(&d.name[0], len(d.name)), true
	}
	if len(key) > maxLiteralLen {
		d.key = sum256(key)
		k.key, k.keyHashed = unsafe.String(&d.key[0], len(d.key)), true
	}
	return k
}

// sum256 returns s's SHA-256. It hashes the string's own bytes: Sum256 only
// reads them, and []byte(s) would copy the whole key on every call, as much
// work as the hash.
func sum256(s string) [sha256.Size]byte {
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// digest returns s's SHA-256 as a 32-byte string.
func digest(s string) string {
	sum := sum256(s)
	return string(sum[:])
}

// hash returns k's 64-bit hash; its top memShardBits bits pick the shard.
//
// Only the key is hashed in full, with the limiter's random seed: it is
// what callers (and their users) choose, and a second full hash of the
// name would cost as much again on every call. The name, which the
// program chooses, is folded in through nameFold; two names that fold
// alike only make their keys share a chain, as matches tells them apart.
func (m *MemoryLimiter) hash(k *memKey) uint64 {
	return maphash.String(m.keySeed, k.key) ^ nameFold(k.name, k.algo)
}

// nameFold mixes a name's length, its first and last 8 bytes, and the
// algorithm into 64 bits. Names of up to 16 bytes count whole; longer ones
// that differ only in the middle fold alike.
func nameFold(name string, algo memAlgo) uint64 {
	n := len(name)
	x := uint64(n)<<56 ^ uint64(algo)<<48
	if n >= 8 {
		x ^= le64(name) ^ bits.RotateLeft64(le64(name[n-8:]), 31)
	} else {
		for i := 0; i < n; i++ {
			x ^= uint64(name[i]) << (8 * i)
		}
	}
	x *= 0x9e3779b97f4a7c15
	return x ^ x>>29
}

// le64 reads s's first 8 bytes as a little-endian number.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// shardOf returns the index of the shard of hash h.
func shardOf(h uint64) uint64 { return h >> (64 - memShardBits) }

// memEntry is one key's record. It is the head of a memEntryOf, which holds
// the algorithm's state in the same allocation: 48 bytes, and with the
// state of GCRA (16 bytes) the whole entry fits one cache line.
type memEntry struct {
	// name and key are the stored forms (see memKey).
	name, key string
	expireAt  int64 // µs; from then on the state holds nothing that counts
	// algo says which memEntryOf the entry heads.
	algo                  memAlgo
	nameHashed, keyHashed bool
}

type memEntryOf[S any] struct {
	memEntry
	s S
}

// stateOf returns the state of e, which must head a memEntryOf[S]: e.algo
// says which S. Reading the state through the entry's own allocation, not
// through an interface held in it, saves the interface's 16 bytes per key
// and lets the calls below inline.
func stateOf[S any](e *memEntry) *S {
	return &(*memEntryOf[S])(unsafe.Pointer(e)).s
}

// newEntry returns a new entry for algo with a zero state.
func newEntry(algo memAlgo) *memEntry {
	switch algo {
	case memSlidingLog:
		return &new(memEntryOf[slidingLog]).memEntry
	case memSlidingWindow:
		return &new(memEntryOf[slidingWindow]).memEntry
	case memFixedWindow:
		return &new(memEntryOf[fixedWindow]).memEntry
	case memTokenBucket:
		return &new(memEntryOf[tokenBucket]).memEntry
	}
	return &new(memEntryOf[gcra]).memEntry
}

// matches reports whether e is k's entry.
func (e *memEntry) matches(k *memKey) bool {
	return e.algo == k.algo && e.nameHashed == k.nameHashed && e.keyHashed == k.keyHashed &&
		e.key == k.key && e.name == k.name
}

// check and commit call the state's own methods directly, not through an
// interface: the calls then inline, and the verdict stays on the stack.
func (e *memEntry) check(now int64, p params) verdict {
	switch e.algo {
	case memSlidingLog:
		return stateOf[slidingLog](e).check(now, p)
	case memSlidingWindow:
		return stateOf[slidingWindow](e).check(now, p)
	case memFixedWindow:
		return stateOf[fixedWindow](e).check(now, p)
	case memTokenBucket:
		return stateOf[tokenBucket](e).check(now, p)
	}
	return stateOf[gcra](e).check(now, p)
}

func (e *memEntry) commit(now int64, p params, v *verdict) {
	switch e.algo {
	case memSlidingLog:
		stateOf[slidingLog](e).commit(now, p, v)
	case memSlidingWindow:
		stateOf[slidingWindow](e).commit(now, p, v)
	case memFixedWindow:
		stateOf[fixedWindow](e).commit(now, p, v)
	case memTokenBucket:
		stateOf[tokenBucket](e).commit(now, p, v)
	default:
		stateOf[gcra](e).commit(now, p, v)
	}
	e.expireAt = now + v.reset
}

// NewMemoryLimiter returns an in-process Limiter reading the process's
// monotonic clock, or WithClock's.
func NewMemoryLimiter(opts ...MemoryOption) *MemoryLimiter {
	m := &MemoryLimiter{keySeed: maphash.MakeSeed()}
	for _, o := range opts {
		if o != nil {
			o(m)
		}
	}
	m.epoch = time.Now()
	m.epochMicros = m.epoch.UnixMicro()
	for i := range m.shards {
		m.shards[i].slots = make([]memSlot, memMinSlots)
		m.shards[i].sweepAt = memMinSweep
	}
	return m
}

// earlyNow returns the default clock's time in µs, or 0 under WithClock,
// whose clock is read under the shard lock (see lockedNow).
func (m *MemoryLimiter) earlyNow() int64 {
	if m.clock != nil {
		return 0
	}
	return m.epochMicros + int64(time.Since(m.epoch)/time.Microsecond)
}

// lockedNow returns the time at which a call on s decides, given what
// earlyNow returned. WithClock's clock is read here, under the lock, so
// that calls decide in the order of the times they read. s must be locked.
func (m *MemoryLimiter) lockedNow(s *memShard, early int64) int64 {
	if m.clock != nil {
		return m.clock().UnixMicro()
	}
	if early < s.last {
		return s.last
	}
	s.last = early
	return early
}

// Allow admits a call of cost 1 under l for key if the limit has room, and
// records it; otherwise it records nothing and reports when there will be
// room. It is Decide for one request, without the Decisions.
func (m *MemoryLimiter) Allow(ctx context.Context, l Limit, key string) (Decision, error) {
	return m.allowN(ctx, l, key, 1)
}

// allowN decides one request with no allocation once its key is held.
func (m *MemoryLimiter) allowN(ctx context.Context, l Limit, key string, n int64) (Decision, error) {
	algo, p, plain := plainRequest(l, n)
	if !plain || len(l.Name) > maxLiteralLen || len(key) > maxLiteralLen {
		return m.allowLong(ctx, l, key, n)
	}
	if err := ctx.Err(); err != nil {
		return Decision{}, err
	}
	k := memKey{algo: algo, name: l.Name, key: key}
	h := m.hash(&k)
	v := m.decide(&m.shards[shardOf(h)], h, &k, l.Name, p, m.earlyNow())
	return v.decision(), nil
}

// allowLong is allowN for the calls that plainRequest does not vouch for
// or whose name or key is long: it validates in full and hashes the long
// parts.
func (m *MemoryLimiter) allowLong(ctx context.Context, l Limit, key string, n int64) (Decision, error) {
	if err := checkRequest(l, n); err != nil {
		return Decision{}, err
	}
	if err := ctx.Err(); err != nil {
		return Decision{}, err
	}
	algo, _ := memAlgoOf(l.Algorithm)
	var d memDigests
	k := newMemKey(algo, l.Name, key, &d)
	h := m.hash(&k)
	p := paramsOf(l, n)
	v := m.decide(&m.shards[shardOf(h)], h, &k, l.Name, p, m.earlyNow())
	return v.decision(), nil
}

// decide runs one call on shard s, everything that needs its lock and
// nothing else. name is the limit's name as the caller gave it.
func (m *MemoryLimiter) decide(s *memShard, h uint64, k *memKey, name string, p params, early int64) verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := m.lockedNow(s, early)
	s.tidy(now)
	e := s.entry(h, k, name)
	v := e.check(now, p)
	if v.ok {
		e.commit(now, p, &v)
	}
	return v
}

// Decide admits a call only if every request's limit has room, recording
// it in all of them; otherwise it records nothing (see Limiter). The shards
// of all keys are locked together, in a fixed order, so the decision is
// atomic.
func (m *MemoryLimiter) Decide(ctx context.Context, reqs ...Request) (Decisions, error) {
	if len(reqs) == 1 {
		d, err := m.allowN(ctx, reqs[0].Limit, reqs[0].Key, reqs[0].cost())
		if err != nil {
			return Decisions{}, err
		}
		return Decisions{Allowed: d.Allowed, Each: []Decision{d}}, nil
	}
	if err := Validate(reqs...); err != nil {
		return Decisions{}, err
	}
	if err := ctx.Err(); err != nil {
		return Decisions{}, err
	}
	// Each key is built and hashed once, as hashing a long one is worth
	// doing only once; up to four requests with short names and keys need
	// no allocation but the Decisions.
	const inline = 4
	var (
		keyBuf   [inline]memKey
		hashBuf  [inline]uint64
		orderBuf [inline]uint64
		entBuf   [inline]*memEntry
		vBuf     [inline]verdict
		pBuf     [inline]params
	)
	keys, hashes, order := keyBuf[:0], hashBuf[:0], orderBuf[:0]
	entries, vs, ps := entBuf[:0], vBuf[:0], pBuf[:0]
	if len(reqs) > inline {
		keys = make([]memKey, 0, len(reqs))
		hashes = make([]uint64, 0, len(reqs))
		order = make([]uint64, 0, len(reqs))
		entries = make([]*memEntry, 0, len(reqs))
		vs = make([]verdict, 0, len(reqs))
		ps = make([]params, 0, len(reqs))
	}
	for i, r := range reqs {
		algo, _ := memAlgoOf(r.Limit.Algorithm)
		p := paramsOf(r.Limit, r.cost())
		var d *memDigests
		if len(r.Limit.Name) > maxLiteralLen || len(r.Key) > maxLiteralLen {
			// Rare enough to allocate: a digest in a stack array would
			// have to outlive this iteration.
			d = new(memDigests)
		}
		keys = append(keys, newMemKey(algo, r.Limit.Name, r.Key, d))
		h := m.hash(&keys[i])
		hashes = append(hashes, h)
		order = append(order, shardOf(h))
		ps = append(ps, p)
	}
	slices.Sort(order)
	order = slices.Compact(order)
	early := m.earlyNow()
	for _, i := range order {
		m.shards[i].mu.Lock()
	}
	defer func() {
		for _, i := range order {
			m.shards[i].mu.Unlock()
		}
	}()

	now := early
	if m.clock != nil {
		now = m.clock().UnixMicro()
	} else {
		for _, i := range order {
			now = max(now, m.shards[i].last)
		}
		for _, i := range order {
			m.shards[i].last = now
		}
	}
	// Sweep before the first lookup: a sweep between two lookups could
	// delete an expired entry the call already holds, and the admission
	// then recorded in it would be lost.
	for _, i := range order {
		m.shards[i].tidy(now)
	}
	all := true
	for i := range reqs {
		e := m.shards[shardOf(hashes[i])].entry(hashes[i], &keys[i], reqs[i].Limit.Name)
		entries = append(entries, e)
		vs = append(vs, e.check(now, ps[i]))
		all = all && vs[i].ok
	}
	if all {
		for i, e := range entries {
			e.commit(now, ps[i], &vs[i])
		}
	}
	ds := Decisions{Allowed: all, Each: make([]Decision, len(vs))}
	for i, v := range vs {
		ds.Each[i] = v.decision()
	}
	return ds, nil
}

// tidy sweeps the shard when a sweep is due: the shard has doubled since the
// last one, or memSweepInterval has passed and the shard holds more than
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
	if s.n >= s.sweepAt || (now >= s.nextSweep && s.n > memMinSweep) {
		s.sweep(now)
	}
}

// entry returns k's entry, creating it if needed; h is k's hash, name the
// limit's name as the caller gave it. The shard must be locked.
func (s *memShard) entry(h uint64, k *memKey, name string) *memEntry {
	mask := uint64(len(s.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		sl := &s.slots[i]
		if sl.e == nil {
			return s.add(h, k, name)
		}
		if sl.h == h && sl.e.matches(k) {
			return sl.e
		}
	}
}

// add creates k's entry; k has none. It is kept out of entry so that the
// lookup stays small.
func (s *memShard) add(h uint64, k *memKey, name string) *memEntry {
	e := newEntry(k.algo)
	e.algo, e.nameHashed, e.keyHashed = k.algo, k.nameHashed, k.keyHashed
	// A short name is held as the caller's string, as a limit's name is
	// normally a constant. A key may be a slice of a much larger string (a
	// request body, say); holding the slice would hold all of it, so it is
	// copied. Digests live in the caller's frame, so they are copied too.
	// Nothing of k itself is kept, which lets its digests stay on the
	// stack.
	e.name = name
	if k.nameHashed {
		e.name = strings.Clone(k.name)
	}
	e.key = strings.Clone(k.key)
	if 4*(s.used+1) > 3*len(s.slots) {
		// At most 3/4 of the slots in use keeps probes short; the new
		// table is at most half full.
		s.resize(2 * (s.n + 1))
	}
	s.place(h, e)
	s.n++
	s.peak = max(s.peak, s.n)
	return e
}

// place puts e in the first free or deleted slot of h's probe sequence.
func (s *memShard) place(h uint64, e *memEntry) {
	mask := uint64(len(s.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		sl := &s.slots[i]
		if sl.e == nil || sl.e == memDeleted {
			if sl.e == nil {
				s.used++
			}
			*sl = memSlot{h: h, e: e}
			return
		}
	}
}

// resize rebuilds the table with room for at least size entries, without
// the deleted slots.
func (s *memShard) resize(size int) {
	n := memMinSlots
	for n < size {
		n *= 2
	}
	old := s.slots
	s.slots = make([]memSlot, n)
	s.used = 0
	for _, sl := range old {
		if sl.e != nil && sl.e != memDeleted {
			s.place(sl.h, sl.e)
		}
	}
}

// sweep deletes every entry that holds nothing that counts, and rebuilds
// the table when that leaves it far below its peak size, or mostly made of
// deleted slots. It returns how many entries remain. The shard must be
// locked.
func (s *memShard) sweep(now int64) int {
	for i := range s.slots {
		sl := &s.slots[i]
		if sl.e != nil && sl.e != memDeleted && sl.e.expireAt <= now {
			*sl = memSlot{e: memDeleted}
			s.n--
		}
	}
	if (s.peak > memMinSweep && s.n <= s.peak/memShrinkFactor) || s.used-s.n > len(s.slots)/4 {
		s.resize(2 * s.n)
		s.peak = s.n
	}
	s.sweepAt = max(memMinSweep, 2*s.n)
	s.nextSweep = now + memSweepInterval
	return s.n
}

// sweep deletes the expired entries of every shard, rebuilding the tables
// that have shrunk far below their peak so that the memory really goes back
// to the runtime, and returns how many entries remain. It locks one shard
// at a time, so calls on the other shards go on meanwhile.
//
// A Redis limiter calls it on its fallback once Redis decides again: the keys
// of an outage are then visited no more, and their shards might not sweep
// for a long while (a shard that no call reaches never does).
func (m *MemoryLimiter) sweep() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		early := m.earlyNow()
		s.mu.Lock()
		n += s.sweep(m.lockedNow(s, early))
		s.mu.Unlock()
	}
	return n
}

func init() {
	sweep.Memory = func(l any) (int, bool) {
		m, ok := l.(*MemoryLimiter)
		if !ok {
			return 0, false
		}
		return m.sweep(), true
	}
}

// Len reports how many keys the limiter currently holds, expired ones not
// yet evicted included. It is meant for tests and metrics.
func (m *MemoryLimiter) Len() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += s.n
		s.mu.Unlock()
	}
	return n
}
