package runtime

import (
	"context"
	"errors"
	"fmt"
)

// A Holder is a Limiter whose admissions can be settled once the call
// returns: a call reserves its cost when admitted, and is settled later at
// what it used, giving back units when it used less (a login that
// succeeded, a model call that took fewer tokens than it reserved) and
// charging more when it used more. memlimit.Limiter,
// redislimit.Limiter and the Limiter of Operate are Holders; reach one
// from any Limiter through Admit or Reserve.
type Holder interface {
	Limiter
	// Hold decides reqs as Decide does. When the call is admitted, it also
	// returns the Hold by which it is settled; otherwise the Hold is nil.
	Hold(ctx context.Context, reqs ...Request) (Decisions, Hold, error)
}

// A Hold is an admitted call's claim on its limits until it is settled.
type Hold interface {
	// Settle says how many units each limit counts for the call: used[i]
	// for the call's i-th request, as decided, in place of the cost it
	// reserved. A limit given used[i] below the reservation takes back the
	// difference, as far as its algorithm allows (see Algorithm); one given
	// more records the excess at once, even past Max, so that later calls
	// wait for it. used[i] above the limit's capacity counts as the
	// capacity. So a key exceeds Max only by the excesses of the calls it
	// admitted before they were settled, each at most a capacity less its
	// reservation, and admits nothing more until that has drained. A
	// limit that did not record the call (ModeOff, or a shadow limit
	// without room) is left as it is.
	//
	// Only the first Settle of a Hold has effect; later ones return
	// ErrSettled. A settlement that fails (the store is down) leaves the
	// reservation counted, which errs toward denial. Settling is exact
	// and applies once, even when the store's client resends it after a
	// lost reply. The Holders of this module settle even when ctx is done:
	// a call whose caller gave up still gives back its units and releases
	// its permits.
	Settle(ctx context.Context, used ...int64) error
}

// ErrSettled is returned by a Hold's Settle after its first.
var ErrSettled = errors.New("ratelimit: the call was settled already")

// Admit is Enforce for a call that is settled once it returns: it returns
// the call's Hold when the call is admitted, and Enforce's errors
// otherwise. The Hold's Settle gives back or charges units (see Hold). When
// lim is not a Holder, the call is decided by Decide and the Hold's Settle
// returns an error wrapping errors.ErrUnsupported, leaving the reservation
// counted. With no requests it admits the call, and settling
// does nothing. Generated wrappers of methods with refund= or settle= call
// it in place of Enforce.
func Admit(ctx context.Context, lim Limiter, reqs ...Request) (Hold, error) {
	if len(reqs) == 0 {
		return settledHold{}, nil
	}
	inForce, ds, h, err := reserve(ctx, lim, reqs)
	if err != nil {
		return nil, err
	}
	if !ds.Allowed {
		return nil, denial(inForce, ds)
	}
	if h == nil {
		h = settledHold{}
	}
	return h, nil
}

// Reserve decides reqs through lim as Decide does and, when the call is
// admitted, returns its Hold: through lim's Hold when lim is a Holder;
// otherwise through Decide, with a Hold whose Settle returns an error
// wrapping errors.ErrUnsupported. A Limiter that wraps another calls it to
// be a Holder whatever it wraps.
func Reserve(ctx context.Context, lim Limiter, reqs ...Request) (Decisions, Hold, error) {
	_, ds, h, err := reserve(ctx, lim, reqs)
	return ds, h, err
}

// reserve is Reserve, also returning the requests as decided: an Operate
// limiter's overrides applied.
func reserve(ctx context.Context, lim Limiter, reqs []Request) ([]Request, Decisions, Hold, error) {
	switch l := lim.(type) {
	case *operated:
		return l.hold(ctx, reqs)
	case Holder:
		ds, h, err := l.Hold(ctx, reqs...)
		return reqs, ds, h, err
	}
	ds, err := lim.Decide(ctx, reqs...)
	if err != nil || !ds.Allowed {
		return reqs, ds, nil, err
	}
	return reqs, ds, notHolder{lim}, nil
}

// settledHold is the Hold of a call that recorded nothing to settle.
type settledHold struct{}

func (settledHold) Settle(context.Context, ...int64) error { return nil }

// notHolder is the Hold of a call that a Limiter without holds admitted.
type notHolder struct{ lim Limiter }

func (n notHolder) Settle(context.Context, ...int64) error { return unsupported(n.lim, "Holder") }

// ValidateSettle reports whether used can settle a call decided on reqs:
// one value per request, none negative. The Holders of this module check
// it before settling anything; Holders written elsewhere may call it to
// behave alike.
func ValidateSettle(reqs []Request, used []int64) error {
	if len(used) != len(reqs) {
		return fmt.Errorf("ratelimit: settling a call of %d limits with %d used values; give one per limit", len(reqs), len(used))
	}
	for i, u := range used {
		if u < 0 {
			return fmt.Errorf("ratelimit: limit %q settled at %d units: %w", reqs[i].Limit.Name, u, ErrInvalidCost)
		}
	}
	return nil
}
