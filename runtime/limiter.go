package runtime

import (
	"context"
	"fmt"
)

// Limiter decides whether a call identified by key may proceed under a
// Limit. Implementations must be safe for concurrent use.
//
// Allow records the call when it admits it. A denial is a Decision with
// Allowed false and a nil error; a non-nil error means that no decision could
// be made (for example, Redis was unreachable under FailClosed), and callers
// must not treat it as a denial.
//
// Keys are opaque strings. Build composite keys with Key so that different
// tuples never share a count. A Limiter never puts the raw key into error
// messages, because keys often hold personal data such as e-mail addresses.
type Limiter interface {
	Allow(ctx context.Context, l Limit, key string) (Decision, error)
}

// NLimiter is implemented by limiters that can admit a call costing n units
// at once, all or nothing. Both backends of this package implement it; use
// AllowN to call it through a plain Limiter.
type NLimiter interface {
	Limiter
	// AllowN is Allow for a call that uses n units of the limit. n must be
	// at least 1; a cost above Limit.Max can never be admitted and is
	// reported as an error wrapping ErrCostExceedsMax.
	AllowN(ctx context.Context, l Limit, key string, n int) (Decision, error)
}

// AllowN asks lim to admit a call costing n units. It uses lim's AllowN when
// lim implements NLimiter; otherwise n must be 1.
func AllowN(ctx context.Context, lim Limiter, l Limit, key string, n int) (Decision, error) {
	if nl, ok := lim.(NLimiter); ok {
		return nl.AllowN(ctx, l, key, n)
	}
	if n != 1 {
		return Decision{}, fmt.Errorf("ratelimit: limit %q: cost %d needs a Limiter that implements NLimiter; %T does not", l.Name, n, lim)
	}
	return lim.Allow(ctx, l, key)
}
