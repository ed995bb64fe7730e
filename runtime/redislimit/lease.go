package redislimit

import (
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// Leases (see WithLeases): a key that is hot at this instance is decided
// from units this instance leased from Redis, where they were recorded as
// admissions when granted (lua/lease.lua), so that a hot key costs Redis
// one script call per lease rather than one per few calls.
//
// Per (limit, key) a holder keeps the lease in use and at most one spare,
// granted in the background once the one in use is down to a tenth, so
// that the hot path never waits. A lease is sized to the key's recent rate
// at this instance (an EWMA of the units asked) times the period, capped
// by a share of the limit's capacity among the instances, and is used
// only until its deadline: the time its grant was sent plus the life
// Redis stated, on the monotonic clock, so never after Redis ends it,
// whatever a step of the wall clock. A lease that ends or runs out is
// released with the next grant (or alone, when the key cools), giving
// back what it did not use. A call that finds no units is decided per
// call, as without leases.

const (
	// leaseMinUnits is the units asked in one period at this instance
	// from which a key leases, and the least a lease is worth: below it,
	// per-call decisions cost Redis little.
	leaseMinUnits = 8
	// leaseLifePeriods is a lease's longest life, in periods.
	leaseLifePeriods = 10
	// leaseMaxUnits bounds one lease.
	leaseMaxUnits = 1 << 20
	// leaseMaxKeys bounds the keys tracked; beyond it, keys are decided
	// per call.
	leaseMaxKeys = 4096
)

// leaseKey is what a holder leases for: a limit, by every number its
// decisions depend on, on a key. A limit whose values change (an override)
// leases anew, and the old lease is released once it cools.
type leaseKey struct {
	name, key                string
	code, window, max, burst int64
}

// leaseTable holds a Limiter's leases; nil when leases are off.
type leaseTable struct {
	r *Limiter
	// period and life are WithLeases's period and a lease's longest life,
	// in ns.
	period, life int64
	holders      sync.Map // leaseKey -> *holder
	n            atomic.Int64
	// asks counts the lease script calls on their way, which a test can
	// wait for.
	asks sync.WaitGroup
	// swept is when the table was last swept of cold keys.
	swept atomic.Int64
}

func newLeaseTable(r *Limiter, period time.Duration) *leaseTable {
	if period <= 0 {
		return nil
	}
	return &leaseTable{r: r, period: int64(period), life: leaseLifePeriods * int64(period)}
}

// now returns the table's time in ns: the limiter's clock when WithClock
// is given (whose µs the scripts then receive), else the monotonic clock.
func (t *leaseTable) now() int64 {
	if c := t.r.cfg.clock; c != nil {
		return c().UnixNano()
	}
	return mono()
}

// A holder holds the leases of one leaseKey.
type holder struct {
	k    leaseKey
	skey string
	// cur is the lease in use; nil when none.
	cur atomic.Pointer[lease]
	// spare says next is set; asking that a grant (or release) is on its
	// way.
	spare, asking atomic.Bool
	// demand counts the units asked since since.
	demand atomic.Int64

	mu sync.Mutex
	// next is the lease granted to follow cur.
	next *lease
	// release holds the leases done with, as (id, units unused), to be
	// released with the next grant.
	release [][2]int64
	// since starts the current sample of demand; rate is the EWMA of
	// the units asked per ns, 0 until the key first leased.
	since int64
	rate  float64
	// notBefore is when the next grant may be asked: after a grant of
	// nothing, when Redis says there is room again; after a failure, a
	// retry interval later.
	notBefore int64
	// gone says the table forgot h: it leases nothing more.
	gone bool
}

// A lease is one grant: left units, usable until deadline.
type lease struct {
	id, units, deadline int64
	left                atomic.Int64
	// retired says the lease is out of use: what it had left was
	// released, or dropped.
	retired atomic.Bool
	// low is the left at which a spare is asked for; reset is the key's
	// ResetAfter at the grant, in µs.
	low, reset int64
}

// take takes n units, unless fewer are left, and returns what is left.
func (l *lease) take(n int64) (int64, bool) {
	for {
		left := l.left.Load()
		if left < n {
			return left, false
		}
		if l.left.CompareAndSwap(left, left-n) {
			return left - n, true
		}
	}
}

// admit decides the call of reqs from a lease when it is one request of a
// limit that leases, enforced, on a key that is hot here, and a lease in
// hand has the units: it fills vs[0] and returns the lease. Otherwise the
// call is decided per call, and admit notes the demand, asking for a lease
// when the key turns hot.
func (t *leaseTable) admit(reqs []runtime.Request, asks []ask, vs []verdict) *lease {
	if t == nil || len(reqs) != 1 || !leases(asks[0].code) {
		return nil
	}
	a := &asks[0]
	h := t.holder(leaseKey{name: reqs[0].Limit.Name, key: reqs[0].Key, code: a.code, window: a.window, max: a.max, burst: a.burst}, reqs)
	if h == nil {
		return nil
	}
	h.demand.Add(a.cost)
	now := t.now()
	if l := h.cur.Load(); l != nil && now < l.deadline {
		if left, ok := l.take(a.cost); ok {
			if left <= l.low && !h.spare.Load() && h.asking.CompareAndSwap(false, true) {
				t.goAsk(h)
			}
			vs[0] = verdict{ok: true, remaining: left, reset: l.reset}
			return l
		}
	}
	return t.refresh(h, now, a.cost, vs)
}

// holder returns k's holder, made for reqs' limit if there is none and
// room for it; nil if there is not.
func (t *leaseTable) holder(k leaseKey, reqs []runtime.Request) *holder {
	if h, ok := t.holders.Load(k); ok {
		return h.(*holder)
	}
	now := t.now()
	t.sweepDue(now)
	if t.n.Load() >= leaseMaxKeys {
		return nil
	}
	var one [1]ask
	resolveLimit(&one[0], &reqs[0])
	t.r.placeKeys(one[:], reqs)
	h, loaded := t.holders.LoadOrStore(k, &holder{k: k, skey: one[0].key, since: now})
	if !loaded {
		t.n.Add(1)
	}
	return h.(*holder)
}

// refresh is admit's slow path, with h's lock: the lease in use has ended
// or run out, so it is retired and the spare takes its place; and a grant
// is asked for when the key is hot and none is on its way. It returns the
// lease that admitted the call, if one did.
func (t *leaseTable) refresh(h *holder, now, cost int64, vs []verdict) *lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		l := h.cur.Load()
		if l != nil && now < l.deadline {
			if left, ok := l.take(cost); ok {
				vs[0] = verdict{ok: true, remaining: left, reset: l.reset}
				return l
			}
		}
		if l != nil {
			h.retire(l)
			h.cur.Store(nil)
		}
		if h.next == nil {
			break
		}
		h.cur.Store(h.next)
		h.next = nil
		h.spare.Store(false)
	}
	hot := h.rate > 0
	if h.gone {
		return nil
	}
	if !hot {
		// Not leasing yet: is the key asked often enough here?
		if now-h.since > t.period {
			h.since = now
			h.demand.Store(0)
		}
		hot = h.demand.Load() >= leaseMinUnits
	}
	if hot && now >= h.notBefore && h.asking.CompareAndSwap(false, true) {
		t.goAsk(h)
	}
	return nil
}

