package runtime

import (
	"context"
	"fmt"
	"time"
)

// Observer is told of every decision made through a Limiter returned by
// Operate, once per limit of the call, so that it can count decisions and
// time them (see runtime's log observer, NewLogObserver, and the
// Prometheus and OpenTelemetry adapters in their own modules).
//
// An Observer never sees a key: keys often hold personal data and are
// unbounded, so they make neither safe logs nor usable metric labels. A
// bounded label chosen by the program (WithLabel) takes their place.
// Observe runs synchronously on the deciding goroutine; it must be fast and
// safe for concurrent use.
type Observer interface {
	Observe(ctx context.Context, ev Event)
}

// Event is one limit's part in one decision.
type Event struct {
	// Limit is the limit as decided: its Max, Window, Burst and Mode are
	// those in force for the call, overrides applied.
	Limit Limit
	// Label is the label WithLabel's function chose for the request, or "".
	Label string
	// Result is what the limit answered.
	Result Result
	// Source is where the decision was made; with ResultError it is
	// meaningless.
	Source Source
	// Cost is the request's cost in units (at least 1).
	Cost int64
	// Remaining is the limit's Decision.Remaining: how many units the key
	// can still admit in the current window. 0 with ResultError.
	Remaining int
	// RetryAfter is the limit's Decision.RetryAfter: 0 when it had room,
	// otherwise how long until it has room for this call again.
	RetryAfter time.Duration
	// Latency is how long the whole call took to decide, all limits
	// together.
	Latency time.Duration
	// Err is why no decision was made, with ResultError. With
	// SourceFallback or SourceFailOpen it is why the store did not decide,
	// though the call was decided (Decisions.Cause); with SourceStore it is
	// Decisions.Cause too, such as memlimit.ErrFull when a full in-memory
	// limiter forgot other keys' admissions for the call; nil otherwise.
	Err error
}

// NearLimit reports whether the limit admitted the call (ResultAllowed) and
// has at most a fifth of its capacity left, as envoy's near_limit counts:
// the admitted hits past 80%. Denials, shadow denials and errors are not
// near the limit; they are over it, or undecided.
func (ev Event) NearLimit() bool {
	return ev.Result == ResultAllowed && ev.Remaining*5 <= ev.Limit.Capacity()
}

// Result is one limit's answer in a decision.
type Result uint8

const (
	// ResultAllowed means the limit had room for the call. In a call with
	// several limits, the call was admitted only if every limit answered
	// ResultAllowed or ResultShadowLimited.
	ResultAllowed Result = iota
	// ResultLimited means the limit had no room and the call was denied.
	ResultLimited
	// ResultShadowLimited means the limit, in ModeShadow, had no room but
	// the call was not denied for it.
	ResultShadowLimited
	// ResultError means no decision was made (see Event.Err).
	ResultError
	// ResultUnsettled means that settling an admitted call (see Hold)
	// failed, so its reservation stays counted; Event.Err says why, and
	// Event.Cost is the reservation.
	ResultUnsettled
	// ResultReleased means that a call holding a permit of a Concurrency
	// limit was settled, so it holds the permit no more; Source is where
	// the call was decided. Err is nil when the permit was given back, wraps
	// ErrPermitLost when it had been lost before, and otherwise says why the
	// store did not answer: the permit then counts there until its lease
	// ends. Allowed and shadow-limited events of a Concurrency limit less
	// its released ones are the permits this instance's calls hold.
	ResultReleased
)

// String returns the result's name as metrics label it: "allowed",
// "limited", "shadow-limited", "error", "unsettled" or "released".
func (r Result) String() string {
	switch r {
	case ResultAllowed:
		return "allowed"
	case ResultLimited:
		return "limited"
	case ResultShadowLimited:
		return "shadow-limited"
	case ResultError:
		return "error"
	case ResultUnsettled:
		return "unsettled"
	case ResultReleased:
		return "released"
	}
	return fmt.Sprintf("Result(%d)", uint8(r))
}
