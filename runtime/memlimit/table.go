package memlimit

import (
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

const (
	shardBits  = 6
	shardCount = 1 << shardBits
)

// shard holds the keys whose hashes start with its index. Its fields
// are padded to two cache lines, so that a call on one shard never takes
// the cache line of another's lock away from the core that is using it.
type shard struct {
	shardState
	_ [128 - unsafe.Sizeof(shardState{})%128]byte
}

type shardState struct {
	// tab is the shard's table. Calls read it without a lock; mu
	// serialises the changes to it (adding and evicting keys, rebuilding
	// it), which publish every slot and every new table atomically.
	tab atomic.Pointer[table]
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
	// bytes is what the entries cost without their states' slices (see
	// entryBytes), plus the table's slots; budget is the most that bytes
	// and grown may reach together when a key is added.
	bytes, budget int64
	// grown is what the entries' states hold outside them. Calls that
	// grow a state add to it without the shard's lock, evictions take
	// from it.
	grown atomic.Int64
	// hand counts the eviction hand's steps (see evictOne); added is how
	// many entries were added since the last sweep.
	hand  uint64
	added int
	// expiresFrom (µs) is a time before which no entry expires: a sweep
	// before then would find nothing to evict.
	expiresFrom int64
	// waits holds the queues of the HoldWait calls waiting for permits of
	// the shard's Concurrency keys, each in order of arrival (see
	// queue.go); nil when no call waits.
	waits map[waitKey][]queued
}

// table is an open-addressing hash table of a shard's entries by their
// 64-bit hash, probed linearly from the hash's low bits; its length is a
// power of two. A Go map would hash the hash again, and needs a chain for
// keys whose hashes are equal; here such keys simply take further slots. An
// empty slot has a nil entry; a slot whose entry was evicted holds
// deleted, so that probes go past it, until an insertion reuses it or
// the table is rebuilt. A deleted slot becomes empty again only when the
// next one is empty: no probe then goes past it to an entry. At most 3/4
// of the slots are used, so every probe ends.
//
// Readers hold no lock: they load a slot's entry, then its hash, and trust
// only an entry that matches their key, whose name and key never change.
// A reader that misses an entry being added, or finds one being evicted
// (see entryWord), takes the shard's lock and looks again.
type table struct {
	slots []slot
	mask  uint64
}

// slot holds an entry (e, a *entry) and its hash. Once its table is
// published, they are read and written atomically, through the methods
// below. A table being built is written plainly, as storing it in the
// shard publishes all of it: that is cheaper than atomic stores, and under
// the race detector much cheaper, since each address first written
// atomically costs it a record of its own. The padding keeps every slot's
// h 64-bit aligned on 32-bit platforms, where atomic 64-bit operations
// need it and a 12-byte slot would leave every other one unaligned.
type slot struct {
	h uint64
	e unsafe.Pointer
	_ [(8 - unsafe.Sizeof(unsafe.Pointer(nil))%8) % 8]byte
}

func (sl *slot) entry() *entry { return (*entry)(atomic.LoadPointer(&sl.e)) }

func (sl *slot) hash() uint64 { return atomic.LoadUint64(&sl.h) }

// set stores e's hash, then e, so that a reader that loads e finds its
// hash.
func (sl *slot) set(h uint64, e *entry) {
	atomic.StoreUint64(&sl.h, h)
	atomic.StorePointer(&sl.e, unsafe.Pointer(e))
}

func (sl *slot) setEntry(e *entry) { atomic.StorePointer(&sl.e, unsafe.Pointer(e)) }

// find returns k's entry in t, whose hash is h, or nil.
func (t *table) find(h uint64, k *storeKey) *entry {
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		sl := &t.slots[i]
		e := sl.entry()
		if e == nil {
			return nil
		}
		// A deleted slot keeps its entry's hash; deleted, with no
		// name, would match no key anyway.
		if e != deleted && sl.hash() == h && e.matches(k) {
			return e
		}
	}
}

func newTable(n int) *table {
	return &table{slots: make([]slot, n), mask: uint64(n - 1)}
}

// deleted marks a slot whose entry was swept.
var deleted = new(entry)

// minSlots is the smallest table.
const minSlots = 8

// slotBytes is what a slot costs.
const slotBytes = int64(unsafe.Sizeof(slot{}))

const (
	minSweep      = 64
	sweepInterval = int64(10 * time.Second / time.Microsecond)
	// shrinkFactor: a sweep that leaves a table at or below
	// 1/shrinkFactor of its peak size rebuilds it. The copy costs one
	// step per slot, no more than the sweep itself, so it stays amortised
	// O(1) per call.
	shrinkFactor = 4
)

