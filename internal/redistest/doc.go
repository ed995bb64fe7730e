// Package redistest starts real redis-server processes for tests: single
// servers, a Redis Cluster (three masters, one replica each or more), a
// Sentinel setup (a master, one replica or more, and three sentinels), and
// proxies that break a client's connection or hold a replica's stream.
//
// It exists because a rate limiter's correctness lives in what Redis actually
// does: Lua script atomicity, ZSET semantics, key expiry, MOVED and ASK
// redirects while a slot migrates, replicas being promoted, a server going away
// mid-request. An in-process fake reproduces none of that faithfully, so every
// test in this module that talks to Redis goes through this package and talks
// to a real server instead. When redis-server (or redis-cli, for clusters) is
// not installed, tests fail with install instructions rather than skip, so a
// green run always means the Redis paths were exercised.
//
// Each process listens on 127.0.0.1 only, on a port chosen to avoid collisions
// with the other test binaries that `go test ./...` runs in parallel, keeps its
// files in its own t.TempDir, persists nothing (no RDB, no AOF), and is killed
// by t.Cleanup whether or not the test passed. On Linux the processes are also
// tied to the test binary's lifetime, so a test binary killed by -timeout does
// not leave servers behind.
//
// Readiness is established by polling within generous bounds (seconds), never
// by sleeping a fixed time, and nothing here measures how long Redis took:
// the machines these tests run on are shared and noisy.
package redistest
