package runtime

import (
	goruntime "runtime"
	"sync/atomic"
	"unsafe"
)

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
