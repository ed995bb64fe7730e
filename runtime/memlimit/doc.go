// Package memlimit is the in-memory runtime.Limiter: it keeps its counts
// in the process, for tests, single-instance programs, and as the fallback
// of a runtime/redislimit Limiter while Redis is unavailable.
//
// It makes the decisions that runtime/redislimit makes on the same clock,
// with every Algorithm of package runtime, each an in-memory twin of its
// Redis script. Like runtime, it depends on the standard library only.
//
// A decision costs no allocation once its key is held, and a call on a
// held key never waits for calls on other keys. The keys' memory is bounded
// (WithMaxMemory, 64 MiB by default): keys whose admissions have all
// expired go first, then keys unused lately; a decision that had to forget
// admissions that still counted says so with ErrFull.
//
// Its Limiter is also a runtime.Holder, whose Holds settle a call at what
// it used (runtime.Algorithm states how, per algorithm), a
// runtime.WaitHolder, a runtime.Peeker, and a runtime.Resetter. Hold
// decides as Decide does; it costs one allocation more, and settling takes
// the key's shard lock. HoldWait waits for room rather than deny a call
// (see Waiting for permits).
//
// # Concurrency limits
//
// A runtime.Concurrency limit is decided through Hold only: Decide and
// Allow refuse it with an error, as the permit they would take has no Hold
// to release it. A key's entry holds its live permits, each an id and the
// end of its lease on the limiter's clock (16 bytes), beside an 80-byte
// entry: at most Max permits, the largest Max the key was admitted under
// when an override lowered it. The slice doubles as permits are taken, up
// to that Max, and shrinks to twice the permits live once at most a
// quarter of it is in use. Every operation on the key first drops the
// permits whose lease has ended (but Peek, which changes nothing), in time
// linear in the permits it holds. Ids count from 1 in each entry and are
// never given twice, Reset included; a Hold names its permit by the entry
// and the id, so a Hold outliving its permit never releases another
// call's.
//
// The Hold of a call that took a permit is a runtime.PermitHold. Renew
// extends every permit of the call to the limiter's now plus the limit's
// Window, under the locks of all their keys at once, or extends none and
// returns an error wrapping runtime.ErrPermitLost when one has expired or
// was reset or evicted. HeldUntil is the local time at which the
// acquisition or the last successful renewal started, plus the shortest
// lease. Settle releases the permits whatever used says, settles the other
// limits as usual, and then reports a permit it found gone with
// runtime.ErrPermitLost. Peek counts the permits live; Reset drops them
// all. ModeShadow takes a permit when one is free and never refuses;
// ModeOff takes none. A lower Max takes no permit away.
//
// A key whose permits are live is never swept: a sweep forgets only keys
// whose leases have all ended. Under the WithMaxMemory budget it may be
// evicted, as any key whose admissions still count, when no call took,
// renewed or released one of its permits since the eviction hand last
// passed (runtime.Keep renews every third of a lease, which keeps it); a
// key made by a call that took a permit counts as used by it. Its
// permits are then forgotten: the call that made room for a new key says
// ErrFull, its holders' Renew and Settle return runtime.ErrPermitLost, and
// runtime.Keep cancels their calls at their next renewal; until then up to
// twice Max calls may run. A Hold keeps its key's entry from being
// collected until it is dropped, outside the budget.
//
// # Waiting for permits
//
// HoldWait keeps a denied call waiting, for at most its max and never past
// its context's deadline: for a rate limit's RetryAfter (a RetryAfter that
// would not fit ends the wait at once), and for a Concurrency key's permit
// in a queue, in order of arrival. A call joins the queue of each
// Concurrency key that denies it, and takes a permit only when the permits
// held, the waiters ahead of it and the call fit in Max; a call that does
// not wait (Hold, Peek, HoldWait before it joins) counts every waiter, so
// it is denied while others wait, and Remaining counts the waiters as
// held. A waiter leaves its queues once admitted and on every other
// return. The queues live in the keys' shards, beside their tables,
// outside WithMaxMemory's budget: a waiter costs a few words while its
// goroutine waits, and a key without waiters none. Releases, Resets and a
// waiter leaving without a permit wake the first waiters of the key; a
// lease that ends, which no event says, is waited for on a timer of the
// process's clock, set from the limiter's clock and bounded by a second,
// so that a waiter on a clock of WithClock asks again at least every
// second.
package memlimit
