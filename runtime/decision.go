package runtime

import "time"

// Decision is a Limiter's answer for one limit.
type Decision struct {
	// Allowed reports whether the limit admitted the call and recorded it.
	// In a Decisions, each limit's Allowed reports whether that limit had
	// room; the call was recorded only if Decisions.Allowed.
	Allowed bool
	// Remaining is how many more units the key could be admitted at once
	// after this decision. A denied call of cost 1 sees 0.
	Remaining int
	// RetryAfter is 0 when the limit had room. Otherwise it is how long
	// until the key has room for this call again: a caller that waits
	// exactly RetryAfter and retries is admitted unless other calls took the
	// room first. It is never rounded down.
	RetryAfter time.Duration
	// ResetAfter is how long until the key holds no admissions at all, that
	// is, until its full capacity (see Limit.Capacity) is available again.
	ResetAfter time.Duration
}

// Decisions is a Limiter's answer for one call, which may have to pass
// several limits.
type Decisions struct {
	// Allowed reports whether the call was admitted. Either every limit
	// recorded it or none did.
	Allowed bool
	// Each holds one Decision per Request, in order. When the call is
	// denied, Each[i].Allowed still reports whether limit i had room, with
	// the room it has; the limits without room say when they will have it.
	Each []Decision
	// Source says where the decision was made; the zero value is
	// SourceStore.
	Source Source
	// Cause is why the store did not decide when Source is SourceFallback
	// or SourceFailOpen: its error, a timeout, or the recent failures for
	// which it was not asked. When the store or its deny cache decided, it
	// is nil, or why the decision may be less exact than usual, such as
	// memlimit.ErrFull from an in-memory limiter that forgot another key's
	// admissions to make room for this call's.
	Cause error
}

// Decision returns the call's decision as one: Allowed as ds.Allowed,
// Remaining the least of Each's, and RetryAfter and ResetAfter the longest,
// so that RetryAfter is when every limit may have room again.
func (ds Decisions) Decision() Decision {
	d := Decision{Allowed: ds.Allowed}
	for i, e := range ds.Each {
		if i == 0 || e.Remaining < d.Remaining {
			d.Remaining = e.Remaining
		}
		d.RetryAfter = max(d.RetryAfter, e.RetryAfter)
		d.ResetAfter = max(d.ResetAfter, e.ResetAfter)
	}
	return d
}
