package memlimit

import (
	"crypto/sha256"
	"math"
	goruntime "runtime"
	"sync/atomic"
	"unsafe"
)

// entry is one key's record. It is the head of a entryOf, which holds
// the algorithm's state in the same allocation: 48 bytes, and with the
// state of GCRA (16 bytes) the whole entry fits one cache line.
//
// Calls on the key hold the entry's lock (see entryWord) while they decide,
// and read the clock under it; GCRA's entries have no use for the lock:
// their state is one number, swapped whole (see gcra). An eviction marks the
// entry dead under the same lock (GCRA: swaps in gcraDead), and a call that
// then finds it dead looks the key up again under the shard's lock.
type entry struct {
	// name and key are the stored forms (see storeKey). They and the flags
	// below never change once the entry is in a table.
	name, key string
	// expireAt (µs, guarded by the lock; unused by GCRA): from then on the
	// state holds nothing that counts.
	expireAt int64
	// algo says which entryOf the entry heads.
	algo                  algoIndex
	nameHashed, keyHashed bool
	w                     entryWord
}

// entryWord is an entry's state in 4 bytes, which fit in entry's
// padding: whether a call used it since the eviction hand last passed
// (wordVisited), and, but for GCRA's entries, a spin lock (wordHeld) and
// whether the entry was evicted (wordDead). The lock is held only while one
// call decides, a few dozen nanoseconds; a waiter that spins in vain yields
// its thread, so that a holder the scheduler preempted gets to run.
//
// A call marks the entry visited as it unlocks it, in the store that
// unlocks, and a key in steady use is locked from the visited state: the
// mark costs the hot path nothing. GCRA's calls, which take no lock, mark
// it with a load, and a store only when it is not yet marked. When the hand
// clears the mark, it writes in the bits from wordPassShift up when it did
// (see passWord), for a rebuild of the table (see revisit).
type entryWord struct{ v atomic.Uint32 }

const (
	wordHeld uint32 = 1 << iota
	wordVisited
	wordDead
	wordPassShift = 8
	// passSteps is how many steps of the hand passWord tells apart.
	passSteps = 1<<(32-wordPassShift) - 1
)

// passWord is the word of an entry whose mark the hand cleared at step:
// never 0, so that a word of 0 is an entry the hand never passed.
func passWord(step uint64) uint32 { return uint32(step%passSteps+1) << wordPassShift }

// revisit marks the entry visited again if the hand cleared its mark less
// than round steps before step, where it now is. A rebuild of the table
// moves every entry to a slot the hand reaches at an unrelated step: an
// entry just passed may come next, and a key used once per round would go
// before its next use. Giving those a new mark makes them wait for a full
// round once more; entries the hand passed longer ago, and new ones, which
// were never passed, are left as they are. A call changing the word
// meanwhile is using the entry, and marks it anyway.
func (w *entryWord) revisit(step, round uint64) {
	v := w.v.Load()
	passed := uint64(v >> wordPassShift)
	if v&(wordVisited|wordDead) != 0 || passed == 0 {
		return
	}
	if (step%passSteps+1+passSteps-passed)%passSteps < round {
		w.v.CompareAndSwap(v, v|wordVisited)
	}
}

// lock takes the lock, or reports false for a dead entry.
func (w *entryWord) lock() bool {
	return w.v.CompareAndSwap(wordVisited, wordVisited|wordHeld) || w.lockSlow()
}

func (w *entryWord) lockSlow() bool {
	for i := 0; ; i++ {
		v := w.v.Load()
		if v&wordDead != 0 {
			return false
		}
		if v&wordHeld == 0 && w.v.CompareAndSwap(v, v|wordHeld) {
			return true
		}
		if i >= 16 {
			goruntime.Gosched()
		}
	}
}

// tryLock takes the lock if no call holds it and the entry is not dead,
// returning the word as it was.
func (w *entryWord) tryLock() (v uint32, ok bool) {
	v = w.v.Load()
	return v, v&(wordHeld|wordDead) == 0 && w.v.CompareAndSwap(v, v|wordHeld)
}

// unlock ends a call that used the entry, marking it visited.
func (w *entryWord) unlock() { w.v.Store(wordVisited) }

// unlockAs ends holding the lock, leaving the word v (without wordHeld).
func (w *entryWord) unlockAs(v uint32) { w.v.Store(v) }

