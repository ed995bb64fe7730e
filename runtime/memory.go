package runtime

import (
	"context"
	"crypto/sha256"
	"hash/maphash"
	"math/bits"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
// once, that hash picks one of 64 shards and finds the key's entry in the
// shard's table without a lock, and the entry holds the algorithm's state in
// the same allocation. Calls on one key are serialised by the key's entry
// alone (GCRA's by a compare-and-swap of its one number), so a call on a
// held key never waits for calls on other keys; a shard's lock is taken
// only to add keys and to evict expired ones. An idle key costs one entry (48 bytes, plus its
// algorithm's state: 16 to 48 bytes), a copy of the key's bytes, and 16 bytes
// of table at a load between 3/8 and 3/4; a sliding log adds 8 bytes per
// admission still in its window.
type MemoryLimiter struct {
	shards [memShards]memShard

	// clock is WithClock's clock, or nil for the default one. The default
	// reads the monotonic clock only, counted from epoch: that costs half
	// of what time.Now costs (which also reads the wall clock), and the
	// clock then never steps back when the wall clock is set. It starts at
	// the wall clock's time when the limiter is made and advances as the
	// monotonic clock does.
	//
	// Either clock is read once a call holds its key's entry (GCRA: once
	// it has loaded the arrival time it will swap; see decideHeld), so
	// that the calls that change a key's state do so at times that never
	// go back, in the order they change it.
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
	// tab is the shard's table. Calls read it without a lock; mu
	// serialises the changes to it (adding and evicting keys, rebuilding
	// it), which publish every slot and every new table atomically.
	tab atomic.Pointer[memTable]
	// nextSweep (µs) also triggers a sweep, checked after every call, so
	// that a shard whose calls only visit existing keys still lets go of
	// the expired ones (see tidy).
	nextSweep atomic.Int64

	mu sync.Mutex
	// n is how many entries the shard holds.
	n int
	// sweepAt is the size at which the next sweep of expired keys runs;
	// doubling it after each sweep keeps sweeping amortised O(1) per call.
	sweepAt int
	// used counts the slots of tab that are not empty: n plus the deleted
	// ones.
	used int
	// peak is the largest n since the table was last sized. A sweep that
	// leaves n far below it rebuilds the table to fit, so that the memory
	// of a burst of keys goes back to the runtime.
	peak int
}

// memTable is an open-addressing hash table of a shard's entries by their
// 64-bit hash, probed linearly from the hash's low bits; its length is a
// power of two. A Go map would hash the hash again, and needs a chain for
// keys whose hashes are equal; here such keys simply take further slots. An
// empty slot has a nil entry; a slot whose entry a sweep deleted holds
// memDeleted, so that probes go past it, until an insertion reuses it or
// the table is rebuilt. A slot never becomes empty again, and at most 3/4
// of them are used, so every probe ends.
//
// Readers hold no lock: they load a slot's entry, then its hash, and trust
// only an entry that matches their key, whose name and key never change.
// A reader that misses an entry being added, or finds one being evicted
// (see memEntry.dead), takes the shard's lock and looks again.
type memTable struct {
	slots []memSlot
	mask  uint64
}

type memSlot struct {
	h atomic.Uint64
	e atomic.Pointer[memEntry]
}

// find returns k's entry in t, whose hash is h, or nil.
func (t *memTable) find(h uint64, k *memKey) *memEntry {
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		sl := &t.slots[i]
		e := sl.e.Load()
		if e == nil {
			return nil
		}
		// A deleted slot keeps its entry's hash; memDeleted, with no
		// name, would match no key anyway.
		if e != memDeleted && sl.h.Load() == h && e.matches(k) {
			return e
		}
	}
}

func newMemTable(n int) *memTable {
	return &memTable{slots: make([]memSlot, n), mask: uint64(n - 1)}
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
//
// Calls on the key hold the entry's lock (mu) while they decide, and read
// the clock under it; GCRA's entries have no use for mu: their state is
// one number, swapped whole (see gcra). A sweep evicts an entry by setting
// dead (GCRA: by swapping in gcraDead) under the same lock, and a call that
// then finds it dead looks the key up again under the shard's lock.
type memEntry struct {
	// name and key are the stored forms (see memKey). They and the flags
	// below never change once the entry is in a table.
	name, key string
	// expireAt (µs, guarded by mu; unused by GCRA): from then on the state
	// holds nothing that counts.
	expireAt int64
	// algo says which memEntryOf the entry heads.
	algo                  memAlgo
	nameHashed, keyHashed bool
	// dead (guarded by mu) marks an entry a sweep evicted.
	dead bool
	mu   entryLock
}

// entryLock is a spin lock of 4 bytes, which fit in memEntry's padding
// where a sync.Mutex (8) would grow every entry. It is held only while one
// call decides, a few dozen nanoseconds; a waiter that spins in vain
// yields its thread, so that a holder the scheduler preempted gets to run.
type entryLock struct{ v atomic.Uint32 }

func (l *entryLock) lock() {
	if !l.v.CompareAndSwap(0, 1) {
		l.lockSlow()
	}
}

func (l *entryLock) lockSlow() {
	for i := 0; ; i++ {
		if l.v.Load() == 0 && l.v.CompareAndSwap(0, 1) {
			return
		}
		if i >= 16 {
			goruntime.Gosched()
		}
	}
}

func (l *entryLock) unlock() { l.v.Store(0) }

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

// newEntry returns a new entry for algo with an empty state.
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
	g := new(memEntryOf[gcra])
	g.s.tat.Store(gcraEmpty)
	return &g.memEntry
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
		// GCRA's state is its expiry.
		stateOf[gcra](e).commit(now, p, v)
		return
	}
	e.expireAt = now + v.reset
}

