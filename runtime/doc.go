// Package runtime holds what ratelimitgen's generated wrappers call at run
// time: the vocabulary of rate limiting (Limit, Decision, Limiter, LimitError,
// key building) and two backends that make the same decisions:
//
//   - RedisLimiter keeps the count in Redis or a Redis Cluster so that every
//     replica of a service shares one limit. Each decision is one Lua script
//     run atomically on the key's node, on the server's clock.
//   - MemoryLimiter keeps the count in the process. It is the embedded default
//     for tests and single-instance programs, and the fallback a RedisLimiter
//     uses while Redis is unreachable.
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
// A call may cost several units (AllowN) and may have to pass several limits
// at once (AllowAll): it is admitted only if every limit has room, and when
// one denies, none of them consumes quota.
//
// Time has microsecond resolution. With SlidingLog, admissions of one key are
// recorded at strictly increasing microseconds: a second admission in the
// same microsecond is recorded one microsecond later. This can delay an
// admission's expiry by a few microseconds, never advance it, so it never
// lets more than Max calls through.
package runtime
