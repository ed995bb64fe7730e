package memlimit

import (
	"context"
	"errors"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

var _ runtime.WaitHolder = (*Limiter)(nil)

// HoldWait implements runtime.WaitHolder. It decides as Hold does, and
// returns the Hold of a call admitted. A call denied waits and asks again:
// for the longest RetryAfter of the enforced rate limits that denied it,
// and otherwise, in the queue of each Concurrency key that denied it, until
// a permit may be free in its turn. A call is admitted to a key only if its
// permits held, the waiters ahead of it and the call fit in Max: a call
// not waiting (Hold, or HoldWait before it joins) counts every waiter,
// so it is denied while others wait, even beside a free permit. The wait
// ends with the last denial, and a nil Hold and error, at once when a rate
// limit's RetryAfter would not fit in what is left of max or before ctx's
// deadline, and when max has passed or ctx's deadline has come; it ends
// with ctx's error when ctx is cancelled. A call that stops waiting leaves
// every queue and holds nothing. With max <= 0 it is Hold.
//
// A waiter wakes when a permit of its key is released or reset, when a
// waiter ahead of it leaves without a permit, and at the end of the first
// lease it saw (leases end without an event), read on the limiter's clock
// but waited for on the process's; it asks again at least every
// maxPermitPoll.
func (m *Limiter) HoldWait(ctx context.Context, max time.Duration, reqs ...runtime.Request) (runtime.Decisions, runtime.Hold, error) {
	if max <= 0 {
		return m.Hold(ctx, reqs...)
	}
	var w *waiter
	for _, r := range reqs {
		if r.Limit.Algorithm == runtime.Concurrency {
			w = newWaiter()
			defer m.leaveAll(w, reqs)
			break
		}
	}
	bound := time.Now().Add(max)
	if dl, ok := ctx.Deadline(); ok && dl.Before(bound) {
		bound = dl
	}
	var last runtime.Decisions
	for {
		ds, h, err := m.hold(ctx, reqs, w)
		if err != nil && last.Each != nil && errors.Is(err, context.DeadlineExceeded) {
			// ctx's deadline bounds the wait as max does.
			return last, nil, nil
		}
		if err != nil || ds.Allowed {
			return ds, h, err
		}
		last = ds
		if m.waitHook != nil {
			m.waitHook()
		}
		left := time.Until(bound)
		d, rated := rateRetry(reqs, ds)
		var wake <-chan struct{}
		switch {
		case rated && (d <= 0 || d > left):
			return ds, nil, nil
		case !rated && (left <= 0 || w == nil):
			return ds, nil, nil
		case !rated:
			d, wake = min(left, m.permitWait(w)), w.wake
		}
		if err := waitFor(ctx, d, wake); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				// ctx's deadline bounds the wait as max does.
				return ds, nil, nil
			}
			return runtime.Decisions{}, nil, err
		}
		if !rated && !time.Now().Before(bound) {
			return ds, nil, nil
		}
	}
}

// maxPermitPoll is the longest a waiter for a permit waits before asking
// again without being woken: it bounds the wait for a lease's end when the
// limiter's clock (WithClock) does not run as the process's does.
const maxPermitPoll = time.Second

// permitWait returns how long w waits for the first lease it saw to end,
// at least a millisecond and at most maxPermitPoll.
func (m *Limiter) permitWait(w *waiter) time.Duration {
	if w.expiry == 0 {
		return maxPermitPoll
	}
	return min(max(micros(w.expiry-m.now()), time.Millisecond), maxPermitPoll)
}

// rateRetry returns the longest RetryAfter of the enforced limits other
// than Concurrency ones that denied ds; rated is false when none did.
func rateRetry(reqs []runtime.Request, ds runtime.Decisions) (retry time.Duration, rated bool) {
	for i, d := range ds.Each {
		l := reqs[i].Limit
		if !d.Allowed && l.Mode == runtime.ModeEnforce && l.Algorithm != runtime.Concurrency {
			retry, rated = max(retry, d.RetryAfter), true
		}
	}
	return retry, rated
}

// waitFor waits for d, for a signal on wake, or until ctx is done, when it
// returns ctx's error.
func waitFor(ctx context.Context, d time.Duration, wake <-chan struct{}) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	case <-wake:
	}
	return nil
}
