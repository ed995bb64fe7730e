package runtime

import (
	"context"
	"errors"
	"sync/atomic"
)

// Decide asks lim to decide a call, applying each limit's Mode, and returns
// Decisions with one Decision per request, in order:
//
//   - a limit in ModeOff is not asked; its Decision admits;
//   - a limit in ModeShadow is asked and records the call like any other,
//     but its having no room does not deny the call: the call is asked again
//     without it, so the enforced limits alone decide and record it. The
//     result then has Allowed true and that limit's Decision with Allowed
//     false.
//
// With every limit in ModeEnforce it is lim.Decide. Enforce, Wait and
// ratelimithttp decide through it. A call with a shadow limit is atomic
// for its enforced limits, never more than Max admitted under any of them;
// a shadow limit may miss an admission that raced with the retry.
func Decide(ctx context.Context, lim Limiter, reqs ...Request) (Decisions, error) {
	_, ds, err := decideInForce(ctx, lim, reqs)
	return ds, err
}

// decideInForce is Decide that also returns the requests as decided, with
// the overrides of an Operate limiter applied, for the errors that name
// them.
func decideInForce(ctx context.Context, lim Limiter, reqs []Request) ([]Request, Decisions, error) {
	if op, ok := lim.(*operated); ok {
		return op.decide(ctx, reqs)
	}
	ds, err := decideModes(ctx, lim, reqs)
	return reqs, ds, err
}

// decideModes is Decide for a Limiter that is not Operate's.
func decideModes(ctx context.Context, lim Limiter, reqs []Request) (Decisions, error) {
	if hasModes(reqs) {
		return decideShadowOff(ctx, lim, reqs)
	}
	return lim.Decide(ctx, reqs...)
}

// modesApplied is set by an Operate limiter that finds it in its context:
// it applied modes to the call itself.
type modesApplied struct{ atomic.Bool }

type modesAppliedKey struct{}

// errInconsistent is returned when a Limiter's Decisions do not hold one
// Decision per request, which a call in shadow mode needs.
var errInconsistent = errors.New("ratelimit: limiter returned a Decision count unlike its requests")

func decideShadowOff(ctx context.Context, lim Limiter, reqs []Request) (Decisions, error) {
	if err := Validate(reqs...); err != nil {
		return Decisions{}, err
	}
	// An Operate limiter inside lim, behind a wrapper that hides it, applies
	// modes after its overrides, which may enforce a limit declared in
	// shadow mode here; it says so through ctx, and its answer stands.
	applied := new(modesApplied)
	ctx = context.WithValue(ctx, modesAppliedKey{}, applied)
	each := make([]Decision, len(reqs))
	asked := make([]int, 0, len(reqs))
	for i, r := range reqs {
		if r.Limit.Mode == ModeOff {
			each[i] = Decision{Allowed: true, Remaining: r.Limit.Capacity()}
			continue
		}
		asked = append(asked, i)
	}
	ask := make([]Request, 0, len(asked))
	var (
		src   = SourceStore
		cause error
	)
	for len(asked) > 0 {
		ask = ask[:0]
		for _, i := range asked {
			ask = append(ask, reqs[i])
		}
		ds, err := lim.Decide(ctx, ask...)
		if err != nil {
			return Decisions{}, err
		}
		if len(ds.Each) != len(ask) {
			return Decisions{}, errInconsistent
		}
		src, cause = ds.Source, ds.Cause
		for j, i := range asked {
			each[i] = ds.Each[j]
		}
		if ds.Allowed || applied.Load() {
			return Decisions{Allowed: ds.Allowed, Each: each, Source: src, Cause: cause}, nil
		}
		// Denied: by an enforced limit, the call is denied; by shadow
		// limits only, it is asked again without them.
		kept := asked[:0]
		denied := false
		for j, i := range asked {
			switch {
			case ds.Each[j].Allowed:
				kept = append(kept, i)
			case reqs[i].Limit.Mode == ModeEnforce:
				denied = true
			}
		}
		if denied || len(kept) == len(ask) {
			return Decisions{Allowed: false, Each: each, Source: src, Cause: cause}, nil
		}
		asked = kept
	}
	return Decisions{Allowed: true, Each: each, Source: src, Cause: cause}, nil
}

// hasModes reports whether a request's limit is not in ModeEnforce.
func hasModes(reqs []Request) bool {
	for _, r := range reqs {
		if r.Limit.Mode != ModeEnforce {
			return true
		}
	}
	return false
}
