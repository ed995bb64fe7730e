package ratelimithttp_test

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// manualClock is a clock the test moves by hand.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// With the runtime's in-memory limiter, a client that waits exactly the
// Retry-After it was given is admitted, and one that waits a second less is
// not: the header is rounded up, never down.
func TestMiddlewareRetryAfterIsHonouredByMemoryLimiter(t *testing.T) {
	clock := &manualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	lim := memlimit.New(memlimit.WithClock(clock.Now))
	h := ratelimithttp.Middleware(lim, login, ratelimithttp.ByClientIP())(&okHandler{})
	const peer = "192.0.2.1:1"

	for i, step := range []time.Duration{0, 400 * time.Millisecond, 500 * time.Millisecond} {
		clock.Advance(step)
		w := serve(h, peer, nil)
		require.Equal(t, http.StatusOK, w.Code)
		assert.Equal(t, `"api.login";r=`+strconv.Itoa(2-i)+`;t=60`, w.Header().Get("RateLimit"),
			"t after an admission is the time until the full quota is back")
	}
	clock.Advance(400 * time.Millisecond) // 1.3 s after the first admission
	w := serve(h, peer, nil)
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, "59", w.Header().Get("Retry-After"), "58.7 s rounds up to 59")
	assert.Equal(t, `"api.login";r=0;t=59`, w.Header().Get("RateLimit"))
	retry, err := strconv.Atoi(w.Header().Get("Retry-After"))
	require.NoError(t, err)

	clock.Advance(time.Duration(retry-1) * time.Second)
	assert.Equal(t, http.StatusTooManyRequests, serve(h, peer, nil).Code, "one second early is still too early")
	clock.Advance(time.Second)
	w = serve(h, peer, nil)
	assert.Equal(t, http.StatusOK, w.Code, "waiting Retry-After is enough")
	assert.Equal(t, `"api.login";r=0;t=60`, w.Header().Get("RateLimit"),
		"the 0.4 s and 0.9 s admissions still count, and the new one resets at 60 s")
}
