package redislimit

import (
	"context"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// Calls that wait (runtime.WaitHolder).
//
// A call waiting for a permit of a concurrency limit holds a place in the
// key's line, in Redis beside the permits (lua/concurrency.lua): each ask
// of a waiting call (opWait) keeps its places, or takes them at the end of
// the line, and a call takes a permit only when the permits held and the
// places ahead of it leave one. Nothing tells a waiter that a permit was
// freed, so it asks again after a short pause, growing from waitPollMin to
// waitPollMax; a place lives placeLife past the waiter's latest ask, so a
// waiter that vanished (killed, or paused past it) holds up the line for
// that long at most. A call waiting for a rate limit's room asks again
// after its RetryAfter, as runtime.Wait does.

const (
	waitPollMin = time.Millisecond
	waitPollMax = 32 * time.Millisecond
	// placeLife is how long a place outlives its waiter's latest ask: far
	// beyond waitPollMax, so that a waiter slow to run (a loaded machine)
	// keeps its place.
	placeLife = 2 * time.Second
)

// HoldWait implements runtime.WaitHolder: it decides as Hold does and,
// while the call is denied, waits and asks again, for at most max and
// never past ctx's deadline: for an enforced rate limit's RetryAfter, and
// for a concurrency limit's permit in the key's line, which every Limiter
// sharing Redis serves in order of arrival. A call that stops waiting
// holds nothing: it gives its places up (best effort: a place that could
// not be given up counts 2 seconds more), and a permit taken as it gave up
// is released. A call the failure policy decides waits as the policy
// answers, in no line.
func (r *Limiter) HoldWait(ctx context.Context, max time.Duration, reqs ...runtime.Request) (runtime.Decisions, runtime.Hold, error) {
	if err := runtime.Validate(reqs...); err != nil {
		return runtime.Decisions{}, nil, err
	}
	if max <= 0 {
		return r.hold(ctx, reqs, nil)
	}
	end := time.Now().Add(max)
	if dl, ok := ctx.Deadline(); ok && dl.Before(end) {
		end = dl
	}
	l := newLine(reqs)
	defer l.leave(r, ctx, reqs)
	poll := waitPollMin
	for {
		// Asked apart from ctx's cancellation, so that a permit taken as
		// the caller gives up is known, and released.
		ds, h, err := r.hold(context.WithoutCancel(ctx), reqs, l)
		if err == nil && ds.Allowed {
			// Its places went with the permits it took.
			l.admitted()
			if ctx.Err() != nil {
				_ = h.Settle(context.WithoutCancel(ctx), make([]int64, len(reqs))...)
				return runtime.Decisions{}, nil, ctx.Err()
			}
		}
		if err != nil || ds.Allowed {
			return ds, h, err
		}
		pause, ok := waitPause(reqs, ds, poll)
		if !ok || time.Until(end) < pause {
			return ds, nil, nil
		}
		if pause <= poll {
			poll = min(2*poll, waitPollMax)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return runtime.Decisions{}, nil, ctx.Err()
		case <-t.C:
		}
	}
}

// A line is a waiting call's places in the lines of its concurrency
// limits: the ticket of each, by request (0: none, or no such limit).
type line struct {
	tickets []int64
	// life is how long each ask keeps a place, µs, by request.
	life []int64
	// held says some ticket is not 0.
	held bool
}

// newLine returns the line of a call of reqs with no place yet, or nil
// when the call has no concurrency limit that may deny it.
func newLine(reqs []runtime.Request) *line {
	l := &line{tickets: make([]int64, len(reqs)), life: make([]int64, len(reqs))}
	waits := false
	for i := range reqs {
		if reqs[i].Limit.Algorithm == runtime.Concurrency && reqs[i].Limit.Mode == runtime.ModeEnforce {
			waits = true
		}
		l.life[i] = placeLife.Microseconds()
	}
	if !waits {
		return nil
	}
	return l
}

// send sets what a held call k sends to keep the line's places.
func (l *line) send(k *kept) {
	for i, t := range l.tickets {
		k.receipts[i] = -t
	}
	k.wait = l.life
}

// admitted forgets the places of a call that took its permits, which
// ended their places.
func (l *line) admitted() {
	if l != nil {
		l.held = false
	}
}

// read takes the places a denied call k was given.
func (l *line) read(k *kept) {
	for i := range l.tickets {
		l.tickets[i] = 0
		if k.receipts[i] < 0 {
			l.tickets[i] = -k.receipts[i]
			l.held = true
		}
	}
}

// waitPause returns how long a call denied as ds waits before it asks again:
// the longest RetryAfter of its enforced rate limits that denied it, or
// poll when only concurrency limits did. It reports false when a denying
// rate limit gave no RetryAfter.
func waitPause(reqs []runtime.Request, ds runtime.Decisions, poll time.Duration) (time.Duration, bool) {
	var pause time.Duration
	for i, d := range ds.Each {
		if d.Allowed || reqs[i].Limit.Mode != runtime.ModeEnforce {
			continue
		}
		if reqs[i].Limit.Algorithm == runtime.Concurrency {
			pause = max(pause, poll)
			continue
		}
		if d.RetryAfter <= 0 {
			return 0, false
		}
		pause = max(pause, d.RetryAfter)
	}
	return pause, pause > 0
}

// leave gives up the places that a call that stopped waiting holds, in one script call per Cluster slot that holds one, batched with
// others, within the limiter's timeout.
func (l *line) leave(r *Limiter, ctx context.Context, reqs []runtime.Request) {
	if l == nil || !l.held || r.breaker.isOpen(time.Now()) {
		return
	}
	ctx = context.WithoutCancel(ctx)
	asks := r.resolve(nil, reqs)
	d := resolvedCall{now: -1, asks: asks, vs: make([]verdict, len(asks)), receipts: make([]int64, len(asks)), used: make([]int64, len(asks)), op: opWait}
	if r.cfg.clock != nil {
		d.now = r.cfg.clock().UnixMicro()
	}
	var at []int
	for i, t := range l.tickets {
		d.receipts[i], d.used[i] = -t, -1
		if t > 0 {
			at = append(at, i)
		}
	}
	start := time.Now()
	for _, g := range r.permitGroups(asks, at) {
		// A place not given up lapses by itself.
		_, _ = r.runGroup(ctx, start, &d, g)
	}
}

var _ runtime.WaitHolder = (*Limiter)(nil)
