package runtime

import "time"

// Decision is a Limiter's answer for one call.
type Decision struct {
	// Allowed reports whether the call was admitted and recorded.
	Allowed bool
	// Remaining is how many more units the key can admit in the current
	// window after this decision. A denied call of cost 1 sees 0.
	Remaining int
	// RetryAfter is 0 when Allowed. When denied it is how long until the key
	// has room for this call again: a caller that waits exactly RetryAfter and
	// retries is admitted unless other calls took the room first. It is never
	// rounded down.
	RetryAfter time.Duration
	// ResetAfter is how long until the key holds no admissions at all, that
	// is, until the full Max is available again.
	ResetAfter time.Duration
}
