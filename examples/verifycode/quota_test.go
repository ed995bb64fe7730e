package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

func TestQuotaLimiterRecordsDecisions(t *testing.T) {
	lim := quotaLimiter{runtime.NewMemoryLimiter()}
	l := runtime.Limit{Name: "Demo.Call", Window: time.Minute, Max: 3}

	// Without a quota in the context there is nothing to record.
	d, err := lim.Allow(context.Background(), l, "k")
	require.NoError(t, err)
	require.True(t, d.Allowed)

	ctx, q := withQuota(context.Background())
	d, err = lim.AllowN(ctx, l, "k", 2)
	require.NoError(t, err)
	require.True(t, q.set)
	assert.Equal(t, l, q.limit)
	assert.Equal(t, d, q.decision)
	assert.Equal(t, 0, d.Remaining)

	h := http.Header{}
	q.setHeaders(h)
	assert.Equal(t, `"Demo.Call";q=3;w=60`, h.Get("RateLimit-Policy"))
	assert.Regexp(t, `^"Demo.Call";r=0;t=\d+$`, h.Get("RateLimit"))

	// A cost above Max is an error, not a decision: nothing is recorded.
	ctx, q = withQuota(context.Background())
	_, err = lim.AllowN(ctx, l, "other", 4)
	require.ErrorIs(t, err, runtime.ErrCostExceedsMax)
	assert.False(t, q.set)
	h = http.Header{}
	q.setHeaders(h)
	assert.Empty(t, h)
}
