package redislimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// The failure policy: what a decision does when Redis does not make it,
// FailLocal's share of each limit among the limiters sharing the store,
// and the errors and events that report such a degraded decision.

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
	// ErrPermission too, with or without ErrCircuitOpen; while the replicas
	// of a durable limiter (WithDurable) do not acknowledge, it matches
	// ErrNotReplicated so.
	Err error
	// Decision is what the policy decided; zero under FailClosed.
	Decision runtime.Decision
}

// ErrCircuitOpen is the DegradedEvent.Err of decisions taken without asking
// Redis because it failed less than the retry interval ago, or whose wait
// for Redis ended when it failed.
var ErrCircuitOpen = errors.New("ratelimit: redis failed recently; not asked until the retry interval passes")

// circuitOpenError is ErrCircuitOpen for a breaker that a refusal (see
// ErrPermission) or unacknowledged replicas (see ErrNotReplicated) opened:
// it unwraps to that cause, so that every decision it degrades names what
// an operator must fix.
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

// degrade makes the decision Redis could not make, per the policy: the one
// way into the policy, for a call of reqs resolved as asks, whose limits
// in runtime.ModeOff have their verdicts in vs (see resolveLimits). kept is
// decide's.
func (r *Limiter) degrade(ctx context.Context, reqs []runtime.Request, asks []ask, vs []verdict, cause error, kept *kept) (runtime.Decisions, error) {
	ev := DegradedEvent{Limit: reqs[0].Limit, Policy: r.cfg.policy, Err: cause}
	var (
		ds  runtime.Decisions
		err error
	)
	switch r.cfg.policy {
	case FailOpen:
		ds = runtime.Decisions{Allowed: true, Each: make([]runtime.Decision, len(reqs)), Source: runtime.SourceFailOpen, Cause: cause}
		for i, q := range reqs {
			if q.Limit.Mode == runtime.ModeOff {
				ds.Each[i] = vs[i].decision()
				continue
			}
			ds.Each[i] = runtime.Decision{Allowed: true, Remaining: int(int64(q.Limit.Capacity()) - asks[i].cost)}
		}
	case FailClosed:
		err = &unavailableError{limit: reqs[0].Limit, err: cause}
	default:
		ds, err = r.decideShare(ctx, reqs, asks, vs, kept)
		if ds.Cause != nil {
			// The fallback's own cause, such as memlimit.ErrFull,
			// is kept beside Redis's.
			cause = errors.Join(cause, ds.Cause)
		}
		ds.Source, ds.Cause = runtime.SourceFallback, cause
		if err != nil {
			err = &unavailableError{limit: reqs[0].Limit, err: fmt.Errorf("%v; the local fallback failed too: %w", cause, err)}
		}
	}
	if len(ds.Each) > 0 {
		ev.Decision = ds.Each[0]
	}
	if r.cfg.onDegraded != nil {
		r.cfg.onDegraded(ev)
	}
	return ds, err
}

// decideShare asks the fallback for the call with each limit's share (see
// WithInstances), modes included. A share too small for its request's
// cost cannot admit it, so it is decided without asking: an enforced one
// denies the call, a shadow one has no room and is not sent. Limits in
// runtime.ModeOff are not sent either. A call left with nothing to send is
// admitted. While the number of limiters is unknown no share is known
// either: every limit has no room, and the call is denied unless none is
// enforced, with ErrInstancesUnknown in the Cause. asks, vs and kept are
// degrade's.
func (r *Limiter) decideShare(ctx context.Context, reqs []runtime.Request, asks []ask, vs []verdict, kept *kept) (runtime.Decisions, error) {
	// A copy, so that reqs, which the fallback could keep, stays on the
	// caller's stack on the path that Redis decides.
	shared := slices.Clone(reqs)
	n, known := r.peers.count()
	ds := runtime.Decisions{Allowed: true, Each: make([]runtime.Decision, len(shared))}
	if !known {
		r.noteUnknownShare(reqs[0].Limit)
		ds.Cause = ErrInstancesUnknown
	}
	sent := make([]int, 0, len(shared))
	for i := range shared {
		q := &shared[i]
		q.Limit = share(q.Limit, n)
		switch {
		case q.Limit.Mode == runtime.ModeOff:
			ds.Each[i] = vs[i].decision()
		case !known:
			// Redis may answer again before the window ends, so the wait
			// is until it may be asked again.
			ds.Each[i] = runtime.Decision{RetryAfter: r.cfg.retryInterval, ResetAfter: r.windowLeft(q, &asks[i])}
			ds.Allowed = ds.Allowed && q.Limit.Mode != runtime.ModeEnforce
		case asks[i].cost > int64(q.Limit.Capacity()):
			w := r.windowLeft(q, &asks[i])
			ds.Each[i] = runtime.Decision{RetryAfter: w, ResetAfter: w}
			ds.Allowed = ds.Allowed && q.Limit.Mode != runtime.ModeEnforce
		default:
			sent = append(sent, i)
		}
	}
	if len(sent) == len(shared) {
		return r.askFallback(ctx, shared, nil, kept)
	}
	if !ds.Allowed {
		// Denied without asking: the other limits report their room
		// untouched.
		for _, i := range sent {
			ds.Each[i] = runtime.Decision{Allowed: true, Remaining: shared[i].Limit.Capacity()}
		}
		return ds, nil
	}
	if len(sent) == 0 {
		return ds, nil
	}
	ask := make([]runtime.Request, len(sent))
	for j, i := range sent {
		ask[j] = shared[i]
	}
	asked, err := r.askFallback(ctx, ask, sent, kept)
	if err != nil {
		return asked, err
	}
	if len(asked.Each) != len(ask) {
		return runtime.Decisions{}, errFallbackDecisions
	}
	for j, i := range sent {
		ds.Each[i] = asked.Each[j]
	}
	ds.Allowed, ds.Cause = asked.Allowed, asked.Cause
	return ds, nil
}

