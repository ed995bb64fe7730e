package ratelimithttp_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// A handler that calls a rate-limited method (such as a ratelimitgen
// wrapper) answers the method's error with WriteError, and answers what
// WriteError leaves alone as it would without rate limiting.
func ExampleWriteError() {
	sendCode := func() error {
		// What a generated wrapper returns when the limit denies the call.
		limit := runtime.Limit{Name: "Notifier.SendCode", Window: time.Minute, Max: 3}
		err := runtime.NewLimitError(limit, runtime.Decision{RetryAfter: 41200 * time.Millisecond})
		return fmt.Errorf("send code: %w", err)
	}
	handler := func(w http.ResponseWriter, r *http.Request) {
		if err := sendCode(); err != nil {
			if ratelimithttp.WriteError(w, r, err) {
				return
			}
			http.Error(w, "could not send the code", http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "code sent")
	}

	w := httptest.NewRecorder()
	handler(w, httptest.NewRequest(http.MethodPost, "/send-code", nil))
	fmt.Println(w.Code)
	fmt.Println("Retry-After:", w.Header().Get("Retry-After"))
	fmt.Println("RateLimit-Policy:", w.Header().Get("RateLimit-Policy"))
	fmt.Println("RateLimit:", w.Header().Get("RateLimit"))
	fmt.Print(w.Body)

	w = httptest.NewRecorder()
	ratelimithttp.WriteError(w, nil, fmt.Errorf("send code: %w", runtime.ErrUnavailable))
	fmt.Println(w.Code)
	fmt.Println(ratelimithttp.WriteError(httptest.NewRecorder(), nil, errors.New("smtp: mailbox full")))
	// Output:
	// 429
	// Retry-After: 42
	// RateLimit-Policy: "Notifier.SendCode";q=3;w=60
	// RateLimit: "Notifier.SendCode";r=0;t=42
	// {"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Request cannot be satisfied as assigned quota has been exceeded","status":429,"detail":"Too many requests for Notifier.SendCode: at most 3 per 1m0s. Retry in 42 s.","violated-policies":["Notifier.SendCode"],"retry_after_seconds":42,"quota":3,"window_seconds":60}
	// 503
	// false
}

// Middleware limits a route without code generation: here 3 logins per
// minute per client IP.
func ExampleMiddleware() {
	// A clock that the example moves by hand makes the output reproducible;
	// real code calls runtime.NewMemoryLimiter() or uses a RedisLimiter.
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lim := runtime.NewMemoryLimiter(runtime.WithClock(func() time.Time { return now }))

	limit := runtime.Limit{Name: "api.login", Window: time.Minute, Max: 3}
	login := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "welcome") })
	mux := http.NewServeMux()
	mux.Handle("POST /login", ratelimithttp.Middleware(lim, limit, ratelimithttp.ByClientIP())(login))

	for range 4 {
		r := httptest.NewRequest(http.MethodPost, "/login", nil)
		r.RemoteAddr = "192.0.2.1:51000"
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		fmt.Printf("%d RateLimit: %s Retry-After: %q\n", w.Code, w.Header().Get("RateLimit"), w.Header().Get("Retry-After"))
		now = now.Add(10 * time.Second)
	}
	// Output:
	// 200 RateLimit: "api.login";r=2;t=60 Retry-After: ""
	// 200 RateLimit: "api.login";r=1;t=60 Retry-After: ""
	// 200 RateLimit: "api.login";r=0;t=60 Retry-After: ""
	// 429 RateLimit: "api.login";r=0;t=30 Retry-After: "30"
}

// Behind a reverse proxy, trust its X-Forwarded-For only when the request
// comes from the proxy's own addresses; any other peer is keyed on its own
// address, whatever headers it sends.
func ExampleByClientIP() {
	key := ratelimithttp.ByClientIP(
		ratelimithttp.TrustProxyHeader("X-Forwarded-For", netip.MustParsePrefix("10.0.0.0/8")),
		ratelimithttp.IPv6Prefix(64),
	)
	for _, peer := range []string{"10.0.0.2:40000", "198.51.100.7:40000"} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = peer
		r.Header.Set("X-Forwarded-For", "203.0.113.50, 2001:db8:1:2::99")
		k, _ := key(r)
		fmt.Println(peer, "->", k)
	}
	// Output:
	// 10.0.0.2:40000 -> 2001:db8:1:2::/64
	// 198.51.100.7:40000 -> 198.51.100.7
}

// Any func with KeyFunc's signature is a KeyFunc: here the limit counts
// per API client, and a request without credentials is answered 401
// instead of the default 400.
func ExampleKeyFunc() {
	byClient := ratelimithttp.KeyFunc(func(r *http.Request) (string, error) {
		user, _, ok := r.BasicAuth()
		if !ok {
			return "", errors.New("no credentials")
		}
		return runtime.Key("client", user), nil
	})
	lim := runtime.NewMemoryLimiter()
	limit := runtime.Limit{Name: "api.export", Window: time.Hour, Max: 10}
	h := ratelimithttp.Middleware(lim, limit, byClient,
		ratelimithttp.OnKeyError(func(w http.ResponseWriter, r *http.Request, err error) {
			w.Header().Set("WWW-Authenticate", `Basic realm="api"`)
			http.Error(w, "sign in first", http.StatusUnauthorized)
		}),
	)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "export") }))

	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/export", nil))
	fmt.Println(w.Code)

	r := httptest.NewRequest(http.MethodGet, "/export", nil)
	r.SetBasicAuth("acme", "secret")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	fmt.Println(w.Code, w.Header().Get("RateLimit-Policy"))
	// Output:
	// 401
	// 200 "api.export";q=10;w=3600
}
