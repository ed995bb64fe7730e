package runtime

import (
	"context"
	"errors"
	"fmt"
)

// A Peeker is a Limiter that can say how a call would be decided without
// recording it. memlimit.Limiter, redislimit.Limiter and the Limiter of
// Operate are Peekers; reach one from any Limiter through Peek.
type Peeker interface {
	Limiter
	// Peek returns the Decisions that Decide would return for reqs now,
	// and records nothing: Allowed says whether the call would be
	// admitted, and each Decision gives its limit's Remaining, RetryAfter
	// and ResetAfter. Other calls may change them at once.
	Peek(ctx context.Context, reqs ...Request) (Decisions, error)
}

// A Resetter is a Limiter whose keys can be reset. memlimit.Limiter,
// redislimit.Limiter and the Limiter of Operate are Resetters; reach one
// from any Limiter through Reset.
type Resetter interface {
	Limiter
	// Reset forgets every admission recorded for each request's key under
	// its limit, so that the key's full capacity is available at once.
	// Request.Cost is ignored.
	Reset(ctx context.Context, reqs ...Request) error
}

// Peek asks lim how it would decide reqs now, recording nothing (see
// Peeker). With an Operate limiter, the overrides in force apply. It
// returns an error wrapping errors.ErrUnsupported when lim is not a Peeker.
func Peek(ctx context.Context, lim Limiter, reqs ...Request) (Decisions, error) {
	p, ok := lim.(Peeker)
	if !ok {
		return Decisions{}, unsupported(lim, "Peeker")
	}
	return p.Peek(ctx, reqs...)
}

// Reset asks lim to forget the admissions of each request's key under its
// limit (see Resetter). With an Operate limiter, the overrides in force
// apply. It returns an error wrapping errors.ErrUnsupported when lim is not a
// Resetter.
func Reset(ctx context.Context, lim Limiter, reqs ...Request) error {
	r, ok := lim.(Resetter)
	if !ok {
		return unsupported(lim, "Resetter")
	}
	return r.Reset(ctx, reqs...)
}

// unsupported is the error of asking lim for what it does not implement.
func unsupported(lim Limiter, what string) error {
	return fmt.Errorf("ratelimit: %T is not a runtime.%s: %w", lim, what, errors.ErrUnsupported)
}