// held returns the word of a held entry as it will be once unlocked.
func (w *entryWord) held() uint32 { return w.v.Load() &^ wordHeld }

// visit marks a GCRA entry visited.
func (w *entryWord) visit() {
	if w.v.Load()&wordVisited == 0 {
		w.v.Store(wordVisited)
	}
}

type entryOf[S any] struct {
	entry
	s S
}

// stateOf returns the state of e, which must head a entryOf[S]: e.algo
// says which S. Reading the state through the entry's own allocation, not
// through an interface held in it, saves the interface's 16 bytes per key
// and lets the calls below inline.
func stateOf[S any](e *entry) *S {
	return &(*entryOf[S])(unsafe.Pointer(e)).s
}

// newEntry returns a new entry for algo with an empty state.
func newEntry(algo algoIndex) *entry {
	switch algo {
	case algoSlidingLog:
		return &new(entryOf[slidingLog]).entry
	case algoSlidingWindow:
		return &new(entryOf[slidingWindow]).entry
	case algoFixedWindow:
		return &new(entryOf[fixedWindow]).entry
	case algoCalendar:
		return &new(entryOf[calendarWindow]).entry
	case algoTokenBucket:
		return &new(entryOf[tokenBucket]).entry
	case algoConcurrency:
		return &new(entryOf[concurrency]).entry
	}
	g := new(entryOf[gcra])
	g.s.tat.Store(gcraEmpty)
	return &g.entry
}

// matches reports whether e is k's entry.
func (e *entry) matches(k *storeKey) bool {
	return e.algo == k.algo && e.nameHashed == k.nameHashed && e.keyHashed == k.keyHashed &&
		e.key == k.key && e.name == k.name
}

// check and commit call the state's own methods directly, not through an
// interface: the calls then inline, and the verdict stays on the stack.
func (e *entry) check(now int64, p params) verdict {
	switch e.algo {
	case algoSlidingLog:
		return stateOf[slidingLog](e).check(now, p)
	case algoSlidingWindow:
		return stateOf[slidingWindow](e).check(now, p)
	case algoFixedWindow:
		return stateOf[fixedWindow](e).check(now, p)
	case algoCalendar:
		return stateOf[calendarWindow](e).check(now, p)
	case algoTokenBucket:
		return stateOf[tokenBucket](e).check(now, p)
	case algoConcurrency:
		return stateOf[concurrency](e).check(now, p)
	}
	return stateOf[gcra](e).check(now, p)
}

func (e *entry) commit(now int64, p params, v *verdict) (grew int64) {
	switch e.algo {
	case algoSlidingLog:
		s := stateOf[slidingLog](e)
		c := cap(s.times)
		s.commit(now, p, v)
		if cap(s.times) != c {
			grew = sliceBytes(cap(s.times)) - sliceBytes(c)
		}
	case algoSlidingWindow:
		s := stateOf[slidingWindow](e)
		i, c := cap(s.idx), cap(s.counts)
		s.commit(now, p, v)
		if cap(s.idx) != i || cap(s.counts) != c {
			grew = sliceBytes(cap(s.idx)) + sliceBytes(cap(s.counts)) - sliceBytes(i) - sliceBytes(c)
		}
	case algoFixedWindow:
		stateOf[fixedWindow](e).commit(now, p, v)
	case algoCalendar:
		stateOf[calendarWindow](e).commit(now, p, v)
	case algoTokenBucket:
		stateOf[tokenBucket](e).commit(now, p, v)
	case algoConcurrency:
		s := stateOf[concurrency](e)
		b := s.bytes()
		s.commit(now, p, v)
		grew = s.bytes() - b
	default:
		// GCRA's state is its expiry.
		stateOf[gcra](e).commit(now, p, v)
		return 0
	}
	e.expireAt = now + v.reset
	return grew
}

// peek is check for a call that records nothing, and changes nothing, as
// the script's check mode writes nothing: the logs' checks drop what
// stopped counting, which would count again if the clock stepped back.
// The sliding log's check drops from its front, which peek puts back, so
// that the next commit keeps what it would have kept (see slidingLog).
func (e *entry) peek(now int64, p params) verdict {
	switch e.algo {
	case algoSlidingLog:
		s := stateOf[slidingLog](e)
		head, dropped := s.head, s.dropped
		v := s.check(now, p)
		s.head, s.dropped = head, dropped
		return v
	case algoSlidingWindow:
		return stateOf[slidingWindow](e).look(now, p)
	case algoConcurrency:
		return stateOf[concurrency](e).look(now, p)
	}
	return e.check(now, p)
}

