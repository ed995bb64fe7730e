package runtime

import (
	"context"
	"fmt"
)

// Request is one limit of a call that must pass several limits at once: the
// limit, the key it counts under, and the call's cost in units (0 means 1).
type Request struct {
	Limit Limit
	Key   string
	Cost  int
}

func (r Request) cost() int {
	if r.Cost == 0 {
		return 1
	}
	return r.Cost
}

// Decisions is the answer for a call with several limits.
type Decisions struct {
	// Allowed reports whether every limit admitted the call. Either all of
	// them recorded it or none did.
	Allowed bool
	// Each holds one Decision per Request, in order. When the call is
	// denied, no Decision is Allowed, and a limit that had room reports the
	// room it still has.
	Each []Decision
	// Denied is the index of the denying limit with the longest RetryAfter,
	// or -1 when Allowed.
	Denied int
}

// MultiLimiter is implemented by limiters that decide several limits for one
// call atomically: the call is admitted only if every limit has room, and
// when one denies, none of them consumes quota. Both backends of this
// package implement it; use AllowAll to call it through a plain Limiter.
type MultiLimiter interface {
	Limiter
	AllowAll(ctx context.Context, reqs ...Request) (Decisions, error)
}

// AllowAll asks lim to admit a call that must pass every request's limit.
// It uses lim's AllowAll when lim implements MultiLimiter; otherwise reqs
// must hold exactly one request.
func AllowAll(ctx context.Context, lim Limiter, reqs ...Request) (Decisions, error) {
	if ml, ok := lim.(MultiLimiter); ok {
		return ml.AllowAll(ctx, reqs...)
	}
	if len(reqs) != 1 {
		return Decisions{}, fmt.Errorf("ratelimit: %d limits in one call need a Limiter that implements MultiLimiter; %T does not", len(reqs), lim)
	}
	d, err := AllowN(ctx, lim, reqs[0].Limit, reqs[0].Key, reqs[0].cost())
	if err != nil {
		return Decisions{}, err
	}
	return single(d), nil
}

// LimitError returns the *LimitError for a denied call, naming the limit
// with the longest wait, or nil when ds is Allowed. For a denial it never
// returns nil, even when a Limiter filled ds inconsistently: it then names
// the first limit that reports no room, or the first limit.
func (ds Decisions) LimitError(reqs []Request) *LimitError {
	if ds.Allowed {
		return nil
	}
	i := ds.Denied
	if i < 0 || i >= len(reqs) || i >= len(ds.Each) {
		i = 0
		for j := range min(len(reqs), len(ds.Each)) {
			if ds.Each[j].RetryAfter > 0 {
				i = j
				break
			}
		}
	}
	var l Limit
	var d Decision
	if i < len(reqs) {
		l = reqs[i].Limit
	}
	if i < len(ds.Each) {
		d = ds.Each[i]
	}
	return NewLimitError(l, d)
}

// CheckCost reports whether a call of cost n can ever be admitted by l: n
// must be at least 1 and at most l's capacity (Max, or Burst for
// TokenBucket and GCRA). The error wraps ErrCostExceedsMax. Generated
// wrappers call it for computed costs, because a Request's zero Cost means 1.
func CheckCost(l Limit, n int) error {
	if n >= 1 && n <= l.capacity() {
		// The backend validates the limit itself; keep the common case cheap.
		return nil
	}
	return checkRequest(l, n)
}

func single(d Decision) Decisions {
	ds := Decisions{Allowed: d.Allowed, Each: []Decision{d}, Denied: -1}
	if !d.Allowed {
		ds.Denied = 0
	}
	return ds
}

// checkRequests validates a multi-limit call; every backend does this before
// deciding, so a bad request is an error, never a panic or a partial write.
func checkRequests(reqs []Request) error {
	if len(reqs) == 0 {
		return fmt.Errorf("ratelimit: AllowAll needs at least one Request")
	}
	seen := make(map[[2]string]bool, len(reqs))
	for _, r := range reqs {
		if err := checkRequest(r.Limit, r.cost()); err != nil {
			return err
		}
		k := [2]string{r.Limit.Name, r.Key}
		if seen[k] {
			return fmt.Errorf("ratelimit: limit %q appears twice for one key in one call; give each limit its own Name", r.Limit.Name)
		}
		seen[k] = true
	}
	return nil
}

// combine builds Decisions from per-limit verdicts, all committed or none.
func combine(vs []verdict, allowed bool) Decisions {
	ds := Decisions{Allowed: allowed, Each: make([]Decision, len(vs)), Denied: -1}
	for i, v := range vs {
		ds.Each[i] = v.decision(allowed)
		if !allowed && !v.ok && (ds.Denied < 0 || v.retry > vs[ds.Denied].retry) {
			ds.Denied = i
		}
	}
	return ds
}
