package ratelimithttp_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// okHandler counts the requests that reach it and answers 200 "ok".
type okHandler struct{ calls atomic.Int32 }

func (h *okHandler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h.calls.Add(1)
	_, _ = w.Write([]byte("ok"))
}

func serve(h http.Handler, remoteAddr string, header http.Header) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/login", nil)
	r.RemoteAddr = remoteAddr
	for k, vs := range header {
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

var login = runtime.Limit{Name: "api.login", Window: time.Minute, Max: 3}

func TestMiddlewareAdmitsMaxThenDenies(t *testing.T) {
	lim := newCountLimiter(42*time.Second, 60*time.Second)
	next := &okHandler{}
	h := ratelimithttp.Middleware(lim, login, ratelimithttp.ByClientIP())(next)

	for i := range login.Max {
		w := serve(h, "192.0.2.1:5000", nil)
		require.Equal(t, http.StatusOK, w.Code, "request %d", i+1)
		assert.Equal(t, "ok", w.Body.String())
		assert.Equal(t, `"api.login";q=3;w=60`, w.Header().Get("RateLimit-Policy"))
		assert.Equal(t, `"api.login";r=`+strconv.Itoa(login.Max-1-i)+`;t=60`, w.Header().Get("RateLimit"))
		assert.Empty(t, w.Header().Get("Retry-After"))
	}

	w := serve(h, "192.0.2.1:5001", nil)
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, "42", w.Header().Get("Retry-After"))
	assert.Equal(t, `"api.login";q=3;w=60`, w.Header().Get("RateLimit-Policy"))
	assert.Equal(t, `"api.login";r=0;t=42`, w.Header().Get("RateLimit"))
	body := decodeBody(t, w)
	assert.Equal(t, "Too many requests for api.login: at most 3 per 1m0s. Retry in 42 s.", body["detail"])
	assert.Equal(t, []any{"api.login"}, body["violated-policies"])
	assert.NotContains(t, w.Body.String(), "192.0.2.1", "the key never appears in a response")
	assert.Equal(t, int32(login.Max), next.calls.Load(), "a denied request must not reach the handler")

	w = serve(h, "192.0.2.2:5000", nil)
	assert.Equal(t, http.StatusOK, w.Code, "another client has its own count")
	assert.Equal(t, []string{"192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.2"}, lim.seenKeys())
}

func TestMiddlewareLimiterErrors(t *testing.T) {
	for name, limErr := range map[string]error{
		"unavailable":   fmt.Errorf("redis: %w", runtime.ErrUnavailable),
		"generic error": errors.New("limiter exploded"),
	} {
		t.Run(name+"/fail closed", func(t *testing.T) {
			lim := newCountLimiter(time.Second, time.Second)
			lim.err = limErr
			var seen []error
			next := &okHandler{}
			h := ratelimithttp.Middleware(lim, login, ratelimithttp.ByClientIP(),
				ratelimithttp.OnLimiterError(func(_ *http.Request, err error) { seen = append(seen, err) }))(next)

			w := serve(h, "192.0.2.1:5000", nil)
			assert.Equal(t, http.StatusServiceUnavailable, w.Code, "a limiter failure is never a 429")
			assert.Equal(t, "Service Unavailable", decodeBody(t, w)["title"])
			assert.Empty(t, w.Header().Values("RateLimit"))
			assert.Empty(t, w.Header().Get("Retry-After"))
			assert.NotContains(t, w.Body.String(), limErr.Error())
			assert.Zero(t, next.calls.Load())
			assert.Equal(t, []error{limErr}, seen)
		})
		t.Run(name+"/serve on limiter error", func(t *testing.T) {
			lim := newCountLimiter(time.Second, time.Second)
			lim.err = limErr
			var seen []error
			next := &okHandler{}
			h := ratelimithttp.Middleware(lim, login, ratelimithttp.ByClientIP(), ratelimithttp.ServeOnLimiterError(),
				ratelimithttp.OnLimiterError(func(_ *http.Request, err error) { seen = append(seen, err) }))(next)

			w := serve(h, "192.0.2.1:5000", nil)
			assert.Equal(t, http.StatusOK, w.Code)
			assert.Equal(t, "ok", w.Body.String())
			assert.Empty(t, w.Header().Values("RateLimit"), "no decision, so no quota to advertise")
			assert.Equal(t, int32(1), next.calls.Load())
			assert.Equal(t, []error{limErr}, seen)
		})
	}
}

func TestMiddlewareByHeader(t *testing.T) {
	lim := newCountLimiter(time.Second, time.Minute)
	next := &okHandler{}
	one := runtime.Limit{Name: "per-client", Window: time.Minute, Max: 1}
	h := ratelimithttp.Middleware(lim, one, ratelimithttp.ByHeader("x-client-id"))(next)

	assert.Equal(t, http.StatusOK, serve(h, "192.0.2.1:1", http.Header{"X-Client-Id": {"alice@example.com"}}).Code)
	assert.Equal(t, http.StatusOK, serve(h, "192.0.2.1:1", http.Header{"X-Client-Id": {"bob@example.com"}}).Code)
	w := serve(h, "192.0.2.9:1", http.Header{"X-Client-Id": {"alice@example.com"}})
	assert.Equal(t, http.StatusTooManyRequests, w.Code, "same header value, same count, whatever the IP")
	assert.NotContains(t, w.Body.String(), "alice")
	for k, vs := range w.Header() {
		assert.NotContains(t, strings.Join(vs, ","), "alice", k)
	}

	w = serve(h, "192.0.2.1:1", nil)
	assert.Equal(t, http.StatusBadRequest, w.Code)
	assert.Equal(t, map[string]any{
		"type":   "about:blank",
		"title":  "Bad Request",
		"status": float64(400),
		"detail": "missing X-Client-Id header: this endpoint's rate limit is counted per X-Client-Id value",
	}, decodeBody(t, w))
	assert.Equal(t, int32(2), next.calls.Load())
	assert.Len(t, lim.seenKeys(), 3, "an unkeyed request does not reach the limiter")
}

