package ratelimithttp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// exports lets 2 requests per client be in flight; a permit lives a minute
// unless renewed, far longer than any test here runs.
var exports = runtime.Limit{Name: "api.exports", Window: time.Minute, Max: 2, Algorithm: runtime.Concurrency}

func TestSetHeadersInFlight(t *testing.T) {
	h := http.Header{}
	ratelimithttp.SetHeaders(h, exports, runtime.Decision{Allowed: true, Remaining: 1, ResetAfter: time.Minute})
	require.Equal(t, []string{`"api.exports";q=2;qu="concurrent-requests"`}, h.Values("RateLimit-Policy"))
	require.Equal(t, []string{`"api.exports";r=1`}, h.Values("RateLimit"), "no t: nothing predicts when a permit comes back")
}

func TestWriteErrorInFlight(t *testing.T) {
	w := httptest.NewRecorder()
	require.True(t, ratelimithttp.WriteError(w, nil, &runtime.LimitError{Limit: exports, Decision: runtime.Decision{ResetAfter: time.Minute}}))
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	require.Empty(t, w.Header().Values("Retry-After"), "no honest wait to give")
	require.Equal(t, `"api.exports";r=0`, w.Header().Get("RateLimit"))
	var body map[string]any
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
	require.Equal(t, "Too many requests in flight for api.exports: at most 2 at once. Retry once one ends.", body["detail"])
	require.EqualValues(t, 2, body["quota"])
	require.NotContains(t, body, "retry_after_seconds")
	require.NotContains(t, body, "window_seconds")
}

// blocking is a handler whose requests wait until released, unless they
// ask to be answered at once or to panic.
type blocking struct {
	entered chan context.Context
	release chan struct{}
}

func (b *blocking) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Panic") != "" {
		panic("handler failed")
	}
	if r.Header.Get("Quick") != "" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	select {
	case b.entered <- r.Context():
	case <-time.After(time.Minute):
		// No one expected this request to be served.
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	<-b.release
	w.WriteHeader(http.StatusNoContent)
}

// TestMiddlewareInFlight: at most Max requests of a client run at once;
// one that ends, or panics, frees its permit.
func TestMiddlewareInFlight(t *testing.T) {
	next := &blocking{entered: make(chan context.Context), release: make(chan struct{})}
	h := ratelimithttp.Middleware(memlimit.New(), exports, ratelimithttp.ByClientIP())(next)

	done := make(chan int, exports.Max)
	for range exports.Max {
		go func() { done <- serve(h, "192.0.2.1:5000", nil).Code }()
		ctx := <-next.entered
		require.NoError(t, ctx.Err(), "a held permit leaves the request's context alive")
	}
	w := serve(h, "192.0.2.1:5000", nil)
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	require.Empty(t, w.Header().Values("Retry-After"))
	require.Equal(t, `"api.exports";q=2;qu="concurrent-requests"`, w.Header().Get("RateLimit-Policy"))

	// Another client has permits of its own.
	require.Equal(t, http.StatusNoContent, serve(h, "192.0.2.2:5000", http.Header{"Quick": {"1"}}).Code)

	// One request ends: its permit is free again.
	next.release <- struct{}{}
	require.Equal(t, http.StatusNoContent, <-done)
	require.Panics(t, func() { serve(h, "192.0.2.1:5000", http.Header{"Panic": {"1"}}) })
	go func() { done <- serve(h, "192.0.2.1:5000", nil).Code }()
	<-next.entered
	require.Equal(t, http.StatusTooManyRequests, serve(h, "192.0.2.1:5000", nil).Code, "the panicking request released its permit, and the new one holds it")

	close(next.release)
	for range exports.Max {
		require.Equal(t, http.StatusNoContent, <-done)
	}
}

// TestMiddlewareInFlightWiring: what cannot work is refused at start-up.
func TestMiddlewareInFlightWiring(t *testing.T) {
	require.PanicsWithValue(t,
		`ratelimithttp: Middleware for "api.exports": CountStatus counts answers, but a concurrency limit releases its permit whatever the answer; drop CountStatus`,
		func() {
			ratelimithttp.Middleware(memlimit.New(), exports, ratelimithttp.ByClientIP(), ratelimithttp.CountStatus(401))
		})
	require.PanicsWithValue(t,
		`ratelimithttp: Middleware for "api.exports": CountStatus and concurrency limits need a runtime.Holder, which ratelimithttp_test.decideOnly is not; pass a memlimit or redislimit Limiter, or runtime.Operate's`,
		func() {
			ratelimithttp.Middleware(decideOnly{memlimit.New()}, exports, ratelimithttp.ByClientIP())
		})
}
