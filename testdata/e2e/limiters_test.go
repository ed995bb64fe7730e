package e2e

import (
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// newRedisLimiter starts a Redis server for t and returns a limiter on it
// that fails closed, so that a Redis failure cannot pass for a decision of
// the in-memory fallback, with a timeout generous for a busy machine.
func newRedisLimiter(t *testing.T) runtime.Limiter {
	t.Helper()
	s := redistest.StartServer(t)
	return runtime.NewRedisLimiter(s.Client(t), runtime.WithFailurePolicy(runtime.FailClosed), runtime.WithTimeout(10*time.Second))
}
