package runtime

import (
	"errors"
	"fmt"
	"time"
)

// ErrLimited is the sentinel that every *LimitError matches:
// errors.Is(err, ErrLimited) reports whether err is a rate-limit denial.
var ErrLimited = errors.New("ratelimit: rate limit exceeded")

// ErrInvalidCost is wrapped by the error a Limiter returns for a request
// whose cost is below 1 or above its limit's capacity (see Limit.Capacity):
// such a call could never be admitted, so it is a caller bug, not a denial.
var ErrInvalidCost = errors.New("ratelimit: invalid cost")

// ErrUnavailable is wrapped by the error a Limiter returns when its backend
// could not decide (Redis unreachable under a fail-closed policy, say). It
// is never ErrLimited: the call was neither admitted nor denied, and an
// HTTP layer should answer 503, not 429.
var ErrUnavailable = errors.New("ratelimit: limiter backend unavailable")

// LimitError is the error Enforce and generated wrappers return when a
// Limiter denies a call. Its message names the limit and the wait but never
// the key, which may hold personal data.
type LimitError struct {
	// Limit is the limit that denied the call; of several, the one with the
	// longest wait.
	Limit Limit
	// Decision is that limit's decision; its RetryAfter is how long the
	// caller should wait before retrying.
	Decision Decision
}

// Error returns a message such as
// `ratelimit: "Notifier.SendCode" allows 3 calls per 1m0s; retry in 41.2s`.
func (e *LimitError) Error() string {
	if e.Limit.algorithm() == Concurrency {
		return fmt.Sprintf("ratelimit: %q allows %d calls in flight; retry once one ends", e.Limit.Name, e.Limit.Max)
	}
	var per any = e.Limit.Window
	if !e.Limit.Calendar.IsZero() {
		// "per month in Europe/Berlin"
		per = e.Limit.Calendar
	}
	return fmt.Sprintf("ratelimit: %q allows %d calls per %v; retry in %v",
		e.Limit.Name, e.Limit.Max, per, roundUp(e.Decision.RetryAfter, time.Millisecond))
}

// Is reports whether target is ErrLimited, so errors.Is(err, ErrLimited)
// holds for every *LimitError.
func (e *LimitError) Is(target error) bool { return target == ErrLimited }

// roundUp rounds d up to a multiple of unit, so that a wait shown to a person
// is never shorter than the real one.
func roundUp(d, unit time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	if r := d % unit; r != 0 {
		return d + unit - r
	}
	return d
}

func costError(l Limit, n int64, why string) error {
	return fmt.Errorf("ratelimit: limit %q cannot admit a cost of %d: %s: %w", l.Name, n, why, ErrInvalidCost)
}
