// Package ratelimitotel records the decisions of ratelimitgen limiters as
// OpenTelemetry metrics (Observer) and on traces (SpanObserver). It is a
// module of its own, so that the core,
// github.com/ratelimitgen/ratelimitgen/runtime, depends on the standard
// library only.
//
// New returns an Observer; give it to runtime.Operate:
//
//	obs, err := ratelimitotel.New(ratelimitotel.WithMeterProvider(mp))
//	if err != nil { ... }
//	lim := runtime.Operate(redisLimiter, runtime.WithObserver(obs))
//
// Operate tells the Observer of every decision once per limit of the call
// (a limit in runtime.ModeOff is not observed). Keys never reach it.
//
// SpanObserver puts the same decisions on the span of the call's context,
// so that a denied or degraded request shows why on its trace:
//
//	lim := runtime.Operate(redisLimiter, runtime.WithObserver(obs), runtime.WithObserver(ratelimitotel.SpanObserver{}))
//
// # Instruments
//
// All three are created under the meter named ScopeName and carry the
// same attributes.
//
//   - ratelimitgen.decisions: Int64Counter, unit {decision}. One for each
//     limit of each call, whatever its result.
//   - ratelimitgen.decision.duration: Float64Histogram, unit s. The
//     event's Latency: how long the whole call took to decide, all of its
//     limits together, so a call with two limits records its latency once
//     in each limit's series. Bucket boundaries advised: 100ns, 250ns,
//     500ns, 1µs, ... 250ms, 500ms, 1s (1, 2.5 and 5 times each power of
//     ten), from in-process decisions to Redis timeouts; change them with
//     WithDurationBoundaries or an SDK view.
//   - ratelimitgen.near_limit_decisions: Int64Counter, unit {decision}.
//     The decisions for which runtime.Event.NearLimit holds: admitted
//     hits that left at most a fifth of the limit's capacity; never a
//     denial (limited or shadow-limited) or an error.
//
// # Attributes
//
//   - ratelimitgen.limit.name (always): runtime.Limit.Name, such as
//     "Notifier.SendCode".
//   - ratelimitgen.result (always): "allowed", "limited", "shadow-limited"
//     or "error" (runtime.Result.String).
//   - ratelimitgen.source (unless the result is "error"): "store",
//     "deny-cache", "fallback", "fail-open" or "lease" (runtime.Source.String).
//   - error.type (only when the result is "error"): "timeout" (the error
//     is context.DeadlineExceeded), "canceled" (context.Canceled),
//     "invalid_cost" (runtime.ErrInvalidCost), "unavailable"
//     (runtime.ErrUnavailable), or "_OTHER", tested in that order. Error
//     messages are never recorded: they are unbounded.
//   - the key given to WithLabelAttribute (only with that option, and only
//     when the event's Label is not empty): runtime.Event.Label, the value
//     of the function given to runtime.WithLabel.
//
// # Naming
//
// OpenTelemetry has no semantic convention for rate limiting. The names
// follow its naming guidelines for system-specific metrics (lowercase,
// dot-namespaced under the system's own name, snake_case words, counters
// of countable things pluralized with a {curly} unit, durations in
// seconds) and the shape of ASP.NET Core's aspnetcore.rate_limiting.*
// metrics, the nearest precedent: a counter of requests with the policy
// name and the result as attributes, and duration histograms in seconds.
//
// # Cost
//
// Observe caches the attribute set of each combination of limit, result,
// source or error type, and label, so that in steady state it allocates
// nothing of its own; see BenchmarkObserve.
package ratelimitotel
