package redislimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// Holds, peeks and resets (runtime.Holder, runtime.Peeker and
// runtime.Resetter).
//
// A held call is decided as Decide decides it, batching, Cluster slots and
// failure policy alike, but keeps the receipts that the scripts return
// per limit (the entries' time of a sliding log, the bucket of a sliding
// window, the window of a fixed one), so that it is never sent in the
// uniform mode, which returns none. Its Hold settles it where it was
// decided:
//
//   - by Redis (runtime.SourceStore): one script call per slot of its
//     limits that recorded it and used other than they reserved, in the
//     SETTLE mode of lua/main.lua, which refunds or charges the difference
//     per limit, and applies once however often the client resends it;
//   - by a lease (runtime.SourceLease): units given back return to the
//     lease if it is still in use at this limiter, or else stay counted;
//     units charged go to Redis, as for a call Redis decided;
//   - by the fallback (runtime.SourceFallback): by the fallback's own Hold,
//     when it is a runtime.Holder; otherwise Settle returns an error
//     wrapping errors.ErrUnsupported and the reservation stays;
//   - without a decision (runtime.SourceFailOpen): there is nothing to
//     settle.
//
// A settle that gives units back forgets the denials this limiter's deny
// cache keeps for those limits and keys. Other limiters sharing the store
// are not told: their deny caches may deny the key until the denials they
// remember expire (at most the RetryAfter Redis gave them), and the units
// they hold in leases stay theirs until released. Reset forgets this
// limiter's denials and leases of the keys it resets, with the same
// limits on the others.

// kept is what a held call keeps of its decision for settling it, filled
// by decide.
type kept struct {
	// receipts are the scripts' per request, when Redis decided.
	receipts []int64
	// lease is the lease that admitted the call, if one did.
	lease *lease
	// fallback is the Hold of the fallback, which decided the requests at
	// fallbackAt (nil: all of them) when it is a runtime.Holder;
	// fallbackErr says why the fallback cannot settle when it is not.
	fallback    runtime.Hold
	fallbackAt  []int
	fallbackErr error
	// wait is, for a call that waits (see line), how long to keep its
	// places in line, µs, per request; the receipts sent are then minus
	// its tickets.
	wait []int64
}

// Hold decides reqs as Decide does and, when the call is admitted,
// returns the runtime.Hold that settles it (see runtime.Holder). A call
// Redis decided is settled in Redis, one call (batched with others) per Cluster slot of
// its limits (see Decide), applied once even when the client resends it;
// a call admitted from a lease gives back to the lease while it is in use,
// and charges in Redis; a call the fallback decided is settled by the
// fallback's Hold, and a call admitted under FailOpen has nothing to
// settle. A settle that fails returns an error wrapping
// runtime.ErrUnavailable and leaves the reservation counted, unless Redis,
// reached but silent for the timeout, still runs it later (once: see
// above); it ignores the cancellation of its context, and waits for Redis
// within the limiter's timeout (see WithTimeout), every slot together.
//
// Giving units back forgets this limiter's remembered denials of those
// keys (see WithDenyCache); other limiters sharing Redis may deny them
// until the denials they remember expire, at most the RetryAfter they
// were given.
func (r *Limiter) Hold(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, runtime.Hold, error) {
	if err := runtime.Validate(reqs...); err != nil {
		return runtime.Decisions{}, nil, err
	}
	return r.hold(ctx, reqs, nil)
}

// hold is Hold of validated requests; l is the line of a call that waits
// (see HoldWait), or nil.
func (r *Limiter) hold(ctx context.Context, reqs []runtime.Request, l *line) (runtime.Decisions, runtime.Hold, error) {
	// The hold and what it keeps, one allocation for a call of few limits.
	h := &hold{r: r}
	h.kept = &h.k
	k, vs := h.kept, h.vsBuf[:0]
	k.receipts = ints(&h.receiptBuf, len(reqs))
	if l != nil {
		l.send(k)
	}
	if len(reqs) > inlineLimits {
		vs = make([]verdict, 0, len(reqs))
	}
	vs = vs[:len(reqs)]
	// Before the acquisition is sent: a permit's hold is known from then
	// (see permitHold.HeldUntil).
	sent := time.Now()
	ds, err := r.decide(ctx, reqs, vs, k)
	if err != nil {
		return ds, nil, err
	}
	if ds.Each == nil {
		ds.Each = decisions(vs)
	}
	if !ds.Allowed {
		if l != nil {
			l.read(k)
		}
		return ds, nil, nil
	}
	if len(reqs) <= inlineLimits {
		h.reqs = append(h.reqsBuf[:0], reqs...)
	} else {
		h.reqs = slices.Clone(reqs)
	}
	h.source, h.vs = ds.Source, vs
	if p := h.permits(sent); p != nil {
		return ds, p, nil
	}
	return ds, h, nil
}

