// Package runtime is the vocabulary of rate limiting that ratelimitgen's
// generated wrappers and its adapters speak: Limit and its Algorithm,
// Request, Decision, the Limiter interface with Enforce and Wait,
// LimitError, key building, and Operate, which wraps any Limiter with
// overrides and observers. It depends on the standard library only and
// decides nothing itself: the Limiters are runtime/memlimit, which keeps
// its counts in the process, and runtime/redislimit, which keeps them in
// Redis, shared by every replica of a service.
//
// # Semantics
//
// A Limit admits calls by key. Its Algorithm decides how (see the Algorithm
// constants for each one's exact rule); the default, SlidingLog, is exact: a
// Limit with Max m and Window w admits a call at time t only if fewer than m
// admitted calls lie in the half-open window (t-w, t]. Under every
// algorithm a denied call is not recorded, so a client that keeps retrying
// does not extend its own wait, and Decision.RetryAfter is never rounded
// down: a caller that waits exactly RetryAfter finds room, unless others
// took it first.
//
// A call may cost several units (Request.Cost) and may have to pass several
// limits at once: Limiter.Decide admits it only if every enforced limit has
// room, and when one denies, none of them consumes quota. Limits in
// ModeShadow and ModeOff never deny; see Limiter for what they record.
//
// Time has microsecond resolution. With SlidingLog, the admitted calls of
// one key are recorded at strictly increasing microseconds, every unit of a
// call at the call's: a second call in the same microsecond is recorded one
// microsecond later. This can delay an admission's expiry by a few
// microseconds, never advance it, so it never lets more than Max calls
// through.
//
// # Generated wrappers
//
// A method that ratelimitgen wraps makes one call to Enforce (Wait, for a
// directive with wait=; Admit, for one with refund= or settle=, whose Hold
// it settles once the method returns), with one Request per limit, and calls the wrapped
// method only if that returns nil; otherwise it returns the error as it
// is: a *LimitError for a denial, or the Limiter's error when it could not
// decide. A limit whose cost= evaluates to 0 is left out of that call (a
// Request's Cost of 0 is a cost of 1). A limit whose max= is an
// expression is copied with the call's Max; a Max below 1 is the
// Limiter's error, not a denial.
//
// # Writing a Limiter
//
// Limiter has one method, so a wrapper that embeds a Limiter and overrides
// Decide sees every call, whatever its shape:
//
//	type counted struct {
//		runtime.Limiter
//		calls atomic.Int64
//	}
//
//	func (c *counted) Decide(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
//		c.calls.Add(1)
//		return c.Limiter.Decide(ctx, reqs...)
//	}
//
// Settling calls after they return (Holder), reading a key without
// spending (Peeker) and resetting one (Resetter) are optional interfaces,
// which such a wrapper hides unless it forwards them, in one line each,
// through Reserve, Peek and Reset.
//
// # Operating
//
// Operate wraps a Limiter with what operators change and watch at run time,
// without a deploy: Overrides of a limit's Max, Window, Burst and Mode by
// its Name, read from an atomic snapshot that a watched JSON file or code
// replaces; and Observers, told of every decision (limit, result, source,
// cost, remaining units, latency; never the key). An override to ModeShadow
// lets a new limit, or a lower Max, be watched before it bites. NewLogObserver logs decisions with log/slog; the
// Prometheus and OpenTelemetry observers are the modules
// extra/ratelimitprom and extra/ratelimitotel, so that this package keeps
// depending on the standard library only.
package runtime