// acquire takes e for a call under its shard's lock, so that check and
// commit may follow: e's lock, or a claim of GCRA's state. The entry is in
// the shard's table, so not dead.
func (e *memEntry) acquire() {
	if e.algo == memGCRA {
		stateOf[gcra](e).claim()
		return
	}
	e.mu.lock()
}

// release ends acquire.
func (e *memEntry) release() {
	if e.algo == memGCRA {
		stateOf[gcra](e).release()
		return
	}
	e.mu.unlock()
}

// evict marks e dead if nothing in it counts at now, and reports whether it
// did. The shard must be locked.
func (e *memEntry) evict(now int64) bool {
	if e.algo == memGCRA {
		g := stateOf[gcra](e)
		t := g.tat.Load()
		// A call that swaps t in between keeps its key.
		return t <= now && t != gcraClaimed && t != gcraDead && g.tat.CompareAndSwap(t, gcraDead)
	}
	e.mu.lock()
	e.dead = e.expireAt <= now
	dead := e.dead
	e.mu.unlock()
	return dead
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
		m.shards[i].tab.Store(newMemTable(memMinSlots))
		m.shards[i].sweepAt = memMinSweep
	}
	return m
}

// now returns the time in µs: WithClock's, or the default clock's.
func (m *MemoryLimiter) now() int64 {
	if m.clock != nil {
		return m.clock().UnixMicro()
	}
	return m.epochMicros + int64(time.Since(m.epoch)/time.Microsecond)
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
	v := m.decide(&m.shards[shardOf(h)], h, &k, l.Name, p)
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
	v := m.decide(&m.shards[shardOf(h)], h, &k, l.Name, p)
	return v.decision(), nil
}

// decide runs one call on shard s: on the key's entry alone when the
// shard's table holds it, under the shard's lock when the key must be
// added or its entry was just evicted. name is the limit's name as the
// caller gave it.
func (m *MemoryLimiter) decide(s *memShard, h uint64, k *memKey, name string, p params) verdict {
	if e := s.tab.Load().find(h, k); e != nil {
		if v, now, ok := m.decideHeld(e, p); ok {
			if now >= s.nextSweep.Load() {
				m.tidy(s)
			}
			return v
		}
	}
	return m.decideLocked(s, h, k, name, p)
}

// decideHeld decides a call on e without the shard's lock. ok is false if
// e was evicted (or, for GCRA, is claimed by a call under the shard's
// lock): the call must then look its key up again under that lock. now is
// the time of the decision.
func (m *MemoryLimiter) decideHeld(e *memEntry, p params) (v verdict, now int64, ok bool) {
	if e.algo == memGCRA {
		g := stateOf[gcra](e)
		for {
			tat := g.tat.Load()
			if tat == gcraClaimed || tat == gcraDead {
				return verdict{}, 0, false
			}
			// The clock is read after tat: the call that stored tat read
			// its time before storing it, so the calls that change the
			// state decide at times that never go back, in the order of
			// their swaps.
			now = m.now()
			v = gcraCheck(tat, now, p)
			if !v.ok {
				return v, now, true
			}
			if g.tat.CompareAndSwap(tat, v.scratch) {
				gcraCommit(now, p, &v)
				return v, now, true
			}
		}
	}
	e.mu.lock()
	if e.dead {
		e.mu.unlock()
		return verdict{}, 0, false
	}
	now = m.now()
	v = e.check(now, p)
	if v.ok {
		e.commit(now, p, &v)
	}
	e.mu.unlock()
	return v, now, true
}

// decideLocked is decide under the shard's lock, adding the key if needed.
func (m *MemoryLimiter) decideLocked(s *memShard, h uint64, k *memKey, name string, p params) verdict {
	s.mu.Lock()
	now := m.now()
	s.tidy(now)
	e := s.tab.Load().find(h, k)
	if e == nil {
		// A new entry is held before it goes in the table: no other call
		// has decided on it, so the time read above serves.
		e = s.add(h, k, name, true)
	} else {
		e.acquire()
		now = m.now()
	}
	v := e.check(now, p)
	if v.ok {
		e.commit(now, p, &v)
	}
	e.release()
	s.mu.Unlock()
	return v
}

// tidy runs s's sweep if one is due.
func (m *MemoryLimiter) tidy(s *memShard) {
	s.mu.Lock()
	s.tidy(m.now())
	s.mu.Unlock()
}

