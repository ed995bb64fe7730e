package ratelimitgrpc_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc/internal/verifypb"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// denyFirst denies its first call, asking for a wait of retryAfter, and
// admits every later one.
type denyFirst struct {
	retryAfter time.Duration
	calls      atomic.Int64
}

func (l *denyFirst) Decide(_ context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	allowed := l.calls.Add(1) > 1
	each := make([]runtime.Decision, len(reqs))
	for i := range each {
		each[i] = runtime.Decision{Allowed: allowed}
		if !allowed {
			each[i].RetryAfter = l.retryAfter
		}
	}
	return runtime.Decisions{Allowed: allowed, Each: each}, nil
}

// TestGrpcGoHonoursPushback: a grpc-go client whose retry policy retries
// RESOURCE_EXHAUSTED waits the pushback trailer's 1 ms instead of its own
// backoff of about an hour, so the call succeeds on its second attempt
// well within its deadline. Without the trailer it would wait past the
// deadline and fail with DEADLINE_EXCEEDED; nothing here measures time.
func TestGrpcGoHonoursPushback(t *testing.T) {
	lim := &denyFirst{retryAfter: time.Millisecond}
	client, raw := startServer(t, lim, grpc.WithDefaultServiceConfig(`{"methodConfig": [{
		"name": [{"service": "ratelimitgen.verify.v1.Verifier"}],
		"retryPolicy": {"maxAttempts": 2, "initialBackoff": "3600s", "maxBackoff": "3600s",
			"backoffMultiplier": 1, "retryableStatusCodes": ["RESOURCE_EXHAUSTED"]}}]}`))

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err := client.SendCode(ctx, &verifypb.SendCodeRequest{Email: key})
	require.NoError(t, err, "the retry after the pushback")

	var le *runtime.LimitError
	require.ErrorAs(t, raw.last(t), &le, "the first attempt was denied")
	// One decision per attempt, of both SendCode's limits at once.
	assert.Equal(t, int64(2), lim.calls.Load())
}
