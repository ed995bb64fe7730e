// Package bench compares ratelimitgen's limiters with other ways of rate
// limiting:
//
//   - on Redis: go-redis/redis_rate (GCRA), ulule/limiter (fixed window,
//     Redis store) and the sliding-log Lua script of the article
//     ratelimitgen replaces, each against one real redis-server on loopback
//     (bench_test.go, memory_test.go, skew_test.go), and beside the
//     ceiling, a minimal batched client of bench's own (ceiling.go);
//   - in process: ratelimitgen's memlimit.Limiter with each algorithm,
//     sethvargo/go-limiter's memorystore, and golang.org/x/time/rate
//     limiters in a sync.Map or alone (inprocess.go, inprocess_test.go).
//
// cmd/perftable runs the rows of the Performance table in the repository's
// docs/performance.md and prints them as ratios to redis_rate and to the
// ceiling; with
// -inprocess, the rows of README.md's In process table, as ratios to
// memorystore and x/time/rate.
//
// It is a module of its own so that the peers it measures never become
// dependencies of ratelimitgen's users. It holds no API; README.md has the
// figures measured on the project's machine and how to reproduce them.
package bench
