package runtime

import (
	"context"
	"time"
)

// Limiter decides whether calls may proceed. It is the one interface that
// generated wrappers and ratelimithttp call, so a type that wraps a Limiter
// (for metrics, logging or tests) needs to implement Decide only, and sees
// every call. Implementations must be safe for concurrent use.
type Limiter interface {
	// Decide decides a call that must pass every request's limit, in one
	// atomic step:
	//
	//   - the call is admitted if every limit in ModeEnforce has room for
	//     its request's cost; limits in ModeShadow or ModeOff never deny;
	//   - an admitted call is recorded by every enforced limit and by every
	//     shadow limit that had room; a denied call is recorded nowhere;
	//   - a limit in ModeOff is not consulted, and its Decision admits with
	//     Remaining equal to its capacity.
	//
	// Each Decision says whether its limit had room. A denial is a Decisions
	// with Allowed false and a nil error. A non-nil error means that no
	// decision was made: reqs were invalid (see Validate), ctx was done, or
	// the backend failed; callers must not treat it as a denial.
	//
	// A Limiter never puts a raw key into an error message, because keys
	// often hold personal data such as e-mail addresses.
	Decide(ctx context.Context, reqs ...Request) (Decisions, error)
}

// Enforce asks lim to admit a call under every request's limit. It returns
// nil when the call is admitted, a *LimitError naming the enforced limit
// with the longest wait when it is denied, and lim's error when lim could
// not decide. With no requests it admits the call without asking lim. A
// call is admitted under all of its limits or none; a request whose cost or
// limit is invalid gets lim's error (wrapping ErrInvalidCost for a cost),
// never a denial. The *LimitError names the limit as decided: with its
// override applied when lim is the Limiter that Operate returned.
// Generated wrappers call it before forwarding a call.
func Enforce(ctx context.Context, lim Limiter, reqs ...Request) error {
	if len(reqs) == 0 {
		return nil
	}
	reqs, ds, err := decide(ctx, lim, reqs)
	if err != nil {
		return err
	}
	if ds.Allowed {
		return nil
	}
	return denial(reqs, ds)
}

// decide asks lim and returns the requests as lim decided them, for the
// *LimitError that names one: an Operate limiter's overrides applied.
func decide(ctx context.Context, lim Limiter, reqs []Request) ([]Request, Decisions, error) {
	if op, ok := lim.(*operated); ok {
		return op.decide(ctx, reqs)
	}
	ds, err := lim.Decide(ctx, reqs...)
	return reqs, ds, err
}

// Wait is Enforce for a caller that would rather wait than be denied: on a
// denial it sleeps for the denial's RetryAfter and asks again, as long as
// the total wait stays within max and ends before ctx's deadline. It
// returns the last *LimitError when the next wait would not fit, and ctx's
// error if ctx is done while it sleeps. Other callers may take the room a
// wait was for, so Wait can ask several times; each time only the calls
// that were admitted are recorded.
func Wait(ctx context.Context, lim Limiter, max time.Duration, reqs ...Request) error {
	if len(reqs) == 0 {
		return nil
	}
	var waited time.Duration
	for {
		inForce, ds, err := decide(ctx, lim, reqs)
		if err != nil {
			return err
		}
		if ds.Allowed {
			return nil
		}
		denied := denial(inForce, ds)
		retry := denied.Decision.RetryAfter
		if !fits(ctx, retry, max-waited) {
			return denied
		}
		waited += retry
		if err := sleep(ctx, retry); err != nil {
			return err
		}
	}
}

// denial returns the *LimitError for a denied call: the enforced limit
// without room with the longest RetryAfter. It never returns nil, even for a
// Limiter that filled ds inconsistently: it then names the first limit.
func denial(reqs []Request, ds Decisions) *LimitError {
	i := -1
	if len(ds.Each) == len(reqs) {
		// A limit in shadow mode here may be enforced by an override of
		// an Operate limiter behind a wrapper, so it names the denial when
		// no enforced limit can.
		for _, enforcedOnly := range []bool{true, false} {
			for j, d := range ds.Each {
				if !d.Allowed && (!enforcedOnly || reqs[j].Limit.Mode == ModeEnforce) && (i < 0 || d.RetryAfter > ds.Each[i].RetryAfter) {
					i = j
				}
			}
			if i >= 0 {
				break
			}
		}
	}
	if i < 0 {
		d := ds.Decision()
		d.Allowed = false
		return &LimitError{Limit: reqs[0].Limit, Decision: d}
	}
	return &LimitError{Limit: reqs[i].Limit, Decision: ds.Each[i]}
}