// retire takes l out of use, with h's lock held: its units left are
// taken, so that no call uses them once they are given back.
func (h *holder) retire(l *lease) {
	l.retired.Store(true)
	h.release = append(h.release, [2]int64{l.id, l.left.Swap(0)})
}

// goAsk runs ask(h) on a goroutine of its own.
func (t *leaseTable) goAsk(h *holder) {
	t.asks.Add(1)
	go func() {
		defer t.asks.Done()
		t.ask(h)
	}()
}

// ask runs one lease script call for h, on a goroutine of its own, with
// h.asking set: it releases the leases h is done with and, unless h has a
// spare or the key cooled, asks for a lease sized to its rate.
func (t *leaseTable) ask(h *holder) {
	defer h.asking.Store(false)
	r := t.r
	h.mu.Lock()
	now := t.now()
	t.sweepDue(now)
	want := int64(0)
	if h.next == nil && !h.gone {
		want = t.size(h, now)
	}
	rel := h.release
	h.release = nil
	h.mu.Unlock()
	if want == 0 && len(rel) == 0 {
		return
	}
	la := leaseAsk{key: h.skey, code: h.k.code, window: h.k.window, max: h.k.max, burst: h.k.burst, now: -1,
		want: want, life: t.life / 1000, id: rand.Int64N(1<<52) + 1, release: rel}
	if r.cfg.clock != nil {
		la.now = now / 1000
	}
	rep, err := r.lease(context.Background(), &la)

	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		// Releases apply at most once (the script forgets a lease it
		// released), so they go again with the next call. A grant whose
		// reply was lost strands its units until the lease ends.
		_ = r.refused(err, slog.String("in", "lease"), slog.String("limit", h.k.name))
		h.release = append(rel, h.release...)
		h.notBefore = t.now() + int64(r.cfg.retryInterval)
		return
	}
	if rep.granted == 0 {
		if want > 0 {
			h.notBefore = now + rep.retry*1000
		}
		return
	}
	l := &lease{id: la.id, units: rep.granted, deadline: now + rep.life*1000, low: rep.granted / 10, reset: rep.reset}
	l.left.Store(rep.granted)
	if h.cur.Load() == nil {
		h.cur.Store(l)
	} else {
		h.next = l
		h.spare.Store(true)
	}
}

