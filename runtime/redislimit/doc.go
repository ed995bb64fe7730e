// Package redislimit is the Redis backend of ratelimitgen: a
// runtime.Limiter whose counts live in Redis, a Redis Cluster, a Ring or a
// Sentinel-managed server, so that every replica of a service shares one
// limit.
//
// Each decision is one Lua script run atomically on the key's node, on the
// server's clock, with the same semantics as memlimit.Limiter (see
// package runtime). When Redis fails or is slow, a FailurePolicy decides,
// and a circuit breaker keeps an outage from costing every call a timeout.
//
//	lim := redislimit.New(redis.NewClient(&redis.Options{Addr: "localhost:6379"}))
//	svc := notify.NewRateLimitedNotifier(impl, lim)
package redislimit
