package memlimit

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

var (
	_ runtime.Holder   = (*Limiter)(nil)
	_ runtime.Peeker   = (*Limiter)(nil)
	_ runtime.Resetter = (*Limiter)(nil)
)

// Hold implements runtime.Holder: it decides reqs exactly as Decide does,
// runtime.Concurrency limits included, which Decide refuses, and when the call is admitted returns the Hold that settles it. The
// Hold keeps each recording limit's receipt, as the Redis scripts do: the
// time a sliding log recorded the call's units at, the bucket or window a
// sliding or fixed window counted them in (a token bucket and GCRA need
// none). An admitted call costs one allocation beyond Decide's for the
// Hold when it has one limit, three when it has more or holds a permit.
//
// Settling a limit, under its shard's lock and its key's, reads the clock
// once (now), and for a call that reserved r units and used u, capped at
// the limit's capacity, gives back r-u or charges u-r as runtime.Algorithm
// states for each algorithm. A key evicted or reset meanwhile has nothing
// to give back, and is charged on a fresh entry. Each limit of a call is
// settled on its own: a call on another of its limits may be decided
// between them.
//
// A call that took a permit of a runtime.Concurrency limit gets a
// runtime.PermitHold (see Concurrency limits in the package doc): run it
// under runtime.Keep. A call
// whose concurrency limits took none (off, or shadow without room) gets a
// plain Hold, as there is nothing to renew. While HoldWait calls wait for
// a key's permits, Hold counts them as held: a call that does not wait is
// denied even beside a free permit, which goes to the first in line.
func (m *Limiter) Hold(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, runtime.Hold, error) {
	return m.hold(ctx, reqs, nil)
}

// hold is Hold for the HoldWait call w, or for a call that does not wait
// when w is nil (see decideMany).
func (m *Limiter) hold(ctx context.Context, reqs []runtime.Request, w *waiter) (runtime.Decisions, runtime.Hold, error) {
	if len(reqs) == 1 && reqs[0].Limit.Mode != runtime.ModeOff && reqs[0].Limit.Algorithm != runtime.Concurrency {
		// As Decide's lone limit: on the key's entry alone.
		r := reqs[0]
		if err := runtime.Validate(r); err != nil {
			return runtime.Decisions{}, nil, err
		}
		if err := ctx.Err(); err != nil {
			return runtime.Decisions{}, nil, err
		}
		var (
			v      verdict
			forgot bool
		)
		p, err := m.paramsOf(r.Limit, costOf(r))
		if err != nil {
			return runtime.Decisions{}, nil, err
		}
		if len(r.Limit.Name) > maxLiteralLen || len(r.Key) > maxLiteralLen {
			v, forgot = m.decideLong(r.Limit, r.Key, p)
		} else {
			k := storeKey{algo: algoOf(r.Limit), name: r.Limit.Name, key: r.Key}
			h := m.hash(&k)
			v, forgot = m.decide(&m.shards[shardOf(h)], h, &k, r.Limit.Name, p)
		}
		ds := runtime.Decisions{Allowed: v.ok || r.Limit.Mode == runtime.ModeShadow, Each: []runtime.Decision{v.decision()}, Cause: memoryFull(forgot)}
		if !ds.Allowed {
			return ds, nil, nil
		}
		h := &hold{m: m}
		h.one.req[0], h.one.lim[0] = r, heldLimit{receipt: v.scratch, recorded: v.ok}
		h.reqs, h.lims = h.one.req[:], h.one.lim[:]
		return ds, h, nil
	}
	const inline = 4
	var buf [inline]heldLimit
	held := buf[:]
	if len(reqs) > inline {
		held = make([]heldLimit, len(reqs))
	}
	// HeldUntil counts from before the permits were asked for.
	start := time.Since(m.epoch)
	ds, err := m.decideMany(ctx, reqs, held, false, w)
	if err != nil || !ds.Allowed {
		return ds, nil, err
	}
	h := &hold{m: m, reqs: slices.Clone(reqs), lims: slices.Clone(held[:len(reqs)])}
	if lease, ok := h.lease(); ok {
		h.until.Store(int64(start + lease))
		return ds, (*permitHold)(h), nil
	}
	return ds, h, nil
}

// hold is a memlimit Hold: the call's requests, as decided, and what each
// limit recorded.
type hold struct {
	m       *Limiter
	settled atomic.Bool
	// until is a permitHold's HeldUntil, as a time since m.epoch, so that
	// it keeps the monotonic clock's reading.
	until atomic.Int64
	reqs  []runtime.Request
	lims  []heldLimit
	// one holds reqs and lims for a call of one limit, in the same
	// allocation.
	one struct {
		req [1]runtime.Request
		lim [1]heldLimit
	}
}