// errFallbackDecisions is a fallback Limiter's reply whose Decisions do not
// hold one Decision per request.
var errFallbackDecisions = errors.New("ratelimit: the fallback limiter returned a Decision count unlike its requests")

// ErrInstancesUnknown is in the Decisions.Cause of FailLocal's denials
// made because the limiter does not know how many limiters share the
// store, so that it cannot tell each limit's share: Redis failed before it
// answered a beat, or refuses the beat, and WithInstances was not given.
var ErrInstancesUnknown = errors.New("ratelimit: FailLocal denies: the number of instances sharing redis is unknown, so no share of the limit is known; give WithInstances(n) with n at least the fleet's size, or let redis run the instance beat")

// unknownShareLogEvery spaces the logs of FailLocal denying for want of an
// instance count: an operator must see it, but not once per call.
const unknownShareLogEvery = time.Minute

// noteUnknownShare logs, at most once per unknownShareLogEvery, that
// FailLocal denies l's calls because the instance count is unknown.
func (r *Limiter) noteUnknownShare(l runtime.Limit) {
	now := mono()
	last := r.peers.logged.Load()
	if last != 0 && now-last < int64(unknownShareLogEvery) || !r.peers.logged.CompareAndSwap(last, now) {
		return
	}
	r.logger().Error(ErrInstancesUnknown.Error(), slog.String("limit", l.Name))
}

// share returns l as FailLocal's fallback decides it among n limiters:
// Max, and Burst when set, divided by n, rounded down, and at least 1.
func share(l runtime.Limit, n int) runtime.Limit {
	if n <= 1 {
		return l
	}
	l.Max = max(1, l.Max/n)
	if l.Burst > 0 {
		l.Burst = max(1, l.Burst/n)
	}
	return l
}

// askFallback asks the fallback to decide reqs, the requests at sent of
// the call (nil: all of them); for a held call (kept not nil), through its
// Hold when it is a runtime.Holder, whose Hold kept then settles the call.
func (r *Limiter) askFallback(ctx context.Context, reqs []runtime.Request, sent []int, kept *kept) (runtime.Decisions, error) {
	if kept == nil {
		return r.fallback.Decide(ctx, reqs...)
	}
	h, ok := r.fallback.(runtime.Holder)
	if !ok {
		kept.fallbackErr = fmt.Errorf("ratelimit: the call was decided by the fallback %T, which is not a runtime.Holder: %w", r.fallback, errors.ErrUnsupported)
		return r.fallback.Decide(ctx, reqs...)
	}
	ds, fh, err := h.Hold(ctx, reqs...)
	kept.fallback, kept.fallbackAt = fh, sent
	return ds, err
}

// windowLeft returns the window of q, whose ask is a, as a denial without
// a decision reports it: its Window, or the time to a calendar window's
// end.
func (r *Limiter) windowLeft(q *runtime.Request, a *ask) time.Duration {
	if a.algo() == codeCalendar {
		return time.Duration(max(a.burst-r.calendarNow(), 0)) * time.Microsecond
	}
	return q.Limit.Window
}
