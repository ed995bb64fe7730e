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
// it used (runtime.Algorithm states how, per algorithm), a runtime.Peeker,
// and a runtime.Resetter. Hold decides as Decide does; it costs one
// allocation more, and settling takes the key's shard lock.
package memlimit