// heldLimit is what one limit recorded of the call: nothing, when it was
// off or a shadow limit without room, or else its cost, under receipt. For
// a concurrency limit, receipt is the permit's id, and permit the entry
// that holds it, in the shard of that index.
type heldLimit struct {
	receipt  int64
	permit   *entry
	shard    uint8
	recorded bool
}

// Settle implements runtime.Hold. used is checked first with
// runtime.ValidateSettle; an invalid used returns an error and leaves the
// Hold to be settled. A done ctx does not stop it, as it stops no
// redislimit settlement either: a call whose caller gave up must still
// release its permits and give back its units. Otherwise the first Settle settles
// every limit that recorded the call, releases its permits (see
// permitHold), and returns nil, or the errors of the permits it found
// gone; later ones return runtime.ErrSettled.
func (h *hold) Settle(ctx context.Context, used ...int64) error {
	if err := runtime.ValidateSettle(h.reqs, used); err != nil {
		return err
	}
	if !h.settled.CompareAndSwap(false, true) {
		return runtime.ErrSettled
	}
	var lost []error
	for i, r := range h.reqs {
		switch l := &h.lims[i]; {
		case l.permit != nil:
			if err := h.m.releasePermit(r, l); err != nil {
				lost = append(lost, err)
			}
		case l.recorded:
			h.m.settle(r, l.receipt, used[i])
		}
	}
	return errors.Join(lost...)
}

// settle settles the call r recorded under receipt at used units.
func (m *Limiter) settle(r runtime.Request, receipt, used int64) {
	p, err := m.paramsOf(r.Limit, costOf(r))
	used = min(used, int64(r.Limit.Capacity()))
	if err != nil || used == p.cost {
		// err: a calendar's zone that no longer loads, after it did for
		// the decision; only a limiter keeping more calendars than it
		// caches loads one again.
		return
	}
	var d keyDigests
	s, h, k := m.locate(r, &d)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.tab.Load().find(h, &k)
	created := e == nil
	switch {
	case !created:
		e.acquire()
	case used < p.cost:
		// The key was forgotten, and the call's units with it.
		return
	default:
		e, _ = s.add(h, &k, r.Limit.Name, true, m.now(), nil)
		m.keepTidy()
	}
	now := m.now()
	if used < p.cost {
		e.giveBack(now, p, receipt, p.cost-used)
	} else {
		// The excess is recorded as a call of that cost would be, room or
		// not.
		p.cost = used - p.cost
		v := e.check(now, p)
		s.commit(e, now, p, &v)
	}
	s.expiresFrom = min(s.expiresFrom, e.expiry())
	e.release(!created)
}

// locate returns the shard, hash and store key of r's key, hashing its long
// parts into d.
func (m *Limiter) locate(r runtime.Request, d *keyDigests) (*shard, uint64, storeKey) {
	k := newStoreKey(algoOf(r.Limit), r.Limit.Name, r.Key, d)
	h := m.hash(&k)
	return &m.shards[shardOf(h)], h, k
}

// Peek implements runtime.Peeker: it returns the Decisions that Decide
// would return for reqs now, modes included, and records nothing. A key
// the limiter does not hold reads as empty and is not added.
func (m *Limiter) Peek(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	return m.decideMany(ctx, reqs, nil, true, nil)
}

// Reset implements runtime.Resetter: it empties each request's key under
// its limit, whatever the limit's mode, under the same locks as a
// decision, so that the key's full capacity is available at once. A key
// the limiter does not hold is left so. Each request is checked with
// runtime.Validate, its Cost ignored.
func (m *Limiter) Reset(ctx context.Context, reqs ...runtime.Request) error {
	for _, r := range reqs {
		if err := runtime.Validate(runtime.Request{Limit: r.Limit, Key: r.Key}); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, r := range reqs {
		m.reset(r)
	}
	return nil
}

// reset empties r's key.
func (m *Limiter) reset(r runtime.Request) {
	var d keyDigests
	s, h, k := m.locate(r, &d)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.tab.Load().find(h, &k); e != nil {
		e.acquire()
		s.grown.Add(-e.empty())
		e.release(false)
	}
	if r.Limit.Algorithm == runtime.Concurrency {
		s.wake(waitKeyOf(r))
	}
}