// hold is the runtime.Hold of a call that Hold admitted.
type hold struct {
	r    *Limiter
	reqs []runtime.Request
	// source says where the call was decided; vs are the verdicts when
	// Redis or a lease decided it.
	source  runtime.Source
	vs      []verdict
	kept    *kept
	settled atomic.Bool
	// k, and the buffers, hold what a call of few limits keeps.
	k          kept
	receiptBuf [inlineLimits]int64
	vsBuf      [inlineLimits]verdict
	reqsBuf    [inlineLimits]runtime.Request
}

// Settle implements runtime.Hold.
func (h *hold) Settle(ctx context.Context, used ...int64) error {
	if err := runtime.ValidateSettle(h.reqs, used); err != nil {
		return err
	}
	if !h.settled.CompareAndSwap(false, true) {
		return runtime.ErrSettled
	}
	switch h.source {
	case runtime.SourceFailOpen:
		return nil
	case runtime.SourceFallback:
		return h.settleFallback(ctx, used)
	}
	r := h.r
	var asksBuf [inlineLimits]ask
	asks := r.resolve(asksBuf[:0], h.reqs)
	if err := r.resolveCalendars(asks, h.reqs); err != nil {
		return err
	}
	var usedBuf [inlineLimits]int64
	d := resolvedCall{asks: asks, vs: h.vs, receipts: h.kept.receipts, used: usedBuf[:0]}
	if len(used) > inlineLimits {
		d.used = make([]int64, 0, len(used))
	}
	d.used = d.used[:len(used)]
	for i, u := range used {
		d.used[i] = min(u, int64(h.reqs[i].Limit.Capacity()))
	}
	if h.source == runtime.SourceLease && d.used[0] < asks[0].cost {
		// A lease admits calls of one limit.
		r.leases.giveBack(h.kept.lease, asks[0].cost-d.used[0])
		r.forgetDenials(h.reqs[:1], asks[:1])
		return nil
	}
	// Only the limits that recorded the call and used other than they
	// reserved are sent, and the permits, released whatever was used.
	var groups [][]int
	if len(asks) == 1 {
		// One request: as settleGroups, with no groups to build.
		var one [1][]int
		a := &asks[0]
		if a.key != "" && (a.code < shadowFlag || d.vs[0].ok) && (d.used[0] != a.cost || a.algo() == codeConcurrency) {
			one[0] = firstN(1)
			groups = one[:]
		}
	} else {
		groups = r.settleGroups(&d, asks)
	}
	// The settle's verdicts say which permits were lost.
	var vsBuf [inlineLimits]verdict
	d.vs = vsBuf[:0]
	if len(asks) > inlineLimits {
		d.vs = make([]verdict, 0, len(asks))
	}
	d.vs = d.vs[:len(asks)]
	err := r.settle(ctx, &d, groups)
	for _, g := range groups {
		for _, i := range g {
			if d.used[i] < asks[i].cost {
				r.forgetDenials(h.reqs[i:i+1], asks[i:i+1])
			}
		}
	}
	lost := lostPermits(h.reqs, &d, groups)
	if err != nil {
		return errors.Join(&storeError{op: "settle the call of " + h.reqs[0].Limit.Name + "; its reservation stays counted", err: err}, lost)
	}
	return lost
}

// settleGroups returns the groups of the requests of d, of asks, that a
// settle sends: those that recorded the call and used other than they
// reserved, and the permits, released whatever was used.
func (r *Limiter) settleGroups(d *resolvedCall, asks []ask) [][]int {
	var groups [][]int
	for _, g := range recorded(d, r.groups(asks)) {
		g = slices.DeleteFunc(g, func(i int) bool { return d.used[i] == asks[i].cost && asks[i].algo() != codeConcurrency })
		if len(g) > 0 {
			groups = append(groups, g)
		}
	}
	return groups
}

// settleFallback settles a call that the fallback decided.
func (h *hold) settleFallback(ctx context.Context, used []int64) error {
	k := h.kept
	if k.fallbackErr != nil {
		return k.fallbackErr
	}
	if k.fallback == nil {
		return nil
	}
	if k.fallbackAt != nil {
		sent := make([]int64, len(k.fallbackAt))
		for j, i := range k.fallbackAt {
			sent[j] = used[i]
		}
		used = sent
	}
	return k.fallback.Settle(ctx, used...)
}

