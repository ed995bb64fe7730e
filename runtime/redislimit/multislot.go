package redislimit

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A call whose limits' keys fall on several Redis Cluster slots (see
// Limiter.Decide) is decided one slot after another, in the order of
// groups, and what the earlier slots recorded is refunded when a later one
// denies or fails.

// decideSlots decides d, whose requests span the slots of groups, waiting
// for each slot's reply as long as w allows.
func (r *Limiter) decideSlots(ctx context.Context, w *wait, d *resolvedCall, groups [][]int) (committed bool, err error) {
	if d.receipts == nil {
		d.receipts = make([]int64, len(d.asks))
	}
	for gi, g := range groups {
		committed, err := r.evalGroup(ctx, w, modeDecide, d, g)
		if err != nil {
			r.refund(ctx, d, recorded(d, groups[:gi]))
			return false, err
		}
		if !committed {
			r.refund(ctx, d, recorded(d, groups[:gi]))
			// Report every other slot's room as it now is, recording
			// nothing: the refunded slots' verdicts still describe their
			// undone commit, and the later slots were never asked.
			check := *d
			check.op = opCheck
			for j, other := range groups {
				if j != gi {
					_, _ = r.evalGroup(ctx, w, modeCheck, &check, other)
				}
			}
			return false, nil
		}
	}
	return true, nil
}

// recorded returns, of the committed groups, the requests whose limits
// recorded the call: the enforced ones and the shadow ones that had room.
// Groups that recorded nothing are left out.
func recorded(d *resolvedCall, groups [][]int) [][]int {
	out := make([][]int, 0, len(groups))
	for _, g := range groups {
		var rec []int
		for _, i := range g {
			if d.asks[i].code < shadowFlag || d.vs[i].ok {
				rec = append(rec, i)
			}
		}
		if len(rec) > 0 {
			out = append(out, rec)
		}
	}
	return out
}

// groups splits the requests of a call of several that Redis decides
// (those not in runtime.ModeOff, of which there is at least one), by
// index, into the sets one script may decide together: everything on a
// single server; per hash tag, in tag order, on a Redis Cluster or Ring,
// where a script may only touch one slot. The tag is read from each ask's
// storage key, so a group never spans two slots.
func (r *Limiter) groups(asks []ask) [][]int {
	all := make([]int, 0, len(asks))
	for i := range asks {
		if asks[i].key != "" {
			all = append(all, i)
		}
	}
	if !r.sharded {
		return [][]int{all}
	}
	byTag := map[string][]int{}
	var tags []string
	for _, i := range all {
		tag := r.slotOf(asks[i].key)
		if _, ok := byTag[tag]; !ok {
			tags = append(tags, tag)
		}
		byTag[tag] = append(byTag[tag], i)
	}
	if len(tags) == 1 {
		return [][]int{all}
	}
	slices.Sort(tags)
	out := make([][]int, 0, len(tags))
	for _, t := range tags {
		out = append(out, byTag[t])
	}
	return out
}

// slotOf returns the part of the storage key skey that picks its cluster
// slot: the prefix and "{" tag "}" that begin it (see appendStorageKey).
func (r *Limiter) slotOf(skey string) string {
	return skey[:len(r.cfg.prefix)+2+tagLen]
}

// refund undoes the admissions recorded for groups, best effort: if Redis
// fails now, those admissions keep counting until they expire, which can
// only deny calls, never admit extra ones. A refund is a settle at 0 units
// used (see settle).
func (r *Limiter) refund(ctx context.Context, d *resolvedCall, groups [][]int) {
	refund := *d
	// d's verdicts are the decision's; the settle's go elsewhere.
	refund.used, refund.vs = nil, make([]verdict, len(d.vs))
	_ = r.settle(ctx, &refund, groups)
}

// settle settles the admissions recorded for groups, requests of d of one
// slot each that recorded the call, at the units d.used says (0 when nil;
// a permit is released whatever they say, and its verdict in d.vs says ok
// when it was lost: see lua/main.lua),
// one call per group (batched with others, see batcher) on the limiter's
// clock now, and returns what failed. Each group's call carries a marker
// key of its own, so that
// a client resending the command after a lost reply cannot settle twice. It
// ignores ctx's cancellation, and waits for every group within the
// limiter's timeout at most, all groups together: a settle that fails
// leaves the admissions counted, which errs toward denial.
func (r *Limiter) settle(ctx context.Context, d *resolvedCall, groups [][]int) error {
	if len(groups) == 0 {
		return nil
	}
	if r.breaker.isOpen(time.Now()) {
		// Redis failed lately: the settle fails at once rather than cost
		// its caller the timeout, and leaves probing Redis to decisions.
		return r.breaker.openErr()
	}
	// A caller that stopped waiting still settles, within the timeout.
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	d.now, d.op = -1, opSettle
	if r.cfg.clock != nil {
		d.now = r.cfg.clock().UnixMicro()
	}
	var errs []error
	start := time.Now()
	for _, idx := range groups {
		d.op = opSettle
		if releasesOnly(d, idx) {
			d.op = opRelease
		}
		if _, err := r.runGroup(ctx, start, d, idx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// releasesOnly reports whether the requests of d at idx are all
// concurrency limits, whose settle releases their permits and needs no
// marker.
func releasesOnly(d *resolvedCall, idx []int) bool {
	for _, i := range idx {
		if d.asks[i].algo() != codeConcurrency {
			return false
		}
	}
	return true
}

// settleMarker returns a new key in the cluster slot of the storage key
// skey, unique to one settle.
func (r *Limiter) settleMarker(skey string) string {
	slot := r.slotOf(skey)
	// One allocation: the Builder's String does not copy.
	var b strings.Builder
	b.Grow(len(slot) + len("settle:") + 2*13 + 1)
	var n [13]byte
	b.WriteString(slot)
	b.WriteString("settle:")
	b.Write(strconv.AppendUint(n[:0], rand.Uint64(), 36))
	b.WriteByte('.')
	b.Write(strconv.AppendUint(n[:0], rand.Uint64(), 36))
	return b.String()
}
