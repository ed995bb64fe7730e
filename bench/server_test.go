package bench

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
)

// startRedis starts one real redis-server for the calling test or benchmark
// (killed when it ends) and returns a client with newClient's settings.
// A missing redis-server fails with install instructions (see redistest).
func startRedis(tb testing.TB) *redis.Client {
	tb.Helper()
	srv := redistest.StartServer(tb)
	c := newClient(srv.Addr())
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// flush empties the server so that every contender starts from nothing.
func flush(tb testing.TB, c *redis.Client) {
	tb.Helper()
	if err := c.FlushAll(context.Background()).Err(); err != nil {
		tb.Fatalf("FLUSHALL: %v", err)
	}
}