// tidy sweeps the shard when a sweep is due: the shard has doubled since the
// last one, or sweepInterval has passed and the shard holds more than
// minSweep entries. It costs a few comparisons otherwise. Calls under
// the shard's lock run it before looking up any entry, never between
// lookups, so that a sweep never deletes an entry such a call holds; calls
// without the lock run it after deciding. The shard must be locked.
//
// The timed sweep lets a shard that stops growing give back a burst's
// memory. A shard of at most minSweep entries is left alone (its next
// timed sweep is put off): it holds no more than the slack the size trigger
// allows anyway, and forgetting a key changes decisions if the clock then
// jumps back before its expiry (Redis forgets on its own clock), which the
// differential tests rely on not happening when no key is created.
func (s *shard) tidy(now int64) {
	switch {
	case s.n >= s.sweepAt:
		s.sweep(now, nil)
	case now < s.nextSweep.Load():
	case s.n > minSweep:
		s.sweep(now, nil)
	default:
		s.nextSweep.Store(now + sweepInterval)
	}
}

// entry returns k's entry, creating it if needed; h is k's hash, name the
// limit's name as the caller gave it, now the time, and pinned the entries
// the call already holds, which making room must not evict. forgot is
// add's. The shard must be locked.
func (s *shard) entry(h uint64, k *storeKey, name string, now int64, pinned []*entry) (e *entry, created, forgot bool) {
	if e := s.tab.Load().find(h, k); e != nil {
		return e, false, false
	}
	e, forgot = s.add(h, k, name, false, now, pinned)
	return e, true, forgot
}

// add creates k's entry; k has none. It is kept out of entry so that the
// lookup stays small. With held, the entry is acquired before it goes in
// the table. forgot reports whether making room for it evicted a key whose
// admissions still counted.
func (s *shard) add(h uint64, k *storeKey, name string, held bool, now int64, pinned []*entry) (e *entry, forgot bool) {
	cost := entryBytes(k.algo, k.nameHashed, len(k.key))
	forgot = s.reserve(cost+firstState[k.algo], now, pinned)
	e = newEntry(k.algo)
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
	if held {
		e.acquire()
	}
	if s.tab.Load().place(h, e) {
		s.used++
	}
	s.n++
	s.peak = max(s.peak, s.n)
	s.bytes += cost
	s.added++
	return e, forgot
}

// reserve makes room for one more entry of cost bytes: a free slot, at most
// 3/4 of the slots in use keeping probes short, and room in the budget.
// Over budget, the shard first sweeps out its expired keys, if any may
// have expired (at most once per quarter of its keys added, so that it
// stays amortised O(1) per key), then evicts what the hand finds (see
// evictOne). The table grows
// only within the budget; otherwise it holds at most 5/8 of its slots in
// entries, and is rebuilt at its size once deleted slots fill it. pinned
// stay. It reports whether it evicted a key whose admissions still
// counted.
func (s *shard) reserve(cost, now int64, pinned []*entry) (forgot bool) {
	over := func(more int64) bool { return s.bytes+s.grown.Load()+cost+more > s.budget }
	evict := func() bool {
		counted, ok := s.evictOne(now, pinned)
		forgot = forgot || counted
		return ok
	}
	// An entry beyond 5/8 of the slots waits for the table to grow; when the
	// budget cannot pay for that, one goes instead.
	full := func() bool {
		slots := int64(len(s.tab.Load().slots))
		return over(0) || 8*int64(s.n+1) > 5*slots && over(slotBytes*slots)
	}
	if full() {
		if now >= s.expiresFrom && s.added >= s.n/4 {
			s.sweep(now, pinned)
		}
		for full() && evict() {
		}
	}
	slots := len(s.tab.Load().slots)
	if 4*(s.used+1) <= 3*slots {
		return forgot
	}
	// The new table is at most half full, or at its size when the budget
	// allows no more.
	size := tableSize(2 * (s.n + 1))
	if size > slots && 8*(s.n+1) <= 5*slots && over(slotBytes*int64(size-slots)) {
		size = slots
	}
	s.resize(size)
	return forgot
}

