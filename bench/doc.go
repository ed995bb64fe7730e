// Package bench compares ratelimitgen's Redis limiter with other ways of
// rate limiting on Redis: go-redis/redis_rate (GCRA), ulule/limiter (fixed
// window, Redis store) and the sliding-log Lua script of the article
// ratelimitgen replaces, each against one real redis-server on loopback.
//
// It is a module of its own so that the peers it measures never become
// dependencies of ratelimitgen's users. It holds no API: the benchmarks live
// in bench_test.go, the memory and clock-skew comparisons in memory_test.go
// and skew_test.go, and README.md has the figures measured on the project's
// machine and how to reproduce them.
package bench
