package memlimit

import (
	"slices"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// A waiter is a HoldWait call that waits for permits of Concurrency
// limits. It joins the queue of each Concurrency key that denies it, and
// leaves them all once admitted or when it stops waiting; its goroutine
// alone reads expiry, which its own decisions write under their shards'
// locks.
type waiter struct {
	// wake is signalled, without blocking, when a permit of one of its
	// keys may have become free for it: a release, a Reset, or a waiter
	// ahead of it leaving without a permit.
	wake chan struct{}
	// expiry (µs, on the limiter's clock) is when the first lease ends
	// among the permits of the keys that last denied the call, or 0 when
	// they held none.
	expiry int64
}

func newWaiter() *waiter { return &waiter{wake: make(chan struct{}, 1)} }

// signal wakes w, or leaves the wake-up it has not yet taken.
func (w *waiter) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// waitKey names a Concurrency limit's key among its shard's queues.
type waitKey struct{ name, key string }

func waitKeyOf(r runtime.Request) waitKey { return waitKey{r.Limit.Name, r.Key} }

// queued is a waiter in a key's queue, with the Max it was denied under.
type queued struct {
	w   *waiter
	max int64
}

// ahead returns how many waiters of k count ahead of a call: those that
// joined before w when w waits for k, and all of them otherwise (w nil or
// not in k's queue). The shard must be locked.
func (s *shard) ahead(k waitKey, w *waiter) int64 {
	if len(s.waits) == 0 {
		return 0
	}
	q := s.waits[k]
	if i := queueIndex(q, w); i >= 0 {
		return int64(i)
	}
	return int64(len(q))
}

// join puts w at the end of k's queue unless it is in it already, when
// it keeps its place and takes max, the Max it is now denied under. The
// shard must be locked.
func (s *shard) join(k waitKey, w *waiter, max int64) {
	q := s.waits[k]
	if i := queueIndex(q, w); i >= 0 {
		q[i].max = max
		return
	}
	if s.waits == nil {
		s.waits = make(map[waitKey][]queued)
	}
	s.waits[k] = append(q, queued{w: w, max: max})
}

// leave takes w out of k's queue, and reports whether it was in it. A
// queue left empty goes, and so does the map once no queue remains, so
// that the queues hold memory only while calls wait. The shard must be
// locked.
func (s *shard) leave(k waitKey, w *waiter) bool {
	q := s.waits[k]
	i := queueIndex(q, w)
	if i < 0 {
		return false
	}
	if len(q) == 1 {
		delete(s.waits, k)
		if len(s.waits) == 0 {
			s.waits = nil
		}
		return true
	}
	s.waits[k] = slices.Delete(q, i, i+1)
	return true
}

// wake signals the waiters of k that a permit may be free for: those
// with fewer waiters ahead of them than their Max. The shard must be
// locked.
func (s *shard) wake(k waitKey) {
	if len(s.waits) == 0 {
		return
	}
	for i, q := range s.waits[k] {
		if int64(i) < q.max {
			q.w.signal()
		}
	}
}

func queueIndex(q []queued, w *waiter) int {
	if w == nil {
		return -1
	}
	return slices.IndexFunc(q, func(e queued) bool { return e.w == w })
}

// leaveAll takes w out of the queues of reqs' Concurrency limits, waking
// the waiters behind it, on every exit of a HoldWait call.
func (m *Limiter) leaveAll(w *waiter, reqs []runtime.Request) {
	for _, r := range reqs {
		if r.Limit.Algorithm != runtime.Concurrency {
			continue
		}
		var d keyDigests
		s, _, _ := m.locate(r, &d)
		k := waitKeyOf(r)
		s.mu.Lock()
		if s.leave(k, w) {
			s.wake(k)
		}
		s.mu.Unlock()
	}
}

// behind denies v, a Concurrency limit's verdict with p, when the n
// waiters counted ahead of the call leave it no permit: the call takes
// one only if the permits live, they and it fit in Max.
func behind(v *verdict, n int64, p params) {
	if n == 0 {
		return
	}
	if v.count+n+p.cost > p.max {
		v.ok = false
	}
	v.remaining = max(0, v.remaining-n)
}

// queue updates the queues of w after its decision, under the shards'
// locks: admitted (all), it leaves the queues of its Concurrency limits,
// waking those behind it where it took no permit; denied, it joins the
// queue of each enforced Concurrency limit that denied it, and notes when
// the first of their leases ends.
func (m *Limiter) queue(reqs []runtime.Request, entries []*entry, hashes []uint64, vs []verdict, all bool, w *waiter) {
	w.expiry = 0
	for i, r := range reqs {
		if r.Limit.Algorithm != runtime.Concurrency || r.Limit.Mode == runtime.ModeOff {
			continue
		}
		s, k := &m.shards[shardOf(hashes[i])], waitKeyOf(r)
		switch {
		case all:
			if s.leave(k, w) && !vs[i].ok {
				s.wake(k)
			}
		case !vs[i].ok && r.Limit.Mode == runtime.ModeEnforce:
			s.join(k, w, int64(r.Limit.Max))
			if first := stateOf[concurrency](entries[i]).first(); first > 0 && (w.expiry == 0 || first < w.expiry) {
				w.expiry = first
			}
		}
	}
}