// Decide admits a call only if every request's limit has room, recording
// it in all of them; otherwise it records nothing (see Limiter). The shards
// of all keys are locked together, in a fixed order, and then the keys'
// entries, so the decision is atomic.
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
	for _, i := range order {
		m.shards[i].mu.Lock()
	}
	defer func() {
		for _, i := range order {
			m.shards[i].mu.Unlock()
		}
	}()

	// Sweep before the first lookup: a sweep between two lookups could
	// delete an expired entry the call already holds, and the admission
	// then recorded in it would be lost.
	now := m.now()
	for _, i := range order {
		m.shards[i].tidy(now)
	}
	for i := range reqs {
		entries = append(entries, m.shards[shardOf(hashes[i])].entry(hashes[i], &keys[i], reqs[i].Limit.Name))
	}
	// Then hold every entry (once, if two requests share one): calls on
	// those keys without the shard's lock wait until the decision is
	// complete. Only calls holding the shards' locks hold several entries,
	// so no two can wait for each other.
	for i, e := range entries {
		if !slices.Contains(entries[:i], e) {
			e.acquire()
		}
	}
	now = m.now()
	all := true
	for i, e := range entries {
		vs = append(vs, e.check(now, ps[i]))
		all = all && vs[i].ok
	}
	if all {
		for i, e := range entries {
			e.commit(now, ps[i], &vs[i])
		}
	}
	for i, e := range entries {
		if !slices.Contains(entries[:i], e) {
			e.release()
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
// memMinSweep entries. It costs a few comparisons otherwise. Calls under
// the shard's lock run it before looking up any entry, never between
// lookups, so that a sweep never deletes an entry such a call holds; calls
// without the lock run it after deciding. The shard must be locked.
//
// The timed sweep lets a shard that stops growing give back a burst's
// memory. A shard of at most memMinSweep entries is left alone (its next
// timed sweep is put off): it holds no more than the slack the size trigger
// allows anyway, and forgetting a key changes decisions if the clock then
// jumps back before its expiry (Redis forgets on its own clock), which the
// differential tests rely on not happening when no key is created.
func (s *memShard) tidy(now int64) {
	switch {
	case s.n >= s.sweepAt:
		s.sweep(now)
	case now < s.nextSweep.Load():
	case s.n > memMinSweep:
		s.sweep(now)
	default:
		s.nextSweep.Store(now + memSweepInterval)
	}
}

// entry returns k's entry, creating it if needed; h is k's hash, name the
// limit's name as the caller gave it. The shard must be locked.
func (s *memShard) entry(h uint64, k *memKey, name string) *memEntry {
	if e := s.tab.Load().find(h, k); e != nil {
		return e
	}
	return s.add(h, k, name, false)
}

// add creates k's entry; k has none. It is kept out of entry so that the
// lookup stays small. With held, the entry is acquired before it goes in
// the table.
func (s *memShard) add(h uint64, k *memKey, name string, held bool) *memEntry {
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
	if 4*(s.used+1) > 3*len(s.tab.Load().slots) {
		// At most 3/4 of the slots in use keeps probes short; the new
		// table is at most half full.
		s.resize(2 * (s.n + 1))
	}
	if held {
		e.acquire()
	}
	if s.tab.Load().place(h, e) {
		s.used++
	}
	s.n++
	s.peak = max(s.peak, s.n)
	return e
}

// place puts e in the first free or deleted slot of h's probe sequence,
// and reports whether the slot was free. The entry is stored last, so that
// a reader that loads it finds its hash. The shard must be locked.
func (t *memTable) place(h uint64, e *memEntry) (free bool) {
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		sl := &t.slots[i]
		if old := sl.e.Load(); old == nil || old == memDeleted {
			sl.h.Store(h)
			sl.e.Store(e)
			return old == nil
		}
	}
}

// resize replaces the table with one with room for at least size entries,
// without the deleted slots. Readers of the old table still find every
// entry it held. The shard must be locked.
func (s *memShard) resize(size int) {
	n := memMinSlots
	for n < size {
		n *= 2
	}
	old := s.tab.Load()
	t := newMemTable(n)
	s.used = 0
	for i := range old.slots {
		if e := old.slots[i].e.Load(); e != nil && e != memDeleted && t.place(old.slots[i].h.Load(), e) {
			s.used++
		}
	}
	s.tab.Store(t)
}

// sweep evicts every entry that holds nothing that counts, and rebuilds
// the table when that leaves it far below its peak size, or mostly made of
// deleted slots. It returns how many entries remain. The shard must be
// locked.
func (s *memShard) sweep(now int64) int {
	t := s.tab.Load()
	for i := range t.slots {
		sl := &t.slots[i]
		if e := sl.e.Load(); e != nil && e != memDeleted && e.evict(now) {
			sl.e.Store(memDeleted)
			s.n--
		}
	}
	if (s.peak > memMinSweep && s.n <= s.peak/memShrinkFactor) || s.used-s.n > len(t.slots)/4 {
		s.resize(2 * s.n)
		s.peak = s.n
	}
	s.sweepAt = max(memMinSweep, 2*s.n)
	s.nextSweep.Store(now + memSweepInterval)
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
		s.mu.Lock()
		n += s.sweep(m.now())
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
