package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrPermitLost says that a call no longer holds a permit of a Concurrency
// limit that admitted it: the permit's lease ended before a renewal reached
// the store (the process was paused, or the store did not answer), or the
// store lost it (a reset, an eviction, a failover). From then on another
// call may hold the permit. It is the cause of the context Keep returns, and
// what Renew and Settle wrap when they find a permit gone.
var ErrPermitLost = errors.New("ratelimit: the call's concurrency permit was lost")

// A PermitHold is the Hold of a call that holds permits of Concurrency
// limits. Each permit lives for its limit's Window, the lease, from when it
// was acquired or last renewed, on the store's clock; Keep renews them while
// the call runs. Its Settle releases the permits, whatever used says of
// them, and returns an error wrapping ErrPermitLost, after settling the
// call's other limits, when one had been lost: releasing it changes no
// other call's permit.
type PermitHold interface {
	Hold
	// Renew extends every permit's lease from now. It returns an error
	// wrapping ErrPermitLost when one is gone, renewing none of them then;
	// any other error says the store did not answer, and the permits may
	// still be held until HeldUntil.
	Renew(ctx context.Context) error
	// HeldUntil returns the time until which every permit of the call is
	// known to be held: the local time at which its acquisition, or its
	// last successful renewal, was sent, plus the shortest lease. It never
	// moves back.
	HeldUntil() time.Time
}

// Keep returns the context in which to run the call that h admitted, and a
// stop function to call once the call has returned, before settling h.
//
// When h is a PermitHold, Keep renews its permits while the call runs,
// every third of the time they are known to be held, and cancels the
// context it returns with a cause wrapping ErrPermitLost once a renewal
// finds a permit gone, or once HeldUntil passes without a renewal confirmed
// (renewals failed, or the process was paused): the method can then stop,
// as another call may hold its permit. The returned context's Done and Err
// say so as soon as HeldUntil has passed, even in a process resuming from
// a pause before any timer could run. For any other Hold it returns ctx
// and a stop that does nothing.
func Keep(ctx context.Context, h Hold) (context.Context, func()) {
	ph, ok := h.(PermitHold)
	if !ok {
		return ctx, func() {}
	}
	k := &keeper{h: ph, renewCtx: context.WithoutCancel(ctx)}
	ctx, k.cancel = context.WithCancelCause(ctx)
	k.mu.Lock()
	k.renewal = time.AfterFunc(k.renewIn(), k.renew)
	k.expiry = time.AfterFunc(time.Until(ph.HeldUntil()), k.expire)
	k.mu.Unlock()
	return keptContext{ctx, k}, k.stop
}

// keptContext is the context of a call that Keep keeps. Its Done and Err
// look at HeldUntil themselves rather than trust the expiry timer alone:
// in a process that was paused or starved of CPU, the method may run
// before the timer's goroutine does, and must not see its context live
// once its permit is no longer known to be held.
type keptContext struct {
	context.Context
	k *keeper
}

func (c keptContext) Done() <-chan struct{} {
	c.k.check()
	return c.Context.Done()
}

func (c keptContext) Err() error {
	c.k.check()
	return c.Context.Err()
}

// A keeper renews the permits of one call until it is stopped.
type keeper struct {
	h        PermitHold
	renewCtx context.Context
	cancel   context.CancelCauseFunc

	mu              sync.Mutex
	stopped         bool
	renewal, expiry *time.Timer
}

// minRenewal bounds how often a keeper retries renewals that fail.
const minRenewal = 10 * time.Millisecond

// renewIn returns when to renew next: after a third of the time the
// permits are known to be held.
func (k *keeper) renewIn() time.Duration {
	return max(time.Until(k.h.HeldUntil())/3, minRenewal)
}

// renew runs on the renewal timer.
func (k *keeper) renew() {
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return
	}
	k.mu.Unlock()
	ctx, cancel := context.WithDeadline(k.renewCtx, k.h.HeldUntil())
	err := k.h.Renew(ctx)
	cancel()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	if errors.Is(err, ErrPermitLost) {
		k.lose(err)
		return
	}
	// A renewal that failed is tried again; the expiry timer ends the
	// call's hold if none succeeds in time.
	k.expiry.Reset(time.Until(k.h.HeldUntil()))
	k.renewal.Reset(k.renewIn())
}

// check ends the call's hold at once if HeldUntil has passed.
func (k *keeper) check() {
	if time.Now().Before(k.h.HeldUntil()) {
		return
	}
	k.expire()
}

// expire runs on the expiry timer, which a successful renewal moves on.
func (k *keeper) expire() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	if left := time.Until(k.h.HeldUntil()); left > 0 {
		// Renewed since the timer was set.
		k.expiry.Reset(left)
		return
	}
	k.lose(fmt.Errorf("%w: no renewal was confirmed within its lease", ErrPermitLost))
}

// lose cancels the call's context with cause err; k.mu is held.
func (k *keeper) lose(err error) {
	k.stopped = true
	k.renewal.Stop()
	k.expiry.Stop()
	k.cancel(err)
}

func (k *keeper) stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.stopped {
		k.stopped = true
		k.renewal.Stop()
		k.expiry.Stop()
	}
	k.cancel(context.Canceled)
}