// emptyCheck is check on a new entry of algo, for a key the limiter does
// not hold.
func emptyCheck(algo algoIndex, now int64, p params) verdict {
	e := newEntry(algo)
	e.algo = algo
	if algo == algoGCRA {
		// As if acquired: check reads the claimed value.
		stateOf[gcra](e).held = gcraEmpty
	}
	return e.check(now, p)
}

// giveBack takes back d of the units a call recorded under receipt (its
// commit's verdict.scratch), for a call that holds e (see hold.Settle).
func (e *entry) giveBack(now int64, p params, receipt, d int64) {
	switch e.algo {
	case algoSlidingLog:
		stateOf[slidingLog](e).giveBack(now, p, receipt, d)
	case algoSlidingWindow:
		stateOf[slidingWindow](e).giveBack(now, p, receipt, d)
	case algoFixedWindow:
		stateOf[fixedWindow](e).giveBack(now, p, receipt, d)
	case algoCalendar:
		stateOf[calendarWindow](e).giveBack(now, p, receipt, d)
	case algoTokenBucket:
		stateOf[tokenBucket](e).giveBack(p, d)
	case algoConcurrency:
		// A permit is released whole, by its id (see releasePermit).
	default:
		stateOf[gcra](e).giveBack(now, p, d)
	}
}

// empty forgets every admission in e, which the call holds, and returns
// what its state held outside the entry. Its expiry passes at once.
func (e *entry) empty() (state int64) {
	state = e.stateBytes()
	switch e.algo {
	case algoSlidingLog:
		*stateOf[slidingLog](e) = slidingLog{}
	case algoSlidingWindow:
		*stateOf[slidingWindow](e) = slidingWindow{}
	case algoFixedWindow:
		*stateOf[fixedWindow](e) = fixedWindow{}
	case algoCalendar:
		*stateOf[calendarWindow](e) = calendarWindow{}
	case algoTokenBucket:
		*stateOf[tokenBucket](e) = tokenBucket{}
	case algoConcurrency:
		// Ids go on from where they were, so that a Hold of a permit
		// reset finds it gone even once the key has new ones.
		c := stateOf[concurrency](e)
		*c = concurrency{next: c.next}
	default:
		stateOf[gcra](e).held = gcraEmpty
	}
	e.expireAt = math.MinInt64
	return state
}

// stateBytes returns what e's state holds outside the entry: the slices of
// a sliding log or window, which only commit grows, and reports. e must be
// held or dead.
func (e *entry) stateBytes() int64 {
	switch e.algo {
	case algoSlidingLog:
		return sliceBytes(cap(stateOf[slidingLog](e).times))
	case algoSlidingWindow:
		s := stateOf[slidingWindow](e)
		return sliceBytes(cap(s.idx)) + sliceBytes(cap(s.counts))
	case algoConcurrency:
		return stateOf[concurrency](e).bytes()
	}
	return 0
}

// sliceBytes returns what a slice of c int64s costs: append allocates
// whole size classes, so 8 bytes each, but for one alone, which takes half
// of a 16-byte block of Go's tiny allocator and may keep the whole block.
func sliceBytes(c int) int64 {
	if c == 1 {
		return 16
	}
	return int64(c) * 8
}

// cost returns what e holds but for its state's slices (see entryBytes).
func (e *entry) cost() int64 { return entryBytes(e.algo, e.nameHashed, len(e.key)) }

// entryBytes returns what the heap spends on an entry of algo with a key of
// keyLen bytes: the entry, the copy of its key, and that of its name's
// digest when hashed. Every one of them is at most 256 bytes, where Go's
// size classes are multiples of 16 (or 8, below 16).
func entryBytes(algo algoIndex, nameHashed bool, keyLen int) int64 {
	n := entrySizes[algo] + roundAlloc(keyLen)
	if nameHashed {
		n += roundAlloc(sha256.Size)
	}
	return n
}

func roundAlloc(n int) int64 { return int64(n+15) &^ 15 }

