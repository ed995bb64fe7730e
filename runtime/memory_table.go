package runtime

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

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
