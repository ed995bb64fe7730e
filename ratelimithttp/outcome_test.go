package ratelimithttp_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// statusHandler answers each request with the next of its statuses.
type statusHandler struct {
	statuses []int
	calls    int
}

func (h *statusHandler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	status := h.statuses[h.calls%len(h.statuses)]
	h.calls++
	if status == http.StatusOK {
		// No WriteHeader: a body written first is a 200.
		_, _ = w.Write([]byte("ok"))
		return
	}
	w.WriteHeader(status)
}

// TestCountStatusCountsOnly401s: with CountStatus(401), successful logins
// never count, and after Max failed ones every request is denied.
func TestCountStatusCountsOnly401s(t *testing.T) {
	lim := memlimit.New()
	next := &statusHandler{statuses: []int{http.StatusOK}}
	h := ratelimithttp.Middleware(lim, login, ratelimithttp.ByClientIP(), ratelimithttp.CountStatus(http.StatusUnauthorized))(next)

	for range 10 * login.Max {
		require.Equal(t, http.StatusOK, serve(h, "192.0.2.1:5000", nil).Code, "a success never counts")
	}
	// 401, 200, 404, 401, ...: the Max-th 401 is the last request served.
	next.statuses = []int{http.StatusUnauthorized, http.StatusOK, http.StatusNotFound}
	next.calls = 0
	for range 3*(login.Max-1) + 1 {
		require.NotEqual(t, http.StatusTooManyRequests, serve(h, "192.0.2.1:5000", nil).Code)
	}
	w := serve(h, "192.0.2.1:5000", nil)
	require.Equal(t, http.StatusTooManyRequests, w.Code, "after %d 401s", login.Max)

	// Another client was never limited.
	require.Equal(t, http.StatusOK, serve(h, "192.0.2.2:5000", nil).Code)
}

// TestCountStatusThroughOperate: an Operate limiter holds too.
func TestCountStatusThroughOperate(t *testing.T) {
	lim := runtime.Operate(memlimit.New())
	next := &statusHandler{statuses: []int{http.StatusForbidden}}
	h := ratelimithttp.Middleware(lim, login, ratelimithttp.ByClientIP(), ratelimithttp.CountStatus(http.StatusUnauthorized, http.StatusForbidden))(next)
	for range login.Max {
		require.Equal(t, http.StatusForbidden, serve(h, "192.0.2.1:5000", nil).Code)
	}
	require.Equal(t, http.StatusTooManyRequests, serve(h, "192.0.2.1:5000", nil).Code)
}

// TestCountStatusNeedsHolder: a limiter that cannot give units back is a
// wiring mistake, reported at start-up.
func TestCountStatusNeedsHolder(t *testing.T) {
	require.PanicsWithValue(t,
		`ratelimithttp: Middleware for "api.login": CountStatus and concurrency limits need a runtime.Holder, which ratelimithttp_test.decideOnly is not; pass a memlimit or redislimit Limiter, or runtime.Operate's`,
		func() {
			ratelimithttp.Middleware(decideOnly{memlimit.New()}, login, ratelimithttp.ByClientIP(), ratelimithttp.CountStatus(401))
		})
}

// decideOnly hides every method of a Limiter but Decide.
type decideOnly struct{ runtime.Limiter }
