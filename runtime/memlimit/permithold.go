package memlimit

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

var _ runtime.PermitHold = (*permitHold)(nil)

// permitHold is the Hold of a call that took permits of concurrency
// limits. Each permit is named by the entry that holds it and its id in
// that entry: ids are unique in an entry's life (see concurrency), and the
// Hold keeps its entry, so that an entry made anew for the key after an
// eviction is not taken for it, and its permits are never released by a
// Hold of the old one.
type permitHold hold

// Settle implements runtime.Hold: it settles the call's rate limits as a
// Hold without permits does, and releases each of its permits, whatever
// used says of them. It returns an error wrapping runtime.ErrPermitLost,
// once everything else is settled, when a permit had already expired or
// been reset, or its key evicted; releasing it then changes nothing.
func (p *permitHold) Settle(ctx context.Context, used ...int64) error {
	return (*hold)(p).Settle(ctx, used...)
}

// HeldUntil implements runtime.PermitHold: the local time at which the
// acquisition, or the last renewal that succeeded, started, plus the
// shortest lease among the call's permits. It never moves back.
func (p *permitHold) HeldUntil() time.Time {
	return p.m.epoch.Add(time.Duration(p.until.Load()))
}

// Renew implements runtime.PermitHold: it extends the lease of every
// permit of the call to the limiter's now plus its Window, or, when one is
// gone (expired, reset, its key evicted, or the call settled), returns an
// error wrapping runtime.ErrPermitLost and extends none. The shards of the
// permits' keys are locked together, in a fixed order, and then their
// entries, as a decision does, so that no call sees some renewed and not
// the others.
func (p *permitHold) Renew(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h := (*hold)(p)
	if h.settled.Load() {
		return fmt.Errorf("ratelimit: renewing a call that was settled, which released its permits: %w", runtime.ErrPermitLost)
	}
	start := time.Since(h.m.epoch)
	var buf [4]uint64
	order := buf[:0]
	for _, l := range h.lims {
		if l.permit != nil {
			order = append(order, uint64(l.shard))
		}
	}
	slices.Sort(order)
	order = slices.Compact(order)
	for _, i := range order {
		h.m.shards[i].mu.Lock()
	}
	err := h.renewLocked()
	for _, i := range order {
		h.m.shards[i].mu.Unlock()
	}
	if err != nil {
		return err
	}
	lease, _ := h.lease()
	for next := int64(start + lease); ; {
		cur := h.until.Load()
		if next <= cur || h.until.CompareAndSwap(cur, next) {
			return nil
		}
	}
}

// renewLocked is Renew under the locks of the permits' shards: it holds
// every permit's entry, checks that every permit is live, and only then
// extends them all.
func (h *hold) renewLocked() error {
	// Under its shard's lock, an entry is dead exactly when it was
	// evicted: lock then fails. The entries are distinct, as Validate
	// allows a limit once per key.
	locked := 0 // the entries of h.lims[:locked] are held
	defer func() {
		for _, l := range h.lims[:locked] {
			if l.permit != nil {
				l.permit.w.unlock()
			}
		}
	}()
	for i, l := range h.lims {
		if l.permit != nil && !l.permit.w.lock() {
			return permitEvicted(h.reqs[i].Limit)
		}
		locked = i + 1
	}
	now := h.m.now()
	for i, l := range h.lims {
		if l.permit != nil && stateOf[concurrency](l.permit).live(now, l.receipt) < 0 {
			return permitExpired(h.reqs[i].Limit)
		}
	}
	for i, l := range h.lims {
		if l.permit != nil {
			until := now + h.reqs[i].Limit.Window.Microseconds()
			stateOf[concurrency](l.permit).renew(l.receipt, until)
			l.permit.expireAt = max(l.permit.expireAt, until)
		}
	}
	return nil
}

// lease returns the shortest Window among h's permits; ok is false when
// the call holds none.
func (h *hold) lease() (lease time.Duration, ok bool) {
	lease = math.MaxInt64
	for i, l := range h.lims {
		if l.permit != nil {
			lease, ok = min(lease, h.reqs[i].Limit.Window.Truncate(time.Microsecond)), true
		}
	}
	return lease, ok
}

// releasePermit releases the permit l holds of r's limit, under its
// shard's lock and its key's, and wakes the key's first waiters. Its key's
// expiry becomes the end of the last lease still running, so that a sweep
// may forget a key whose permits are all released.
func (m *Limiter) releasePermit(r runtime.Request, l *heldLimit) error {
	lim := r.Limit
	s := &m.shards[l.shard]
	s.mu.Lock()
	defer s.mu.Unlock()
	// Even a permit found gone may have been dropped only now.
	defer s.wake(waitKeyOf(r))
	e := l.permit
	if !e.w.lock() {
		return permitEvicted(lim)
	}
	now := m.now()
	c := stateOf[concurrency](e)
	i := c.live(now, l.receipt)
	if i < 0 {
		e.w.unlock()
		return permitExpired(lim)
	}
	b := c.bytes()
	c.release(i)
	s.grown.Add(c.bytes() - b)
	e.expireAt = c.end(now)
	s.expiresFrom = min(s.expiresFrom, e.expireAt)
	e.w.unlock()
	return nil
}

// permitEvicted and permitExpired are the errors of finding a call's
// permit gone; they name the limit, never the key, which may be personal
// data.
func permitEvicted(l runtime.Limit) error {
	return fmt.Errorf("ratelimit: concurrency limit %q: the key's permits were forgotten, as all their leases had ended, or to stay within WithMaxMemory: %w", l.Name, runtime.ErrPermitLost)
}

func permitExpired(l runtime.Limit) error {
	return fmt.Errorf("ratelimit: concurrency limit %q: the permit's lease of %v ended without a renewal, or its key was reset: %w", l.Name, l.Window, runtime.ErrPermitLost)
}
