package runtime

import (
	"context"
	"time"
)

// A WaitHolder is a Holder that can keep a call waiting for room rather
// than deny it, and that serves the calls waiting for permits of a
// Concurrency limit's key in order of arrival, across every process that
// shares its store. memlimit.Limiter, redislimit.Limiter and the Limiter of
// Operate are WaitHolders; reach one from any Limiter through AdmitWait.
type WaitHolder interface {
	Holder
	// HoldWait is Hold for a call that would rather wait than be denied,
	// for at most max and never past ctx's deadline. While a limit denies
	// the call it waits: for a rate limit's RetryAfter, and for a
	// Concurrency limit's permit, in its turn. A call arriving while others
	// wait for a key's permits waits behind them, or is denied when it does
	// not wait: a freed permit goes to the first in line. A call that stops
	// waiting holds nothing: HoldWait then returns the last denial, or
	// ctx's error when ctx is done, and a nil Hold. A rate limit whose
	// RetryAfter would not fit ends the wait at once.
	HoldWait(ctx context.Context, max time.Duration, reqs ...Request) (Decisions, Hold, error)
}

// AdmitWait is Admit for a call that would rather wait than be denied, for
// at most max (see WaitHolder): it returns the call's Hold once every
// limit admits it, the last *LimitError when the wait would not fit, and
// ctx's error when ctx is done. When lim is not a WaitHolder, it waits as
// Wait does, for each denial's RetryAfter, and a call that a Concurrency
// limit denies is denied at once. With max <= 0 it is Admit. Generated
// wrappers of settled methods with wait= call it in place of Admit.
func AdmitWait(ctx context.Context, lim Limiter, max time.Duration, reqs ...Request) (Hold, error) {
	if len(reqs) == 0 {
		return settledHold{}, nil
	}
	inForce, ds, h, err := reserveWait(ctx, lim, max, reqs)
	if err != nil {
		return nil, err
	}
	if !ds.Allowed {
		return nil, denial(inForce, ds)
	}
	if h == nil {
		h = settledHold{}
	}
	return h, nil
}

// reserveWait is reserve for a call that waits for at most max.
func reserveWait(ctx context.Context, lim Limiter, max time.Duration, reqs []Request) ([]Request, Decisions, Hold, error) {
	if max <= 0 {
		return reserve(ctx, lim, reqs)
	}
	switch l := lim.(type) {
	case *operated:
		return l.holdWait(ctx, max, reqs)
	case WaitHolder:
		ds, h, err := l.HoldWait(ctx, max, reqs...)
		return reqs, ds, h, err
	}
	var waited time.Duration
	for {
		inForce, ds, h, err := reserve(ctx, lim, reqs)
		if err != nil || ds.Allowed {
			return inForce, ds, h, err
		}
		retry := denial(inForce, ds).Decision.RetryAfter
		if !fits(ctx, retry, max-waited) {
			return inForce, ds, nil, nil
		}
		waited += retry
		if err := sleep(ctx, retry); err != nil {
			return inForce, Decisions{}, nil, err
		}
	}
}

// fits reports whether a wait for retry fits in left and before ctx's
// deadline. A denial without a RetryAfter (a Concurrency limit's) fits
// nothing.
func fits(ctx context.Context, retry, left time.Duration) bool {
	if retry <= 0 || retry > left {
		return false
	}
	dl, ok := ctx.Deadline()
	return !ok || time.Until(dl) >= retry
}

// sleep waits for d, or returns ctx's error if ctx is done first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
