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
// The algorithm is an exact sliding log. A Limit with Max m and Window w
// admits a call at time t only if fewer than m admitted calls lie in the
// half-open window (t-w, t]. A denied call is not recorded, so a client that
// keeps retrying does not extend its own wait. An admission recorded at time
// s stops counting at exactly s+w, so a caller that waits the reported
// RetryAfter is admitted (unless others took the freed slot first).
//
// Time has microsecond resolution. Admissions of one key are recorded at
// strictly increasing microseconds: a second admission in the same
// microsecond is recorded one microsecond later. This can delay an
// admission's expiry by a few microseconds, never advance it, so it never
// lets more than Max calls through.
package runtime