// size returns the units h's next lease should hold, from the units asked
// since the last sample, or 0 when the key cooled below leaseMinUnits per
// period; with h's lock held.
func (t *leaseTable) size(h *holder, now int64) int64 {
	units := h.demand.Swap(0)
	if elapsed := now - h.since; elapsed > 0 {
		rate := float64(units) / float64(elapsed)
		if h.rate == 0 {
			h.rate = rate
		} else {
			h.rate = (h.rate + rate) / 2
		}
	}
	h.since = now
	want := h.rate * float64(t.period)
	if want < leaseMinUnits {
		h.rate = 0
		return 0
	}
	// A share of the capacity among the instances, so that no instance
	// holds what the others need.
	capacity := h.k.max
	if h.k.code == codeGCRA || h.k.code == codeTokenBucket {
		capacity = h.k.burst
	}
	n, _ := t.r.peers.count()
	share := capacity / int64(2*max(n, 1))
	return int64(math.Ceil(min(want, float64(max(share, 1)), leaseMaxUnits)))
}

// sweepDue starts a sweep when none ran within a lease's life.
func (t *leaseTable) sweepDue(now int64) {
	if last := t.swept.Load(); now-last > t.life && t.swept.CompareAndSwap(last, now) {
		go t.sweep()
	}
}

// sweep forgets the keys that cooled: no grant nor sample within a
// lease's life. Their leases are released.
func (t *leaseTable) sweep() {
	now := t.now()
	t.holders.Range(func(k, v any) bool {
		h := v.(*holder)
		h.mu.Lock()
		cold := now-h.since > t.life
		if cold {
			if l := h.cur.Load(); l != nil {
				h.retire(l)
				h.cur.Store(nil)
			}
			if h.next != nil {
				h.retire(h.next)
				h.next = nil
				h.spare.Store(false)
			}
			h.rate, h.gone = 0, true
		}
		pending := len(h.release) > 0
		h.mu.Unlock()
		if cold {
			t.holders.Delete(k)
			t.n.Add(-1)
			if pending && h.asking.CompareAndSwap(false, true) {
				t.goAsk(h)
			}
		}
		return true
	})
}

// giveBack returns n units, of a call that l admitted and that used less
// than it reserved, to l if it is still in use: its units are recorded in
// Redis already. A lease that ended or was retired keeps nothing given
// back: its units left were released already, or will be, and what
// is given back after that stays counted, which errs toward denial.
func (t *leaseTable) giveBack(l *lease, n int64) {
	if t.now() >= l.deadline {
		return
	}
	for {
		left := l.left.Load()
		// retire swaps left to 0; a lease out of use is not refilled.
		if left == 0 && l.retired.Load() {
			return
		}
		if l.left.CompareAndSwap(left, left+n) {
			return
		}
	}
}

// drop forgets every lease of the storage key skey at this limiter, without
// releasing them: Reset deleted their records with the key's state, so the
// units they hold are no longer counted.
func (t *leaseTable) drop(skey string) {
	if t == nil {
		return
	}
	t.holders.Range(func(_, v any) bool {
		h := v.(*holder)
		if h.skey != skey {
			return true
		}
		h.mu.Lock()
		for _, l := range [...]*lease{h.cur.Load(), h.next} {
			if l != nil {
				l.retired.Store(true)
				l.left.Store(0)
			}
		}
		h.cur.Store(nil)
		h.next = nil
		h.spare.Store(false)
		h.release = nil
		h.mu.Unlock()
		return true
	})
}