// forgetDenials forgets every denial the deny cache keeps of reqs' limits
// on their keys, which asks resolved, whatever the cost denied.
func (r *Limiter) forgetDenials(reqs []runtime.Request, asks []ask) {
	if r.deny == nil {
		return
	}
	for i := range reqs {
		if reqs[i].Limit.Mode == runtime.ModeOff {
			continue
		}
		a := asks[i]
		a.cost = math.MaxInt64
		r.deny.forget(reqs[i], &a)
	}
}

// Peek returns what Decide would decide for reqs now, recording nothing
// (see runtime.Peeker): a check per Cluster slot, batched with other
// calls, that commits nothing, never answered by the deny cache or a lease,
// and never by the failure policy: when Redis does not answer, Peek
// returns an error wrapping runtime.ErrUnavailable. Each Decision reports
// its limit's room as it is, before the call: Remaining is what could be
// admitted at once, and ResetAfter when the key's state empties as it
// stands. It writes nothing, not even the tidying a denial does.
func (r *Limiter) Peek(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	if err := runtime.Validate(reqs...); err != nil {
		return runtime.Decisions{}, err
	}
	if err := ctx.Err(); err != nil {
		return runtime.Decisions{}, err
	}
	vs := make([]verdict, len(reqs))
	asks, on := resolveLimits(nil, reqs, vs)
	if err := r.resolveCalendars(asks, reqs); err != nil {
		return runtime.Decisions{}, err
	}
	if on {
		d := resolvedCall{now: -1, asks: asks, vs: vs, op: opCheck}
		r.placeKeys(asks, reqs)
		if r.cfg.clock != nil {
			d.now = r.cfg.clock().UnixMicro()
		}
		start := time.Now()
		for _, g := range r.groups(asks) {
			if _, err := r.runGroup(ctx, start, &d, g); err != nil {
				if errors.Is(ctx.Err(), context.Canceled) {
					return runtime.Decisions{}, ctx.Err()
				}
				return runtime.Decisions{}, &storeError{op: "peek at " + reqs[0].Limit.Name, err: err}
			}
		}
	}
	ds := runtime.Decisions{Allowed: true, Each: decisions(vs)}
	for i, v := range vs {
		if reqs[i].Limit.Mode == runtime.ModeEnforce && !v.ok {
			ds.Allowed = false
		}
	}
	return ds, nil
}

// Reset forgets every admission of each request's key under its limit
// (see runtime.Resetter): it deletes the limit's state in Redis with its
// lease records, one DEL per Cluster slot, within the limiter's timeout,
// and forgets this limiter's denials (see WithDenyCache) and leases (see
// WithLeases) of those keys; Request.Cost is ignored. Other limiters
// sharing Redis may deny the keys until the denials they remember expire,
// and may admit from the units they hold in leases until those end, as
// their grants were counted before the reset. When Redis does not answer
// it returns an error wrapping runtime.ErrUnavailable, and what it
// deleted is undetermined. With no requests it does nothing.
func (r *Limiter) Reset(ctx context.Context, reqs ...runtime.Request) error {
	if len(reqs) == 0 {
		return nil
	}
	for _, q := range reqs {
		if err := q.Limit.Validate(); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	all := slices.Clone(reqs)
	for i := range all {
		all[i].Cost = 0
		all[i].Limit.Mode = runtime.ModeEnforce
	}
	asks := r.resolve(nil, all)
	bySlot := map[string][]string{}
	var slots []string
	for _, a := range asks {
		slot := ""
		if r.sharded {
			slot = r.slotOf(a.key)
		}
		if _, ok := bySlot[slot]; !ok {
			slots = append(slots, slot)
		}
		bySlot[slot] = append(bySlot[slot], a.key, a.key+leaseRecordsSuffix)
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.timeout)
	defer cancel()
	var errs []error
	for _, slot := range slots {
		if err := r.client.Del(ctx, bySlot[slot]...).Err(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, a := range asks {
		r.leases.drop(a.key)
	}
	r.forgetDenials(all, asks)
	if err := errors.Join(errs...); err != nil {
		return &storeError{op: "reset " + reqs[0].Limit.Name, err: err}
	}
	return nil
}

// storeError is the error of Redis failing what is not a decision (a
// settle, a peek, a reset): it matches runtime.ErrUnavailable and unwraps
// to the cause.
type storeError struct {
	op  string
	err error
}

func (e *storeError) Error() string {
	return fmt.Sprintf("ratelimit: cannot %s: redis unavailable (%v)", e.op, e.err)
}

func (e *storeError) Unwrap() error { return e.err }

func (e *storeError) Is(target error) bool { return target == runtime.ErrUnavailable }

var (
	_ runtime.Holder   = (*Limiter)(nil)
	_ runtime.Peeker   = (*Limiter)(nil)
	_ runtime.Resetter = (*Limiter)(nil)
)