var entrySizes = [algoCount]int64{
	algoSlidingLog:    roundAlloc(int(unsafe.Sizeof(entryOf[slidingLog]{}))),
	algoSlidingWindow: roundAlloc(int(unsafe.Sizeof(entryOf[slidingWindow]{}))),
	algoFixedWindow:   roundAlloc(int(unsafe.Sizeof(entryOf[fixedWindow]{}))),
	algoCalendar:      roundAlloc(int(unsafe.Sizeof(entryOf[calendarWindow]{}))),
	algoTokenBucket:   roundAlloc(int(unsafe.Sizeof(entryOf[tokenBucket]{}))),
	algoGCRA:          roundAlloc(int(unsafe.Sizeof(entryOf[gcra]{}))),
	algoConcurrency:   roundAlloc(int(unsafe.Sizeof(entryOf[concurrency]{}))),
}

// acquire takes e for a call under its shard's lock, so that check and
// commit may follow: e's lock, or a claim of GCRA's state. The entry is in
// the shard's table, so not dead.
func (e *entry) acquire() {
	if e.algo == algoGCRA {
		stateOf[gcra](e).claim()
		return
	}
	e.w.lock()
}

// release ends acquire. used is false for a call that created e: a new
// entry stays unvisited until a call uses it again.
func (e *entry) release(used bool) {
	if e.algo == algoGCRA {
		stateOf[gcra](e).release()
		if used {
			e.w.visit()
		}
		return
	}
	if used {
		e.w.unlock()
	} else {
		e.w.unlockAs(e.w.held())
	}
}

// evict marks e dead if nothing in it counts at now, and reports whether it
// did, with what its state held outside the entry; otherwise expiry is
// when it would (at least). The shard must be locked.
func (e *entry) evict(now int64) (dead bool, state, expiry int64) {
	if e.algo == algoGCRA {
		g := stateOf[gcra](e)
		t := g.tat.Load()
		// A call that swaps t in between keeps its key, and only moves its
		// expiry later.
		if t <= now && t != gcraClaimed && t != gcraDead && g.tat.CompareAndSwap(t, gcraDead) {
			return true, 0, 0
		}
		return false, 0, max(t, now)
	}
	e.w.lock()
	if e.expireAt > now {
		expiry = e.expireAt
		e.w.unlockAs(e.w.held())
		return false, 0, expiry
	}
	state = e.stateBytes()
	e.w.unlockAs(wordDead)
	return true, state, 0
}

// expiry returns when nothing in e counts any more, for a call that holds
// it; calls only ever move it later.
func (e *entry) expiry() int64 {
	if e.algo == algoGCRA {
		return stateOf[gcra](e).held
	}
	return e.expireAt
}

// firstState is what a new entry's state grows by on its first admission
// of cost 1, charged before it is added.
var firstState = [algoCount]int64{algoSlidingLog: sliceBytes(1), algoSlidingWindow: 2 * sliceBytes(1), algoConcurrency: permitBytes}

// pass is the eviction hand's step on e (see shard.evictOne): it evicts
// e if nothing in it counts at now, or else if no call used it since the
// hand last passed, and otherwise clears its mark. It reports whether it
// evicted e, whether e still counted admissions, and what its state held
// outside the entry. An entry that a call holds at that moment is in use:
// it stays, unmarked as it is. step is the hand's (see passWord). The shard
// must be locked.
func (e *entry) pass(now int64, step uint64) (dead, counted bool, state int64) {
	if e.algo == algoGCRA {
		g := stateOf[gcra](e)
		t := g.tat.Load()
		switch {
		case t == gcraClaimed || t == gcraDead:
			return false, false, 0
		case t > now && e.w.v.Load()&wordVisited != 0:
			e.w.v.Store(passWord(step))
			return false, false, 0
		}
		// A call that swaps t in between keeps its key.
		return g.tat.CompareAndSwap(t, gcraDead), t > now, 0
	}
	v, ok := e.w.tryLock()
	if !ok {
		return false, false, 0
	}
	counted = e.expireAt > now
	if counted && v&wordVisited != 0 {
		e.w.unlockAs(passWord(step))
		return false, false, 0
	}
	state = e.stateBytes()
	e.w.unlockAs(wordDead)
	return true, counted, state
}
