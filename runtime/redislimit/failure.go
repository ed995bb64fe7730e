package redislimit

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// FailurePolicy says what a decision does when Redis cannot
// make it: an error, a timeout, or a pause after recent failures.
type FailurePolicy int

const (
	// FailLocal decides with a local fallback Limiter (by default an
	// in-memory limiter with the same semantics), so every app instance
	// still enforces its share of each limit (see WithInstances). It is
	// the default.
	FailLocal FailurePolicy = iota
	// FailOpen admits the call. Availability wins over protection.
	FailOpen
	// FailClosed returns an error matching runtime.ErrUnavailable, which
	// unwraps to the cause; protection wins over availability. It is not a
	// denial: it is never runtime.ErrLimited.
	FailClosed
)

// String returns the policy's name, such as "FailLocal".
func (p FailurePolicy) String() string {
	switch p {
	case FailLocal:
		return "FailLocal"
	case FailOpen:
		return "FailOpen"
	case FailClosed:
		return "FailClosed"
	}
	return fmt.Sprintf("FailurePolicy(%d)", int(p))
}

// DegradedEvent describes one decision that Redis did not make. It also
// reports, once per finding and with a zero runtime.Decision, a Redis whose
// configuration lets it delete the limiter's counts: then Err matches
// ErrEvictionRisk and no decision was degraded.
type DegradedEvent struct {
	// Limit is the limit being decided.
	Limit runtime.Limit
	// Policy is the policy that decided instead.
	Policy FailurePolicy
	// Err is why Redis did not decide: its error, the timeout, or
	// ErrCircuitOpen when Redis was not asked because it failed recently.
	// While Redis refuses the limiter for its configuration, it matches
	// ErrPermission too, with or without ErrCircuitOpen.
	Err error
	// Decision is what the policy decided; zero under FailClosed.
	Decision runtime.Decision
}

// ErrCircuitOpen is the DegradedEvent.Err of decisions taken without asking
// Redis because it failed less than the retry interval ago, or whose wait
// for Redis ended when it failed.
var ErrCircuitOpen = errors.New("ratelimit: redis failed recently; not asked until the retry interval passes")

// circuitOpenError is ErrCircuitOpen for a breaker that a refusal opened
// (see ErrPermission): it unwraps to the refusal, so that every decision it
// degrades names what an operator must fix.
type circuitOpenError struct{ cause error }

func (e *circuitOpenError) Error() string { return ErrCircuitOpen.Error() + ": " + e.cause.Error() }

func (e *circuitOpenError) Unwrap() error { return e.cause }

func (e *circuitOpenError) Is(target error) bool { return target == ErrCircuitOpen }

// unavailableError is FailClosed's error: it matches runtime.ErrUnavailable
// and unwraps to the cause.
type unavailableError struct {
	limit runtime.Limit
	err   error
}

func (e *unavailableError) Error() string {
	return fmt.Sprintf("ratelimit: cannot decide %q: redis unavailable (%v); the call was neither admitted nor denied: retry later, or use FailLocal or FailOpen", e.limit.Name, e.err)
}

func (e *unavailableError) Unwrap() error { return e.err }

func (e *unavailableError) Is(target error) bool { return target == runtime.ErrUnavailable }

// breaker remembers a recent Redis failure so that, during an outage,
// callers get a degraded decision at once instead of each waiting for the
// timeout. After the retry interval exactly one caller probes Redis.
type breaker struct {
	interval time.Duration
	// openUntil is when (mono) Redis may be asked again; 0 when
	// Redis is healthy.
	openUntil atomic.Int64
	probing   atomic.Bool
	// tripped is closed when the breaker opens, so that the callers
	// already waiting for Redis stop waiting too; nil until someone waits.
	// onTrip, if set, is called then too, for the callers that do not
	// wait on tripped.
	tripped atomic.Pointer[chan struct{}]
	onTrip  func()
	// refused is the error of the decisions it degrades while a refusal
	// keeps it open; nil otherwise.
	refused atomic.Pointer[circuitOpenError]
}

// openErr returns the error of a decision that the open breaker degrades.
func (b *breaker) openErr() error {
	if e := b.refused.Load(); e != nil {
		return e
	}
	return ErrCircuitOpen
}

// allow reports whether this call may ask Redis, and whether it is the
// probe that must call done.
func (b *breaker) allow(now time.Time) (ask, probe bool) {
	until := b.openUntil.Load()
	if until == 0 {
		return true, false
	}
	if monoOf(now) < until || !b.probing.CompareAndSwap(false, true) {
		return false, false
	}
	return true, true
}

// opened returns a channel that is closed when the breaker next opens.
func (b *breaker) opened() <-chan struct{} {
	for {
		if ch := b.tripped.Load(); ch != nil {
			return *ch
		}
		ch := make(chan struct{})
		if b.tripped.CompareAndSwap(nil, &ch) {
			return ch
		}
	}
}

// record notes the outcome of a call that asked Redis, and reports whether
// it closed the breaker: Redis answered after a failure. cause is the
// failure's error.
func (b *breaker) record(now time.Time, failed, probe bool, cause error) (recovered bool) {
	if failed {
		if errors.Is(cause, ErrPermission) {
			b.refused.Store(&circuitOpenError{cause: cause})
		} else {
			b.refused.Store(nil)
		}
		b.openUntil.Store(monoOf(now) + int64(b.interval))
		if ch := b.tripped.Swap(nil); ch != nil {
			close(*ch)
		}
		if b.onTrip != nil {
			b.onTrip()
		}
	} else if b.openUntil.Load() != 0 {
		recovered = b.openUntil.Swap(0) != 0
		b.refused.Store(nil)
	}
	b.release(probe)
	return recovered
}

// release ends a call that asked Redis but learnt nothing about it, such as
// one its caller cancelled.
func (b *breaker) release(probe bool) {
	if probe {
		b.probing.Store(false)
	}
}