// evictOne evicts the first entry from the hand on that holds nothing that
// counts, or that no call used since the hand last passed it, clearing the
// marks of the used ones it passes: the SIEVE policy. A key used at least
// once per round of the hand stays, however many one-time keys come
// meanwhile; a new key starts unmarked. Entries in use at that moment and
// pinned ones stay; after two rounds without finding one to evict, ok is
// false. counted reports whether the evicted entry still counted
// admissions.
//
// The hand visits every slot once per round, but not in order: step c is
// slot c×stride, the stride an odd multiple of the golden ratio of the
// table's length, so that the slots it emptied last are spread evenly
// over the table. In slot order, the slots ahead of the hand would be
// the fullest, and their clusters make probes hundreds of slots long.
func (s *shard) evictOne(now int64, pinned []*entry) (counted, ok bool) {
	t := s.tab.Load()
	stride := goldenStride(t.mask)
	for range 2 * len(t.slots) {
		step := s.hand
		i := int(step * stride & t.mask)
		s.hand++
		e := t.slots[i].entry()
		if e == nil || e == deleted || slices.Contains(pinned, e) {
			continue
		}
		if dead, counted, state := e.pass(now, step); dead {
			s.remove(t, i, e, state)
			return counted, true
		}
	}
	return false, false
}

// remove deletes e, evicted, from its slot i of t, the shard's table;
// state is what its state held outside it. The slot becomes empty if the
// next one is, and so do the deleted slots before it.
func (s *shard) remove(t *table, i int, e *entry, state int64) {
	if t.slots[(i+1)&int(t.mask)].entry() != nil {
		t.slots[i].setEntry(deleted)
	} else {
		t.slots[i].setEntry(nil)
		s.used--
		for j := (i - 1) & int(t.mask); t.slots[j].entry() == deleted; j = (j - 1) & int(t.mask) {
			t.slots[j].setEntry(nil)
			s.used--
		}
	}
	s.n--
	s.bytes -= e.cost()
	s.grown.Add(-state)
}

// goldenStride returns the odd number nearest to the golden ratio of a
// table's length, mask+1.
func goldenStride(mask uint64) uint64 {
	return (0x9e3779b97f4a7c15>>bits.LeadingZeros64(mask))&mask | 1
}

// tableSize returns the length of a table with room for size entries.
func tableSize(size int) int {
	n := minSlots
	for n < size {
		n *= 2
	}
	return n
}

// place puts e in the first free or deleted slot of h's probe sequence,
// and reports whether the slot was free. The shard must be locked.
func (t *table) place(h uint64, e *entry) (free bool) {
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		sl := &t.slots[i]
		if old := sl.entry(); old == nil || old == deleted {
			sl.set(h, e)
			return old == nil
		}
	}
}

// fill puts e in the first free slot of h's probe sequence in t, a table
// no reader has yet.
func (t *table) fill(h uint64, e *entry) {
	i := h & t.mask
	for t.slots[i].e != nil {
		i = (i + 1) & t.mask
	}
	t.slots[i].h, t.slots[i].e = h, unsafe.Pointer(e)
}

// resize replaces the table with one with room for at least size entries,
// without the deleted slots. Readers of the old table still find every
// entry it held. The shard must be locked.
func (s *shard) resize(size int) {
	n := tableSize(size)
	old := s.tab.Load()
	t := newTable(n)
	s.bytes += slotBytes * int64(n-len(old.slots))
	s.used = 0
	for i := range old.slots {
		if e := old.slots[i].entry(); e != nil && e != deleted {
			t.fill(old.slots[i].hash(), e)
			s.used++
			// The hand's order starts anew (see entryWord.revisit).
			e.w.revisit(s.hand, uint64(len(old.slots)))
		}
	}
	s.tab.Store(t)
}

// sweep evicts every entry that holds nothing that counts, but pinned
// ones, and rebuilds the table when that leaves it far below its peak
// size, or mostly made of deleted slots. It returns how many entries
// remain. The shard must be locked.
func (s *shard) sweep(now int64, pinned []*entry) int {
	t := s.tab.Load()
	s.expiresFrom = math.MaxInt64
	for i := range t.slots {
		e := t.slots[i].entry()
		if e == nil || e == deleted {
			continue
		}
		if slices.Contains(pinned, e) {
			// Its expiry is still to be decided; only a later sweep will
			// look at it again.
			s.expiresFrom = now
			continue
		}
		dead, state, expiry := e.evict(now)
		if dead {
			s.remove(t, i, e, state)
		} else {
			s.expiresFrom = min(s.expiresFrom, expiry)
		}
	}
	s.added = 0
	if (s.peak > minSweep && s.n <= s.peak/shrinkFactor) || s.used-s.n > len(t.slots)/4 {
		s.resize(2 * s.n)
		s.peak = s.n
	}
	s.sweepAt = max(minSweep, 2*s.n)
	s.nextSweep.Store(now + sweepInterval)
	return s.n
}
