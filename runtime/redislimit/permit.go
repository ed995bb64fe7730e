package redislimit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// Permits of runtime.Concurrency limits (lua/concurrency.lua).
//
// A held call that Redis admitted under concurrency limits holds one
// permit per such limit (enforced, or in shadow mode with room), each
// named by the id its script returned as the limit's receipt. Its Hold is
// a permitHold: Renew extends the permits, one script call per Cluster
// slot, batched with decisions (RENEW in lua/main.lua), and Settle
// releases them by id with the call's other limits (SETTLE). A call the
// fallback admitted holds the fallback's permits, when its Hold is a
// runtime.PermitHold, and one admitted under FailOpen holds none: its Hold
// is no PermitHold, and runtime.Keep leaves it alone.
//
// Neither a lease nor the deny cache ever answers for a concurrency limit:
// leases are for rate limits only (see leases), and a concurrency denial
// proves nothing about the next call, as a release may free a permit at
// any moment (its RetryAfter is 0, which the deny cache never keeps).

// permitAt returns the index of the first ask that would take a permit,
// or -1.
func permitAt(asks []ask) int {
	for i := range asks {
		// (A request in runtime.ModeOff has the zero ask.)
		if asks[i].algo() == codeConcurrency {
			return i
		}
	}
	return -1
}

// errPermitDecided is the error of Decide or Allow on a concurrency limit
// l, whose permit nobody would release.
func errPermitDecided(l runtime.Limit) error {
	return fmt.Errorf("ratelimit: limit %q is a concurrency limit, whose permit is released when the call's Hold is settled; "+
		"decide it with runtime.Admit (or Limiter.Hold) and settle the Hold when the call returns, not with Decide or Allow: %w",
		l.Name, errors.ErrUnsupported)
}

// holdsPermit reports whether request i of a call admitted with verdicts
// vs took a permit.
func holdsPermit(reqs []runtime.Request, vs []verdict, i int) bool {
	l := reqs[i].Limit
	return l.Algorithm == runtime.Concurrency && (l.Mode == runtime.ModeEnforce || l.Mode == runtime.ModeShadow && vs[i].ok)
}

// permitHold is the runtime.PermitHold of a held call with permits.
type permitHold struct {
	*hold
	// permits are the indexes of the requests that took a permit; lease is
	// the shortest of their leases.
	permits []int
	lease   time.Duration
	// permitBuf holds the permits of a call of few limits.
	permitBuf [inlineLimits]int
	// fallback holds the permits of a call the fallback admitted.
	fallback runtime.PermitHold

	mu sync.Mutex
	// sent is when (on the process's monotonic clock) the acquisition, or
	// the latest renewal that succeeded, was sent.
	sent time.Time
}

// permits returns the PermitHold of h, admitted as sent: nil when the
// call holds no permit.
func (h *hold) permits(sent time.Time) *permitHold {
	switch h.source {
	case runtime.SourceStore:
	case runtime.SourceFallback:
		if ph, ok := h.kept.fallback.(runtime.PermitHold); ok {
			return &permitHold{hold: h, fallback: ph}
		}
		return nil
	default:
		return nil
	}
	var p *permitHold
	for i := range h.reqs {
		if !holdsPermit(h.reqs, h.vs, i) {
			continue
		}
		if p == nil {
			p = &permitHold{hold: h, lease: h.reqs[i].Limit.Window, sent: sent}
			p.permits = p.permitBuf[:0]
		}
		p.permits = append(p.permits, i)
		p.lease = min(p.lease, h.reqs[i].Limit.Window)
	}
	return p
}

// HeldUntil implements runtime.PermitHold: it precedes the expiry of every
// permit on Redis's clock, as Redis received the acquisition or renewal
// after it was sent.
func (p *permitHold) HeldUntil() time.Time {
	if p.fallback != nil {
		return p.fallback.HeldUntil()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent.Add(p.lease)
}

// Renew implements runtime.PermitHold: one script call per Cluster slot of
// the permits, each renewing its slot's permits all or none. On a Cluster,
// a call whose permits span slots may have some renewed when another was
// lost; the call has lost its hold all the same, and Settle releases them.
// While Redis's breaker is open it fails at once, leaving the permits held
// until HeldUntil.
func (p *permitHold) Renew(ctx context.Context) error {
	if p.settled.Load() {
		return runtime.ErrSettled
	}
	if p.fallback != nil {
		return p.fallback.Renew(ctx)
	}
	r := p.r
	name := p.reqs[p.permits[0]].Limit.Name
	sent := time.Now()
	if r.breaker.isOpen(sent) {
		return &storeError{op: "renew the permit of " + name, err: r.breaker.openErr()}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	asks := r.resolve(nil, p.reqs)
	d := resolvedCall{now: -1, asks: asks, vs: make([]verdict, len(asks)), receipts: p.kept.receipts, op: opRenew}
	if r.cfg.clock != nil {
		d.now = r.cfg.clock().UnixMicro()
	}
	var errs []error
	renewed := true
	for _, g := range r.permitGroups(asks, p.permits) {
		committed, err := r.runGroup(ctx, sent, &d, g)
		if err != nil {
			errs = append(errs, err)
		}
		renewed = renewed && committed && err == nil
	}
	var lost error
	for _, i := range p.permits {
		if d.vs[i].ok {
			lost = fmt.Errorf("ratelimit: cannot renew the permit of %q: %w", p.reqs[i].Limit.Name, runtime.ErrPermitLost)
			break
		}
	}
	if lost != nil {
		return lost
	}
	if len(errs) > 0 {
		if errors.Is(ctx.Err(), context.Canceled) {
			return ctx.Err()
		}
		return &storeError{op: "renew the permit of " + name + "; it is held until its lease ends", err: errors.Join(errs...)}
	}
	if renewed {
		p.mu.Lock()
		if sent.After(p.sent) {
			p.sent = sent
		}
		p.mu.Unlock()
	}
	return nil
}

// permitGroups returns the requests at permits, of asks, split by Cluster
// slot as groups splits them.
func (r *Limiter) permitGroups(asks []ask, permits []int) [][]int {
	var out [][]int
	for _, g := range r.groups(asks) {
		var keep []int
		for _, i := range g {
			if slices.Contains(permits, i) {
				keep = append(keep, i)
			}
		}
		if len(keep) > 0 {
			out = append(out, keep)
		}
	}
	return out
}

// lostPermits returns the error of a settle d of the requests reqs in
// groups that found a permit lost, or nil: the settle's verdicts say ok
// for a lost permit (see lua/main.lua).
func lostPermits(reqs []runtime.Request, d *resolvedCall, groups [][]int) error {
	for _, g := range groups {
		for _, i := range g {
			if d.asks[i].algo() == codeConcurrency && d.vs[i].ok {
				return fmt.Errorf("ratelimit: released the permit of %q, which had been lost before (its lease ended or Redis dropped it); the call's other limits were settled: %w",
					reqs[i].Limit.Name, runtime.ErrPermitLost)
			}
		}
	}
	return nil
}

var _ runtime.PermitHold = (*permitHold)(nil)