func TestMiddlewareOnKeyError(t *testing.T) {
	lim := newCountLimiter(time.Second, time.Minute)
	userKey := ratelimithttp.KeyFunc(func(r *http.Request) (string, error) {
		u := r.Header.Get("X-User")
		if u == "" {
			return "", errors.New("not signed in")
		}
		return u, nil
	})
	var got error
	h := ratelimithttp.Middleware(lim, login, userKey, ratelimithttp.OnKeyError(func(w http.ResponseWriter, _ *http.Request, err error) {
		got = err
		http.Error(w, "sign in first", http.StatusUnauthorized)
	}))(&okHandler{})

	w := serve(h, "192.0.2.1:1", nil)
	assert.Equal(t, http.StatusUnauthorized, w.Code)
	assert.EqualError(t, got, "not signed in")
	assert.Equal(t, http.StatusOK, serve(h, "192.0.2.1:1", http.Header{"X-User": {"u1"}}).Code)
	assert.Equal(t, []string{"u1"}, lim.seenKeys())
}

func TestMiddlewareSpoofedForwardedForIsIgnored(t *testing.T) {
	one := runtime.Limit{Name: "one", Window: time.Minute, Max: 1}
	key := ratelimithttp.ByClientIP(ratelimithttp.TrustProxyHeader("X-Forwarded-For", mustPrefix("10.0.0.0/8")))

	t.Run("untrusted peer", func(t *testing.T) {
		lim := newCountLimiter(time.Second, time.Minute)
		h := ratelimithttp.Middleware(lim, one, key)(&okHandler{})
		assert.Equal(t, http.StatusOK, serve(h, "198.51.100.1:1", http.Header{"X-Forwarded-For": {"203.0.113.1"}}).Code)
		// A new forged address per request must not buy a new count.
		assert.Equal(t, http.StatusTooManyRequests, serve(h, "198.51.100.1:1", http.Header{"X-Forwarded-For": {"203.0.113.2"}}).Code)
		assert.Equal(t, []string{"198.51.100.1", "198.51.100.1"}, lim.seenKeys())
	})
	t.Run("trusted proxy", func(t *testing.T) {
		lim := newCountLimiter(time.Second, time.Minute)
		h := ratelimithttp.Middleware(lim, one, key)(&okHandler{})
		// Both clients come through the same proxy; the proxy appended their
		// real addresses after whatever they sent.
		assert.Equal(t, http.StatusOK, serve(h, "10.0.0.2:1", http.Header{"X-Forwarded-For": {"1.1.1.1, 203.0.113.1"}}).Code)
		assert.Equal(t, http.StatusOK, serve(h, "10.0.0.2:1", http.Header{"X-Forwarded-For": {"203.0.113.2"}}).Code)
		assert.Equal(t, http.StatusTooManyRequests, serve(h, "10.0.0.2:1", http.Header{"X-Forwarded-For": {"9.9.9.9, 203.0.113.1"}}).Code)
		assert.Equal(t, []string{"203.0.113.1", "203.0.113.2", "203.0.113.1"}, lim.seenKeys())
	})
}

func TestMiddlewarePanicsOnWiringMistakes(t *testing.T) {
	lim := newCountLimiter(time.Second, time.Second)
	key := ratelimithttp.ByClientIP()
	assert.PanicsWithValue(t, "ratelimithttp: Middleware: nil Limiter; pass e.g. memlimit.New()",
		func() { ratelimithttp.Middleware(nil, login, key) })
	assert.PanicsWithValue(t, "ratelimithttp: Middleware: nil KeyFunc; pass e.g. ratelimithttp.ByClientIP()",
		func() { ratelimithttp.Middleware(lim, login, nil) })
	assert.PanicsWithValue(t, `ratelimithttp: Middleware: ratelimit: limit "api.login" has Max 0; it must be at least 1`,
		func() { ratelimithttp.Middleware(lim, runtime.Limit{Name: "api.login", Window: time.Second}, key) })
	assert.PanicsWithValue(t, `ratelimithttp: Middleware for "api.login" applied to a nil http.Handler`,
		func() { ratelimithttp.Middleware(lim, login, key)(nil) })
	assert.NotPanics(t, func() { ratelimithttp.Middleware(lim, login, key, nil)(&okHandler{}) }, "a nil Option is ignored")
}

// Middleware with a recording limiter under QuotaHeaders reports its
// limit once, beside the limits the handler's calls went through.
func TestMiddlewareUnderQuotaHeaders(t *testing.T) {
	lim := ratelimithttp.RecordDecisions(newCountLimiter(42*time.Second, time.Minute))
	h := ratelimithttp.QuotaHeaders(ratelimithttp.Middleware(lim, login, ratelimithttp.ByClientIP())(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !ratelimithttp.WriteError(w, r, notifier{lim}.SendCode(r.Context(), "alice")) {
				_, _ = w.Write([]byte("sent"))
			}
		})))
	w := serve(h, "192.0.2.1:1", nil)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, []string{`"api.login";r=2;t=60`, `"Notifier.SendCode";r=2;t=60`}, w.Header().Values("RateLimit"))
	assert.Equal(t, []string{`"api.login";q=3;w=60`, `"Notifier.SendCode";q=3;w=60`}, w.Header().Values("RateLimit-Policy"))
}
