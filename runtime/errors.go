package runtime

import (
	"errors"
	"fmt"
	"time"
)

// ErrLimited is the sentinel that every *LimitError matches:
// errors.Is(err, ErrLimited) reports whether err is a rate-limit denial.
var ErrLimited = errors.New("ratelimit: rate limit exceeded")

// ErrCostExceedsMax is wrapped by the error returned when a call's cost is
// larger than its limit's Max: such a call could never be admitted, so it is
// reported as a caller bug rather than as a denial.
var ErrCostExceedsMax = errors.New("ratelimit: cost exceeds the limit's Max")

// ErrUnavailable is wrapped by the error a RedisLimiter returns under
// FailClosed when Redis could not make a decision in time. It is never
// ErrLimited: the call was neither admitted nor denied by the limit, and an
// HTTP layer should answer 503, not 429.
var ErrUnavailable = errors.New("ratelimit: limiter backend unavailable")

// LimitError is the error a generated wrapper returns when a Limiter denies
// a call. Its message names the limit and the wait but never the key, which
// may hold personal data.
type LimitError struct {
	// Limit is the policy that denied the call.
	Limit Limit
	// RetryAfter is how long the caller should wait before retrying; see
	// Decision.RetryAfter.
	RetryAfter time.Duration
	// Decision is the full decision that denied the call.
	Decision Decision
}

// NewLimitError returns the error for a denial of l with decision d.
func NewLimitError(l Limit, d Decision) *LimitError {
	return &LimitError{Limit: l, RetryAfter: d.RetryAfter, Decision: d}
}

// Error returns a message such as
// `ratelimit: "Notifier.SendCode" allows 3 calls per 1m0s; retry in 41.2s`.
func (e *LimitError) Error() string {
	return fmt.Sprintf("ratelimit: %q allows %d calls per %v; retry in %v",
		e.Limit.Name, e.Limit.Max, e.Limit.Window, roundUp(e.RetryAfter, time.Millisecond))
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

func costError(l Limit, n int, why string) error {
	return fmt.Errorf("ratelimit: limit %q cannot admit a cost of %d: %s: %w", l.Name, n, why, ErrCostExceedsMax)
}
