package e2e

import (
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/redislimit"
)

// newRedisLimiter starts a Redis server for t and returns a limiter on it
// that fails closed, so that a Redis failure cannot pass for a decision of
// the in-memory fallback, with a timeout generous for a busy machine.
func newRedisLimiter(t *testing.T) runtime.Limiter {
	t.Helper()
	s := redistest.StartServer(t)
	return redislimit.New(s.Client(t), redislimit.WithFailurePolicy(redislimit.FailClosed), redislimit.WithTimeout(10*time.Second))
}
