package ratelimithttp_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// A handler that calls a rate-limited method (such as a ratelimitgen
// wrapper) answers the method's error with WriteError, and answers what
// WriteError leaves alone as it would without rate limiting.
func ExampleWriteError() {
	// A clock moved by hand makes the output reproducible; real code calls
	// memlimit.New() or redislimit.New(client).
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lim := memlimit.New(memlimit.WithClock(func() time.Time { return now }))
	limit := runtime.Limit{Name: "Notifier.SendCode", Window: time.Minute, Max: 3}

	// sendCode stands for a generated wrapper's method: runtime.Enforce
	// returns a *runtime.LimitError when the limit denies the call.
	sendCode := func(ctx context.Context, email string) error {
		if err := runtime.Enforce(ctx, lim, runtime.Request{Limit: limit, Key: email}); err != nil {
			return fmt.Errorf("send code: %w", err)
		}
		return nil // send the code
	}
	handler := func(w http.ResponseWriter, r *http.Request) {
		if err := sendCode(r.Context(), "alice@example.com"); err != nil {
			if ratelimithttp.WriteError(w, r, err) {
				return
			}
			http.Error(w, "could not send the code", http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "code sent")
	}

	var w *httptest.ResponseRecorder
	for range 4 {
		w = httptest.NewRecorder()
		handler(w, httptest.NewRequest(http.MethodPost, "/send-code", nil))
		fmt.Println(w.Code)
		now = now.Add(6 * time.Second)
	}
	fmt.Println("Retry-After:", w.Header().Get("Retry-After"))
	fmt.Println("RateLimit-Policy:", w.Header().Get("RateLimit-Policy"))
	fmt.Println("RateLimit:", w.Header().Get("RateLimit"))
	fmt.Print(w.Body)

	w = httptest.NewRecorder()
	ratelimithttp.WriteError(w, nil, fmt.Errorf("send code: %w", runtime.ErrUnavailable))
	fmt.Println(w.Code)
	fmt.Println(ratelimithttp.WriteError(httptest.NewRecorder(), nil, errors.New("smtp: mailbox full")))
	// Output:
	// 200
	// 200
	// 200
	// 429
	// Retry-After: 42
	// RateLimit-Policy: "Notifier.SendCode";q=3;w=60
	// RateLimit: "Notifier.SendCode";r=0;t=42
	// {"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Request cannot be satisfied as assigned quota has been exceeded","status":429,"detail":"Too many requests for Notifier.SendCode: at most 3 per 1m0s. Retry in 42 s.","violated-policies":["Notifier.SendCode"],"retry_after_seconds":42,"quota":3,"window_seconds":60}
	// 503
	// false
}

// A generated wrapper returns only an error, so an admitted call's quota
// reaches the response through the request's context: the limiter given
// to the wrapper records its decisions there (RecordDecisions), and
// QuotaHeaders writes them as RateLimit fields.
func ExampleQuotaHeaders() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	limiter := ratelimithttp.RecordDecisions(memlimit.New(memlimit.WithClock(func() time.Time { return now })))

	// notifier stands for a generated wrapper, such as
	// notify.NewRateLimitedCodeService(svc, limiter).
	codes := notifier{limiter}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /codes", func(w http.ResponseWriter, r *http.Request) {
		if err := codes.SendCode(r.Context(), "alice@example.com"); err != nil {
			if ratelimithttp.WriteError(w, r, err) {
				return
			}
			http.Error(w, "could not send the code", http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "code sent")
	})
	handler := ratelimithttp.QuotaHeaders(mux)

	for range 4 {
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/codes", nil))
		fmt.Printf("%d RateLimit: %s\n", w.Code, w.Header().Get("RateLimit"))
		now = now.Add(15 * time.Second)
	}
	// Output:
	// 200 RateLimit: "Notifier.SendCode";r=2;t=60
	// 200 RateLimit: "Notifier.SendCode";r=1;t=60
	// 200 RateLimit: "Notifier.SendCode";r=0;t=60
	// 429 RateLimit: "Notifier.SendCode";r=0;t=15
}

// SetHeaders reports a decision taken by hand; one response can carry the
// fields of several limits.
func ExampleSetHeaders() {
	lim := memlimit.New()
	perMinute := runtime.Limit{Name: "search.minute", Window: time.Minute, Max: 30}
	perDay := runtime.Limit{Name: "search.day", Window: 24 * time.Hour, Max: 1000}
	ds, err := lim.Decide(context.Background(),
		runtime.Request{Limit: perMinute, Key: "alice"},
		runtime.Request{Limit: perDay, Key: "alice"})
	if err != nil {
		log.Fatal(err)
	}

	h := http.Header{}
	ratelimithttp.SetHeaders(h, perMinute, ds.Each[0])
	ratelimithttp.SetHeaders(h, perDay, ds.Each[1])
	fmt.Println(h.Values("RateLimit-Policy"))
	fmt.Println(h.Values("RateLimit"))
	// Output:
	// ["search.minute";q=30;w=60 "search.day";q=1000;w=86400]
	// ["search.minute";r=29;t=60 "search.day";r=999;t=86400]
}

// Middleware limits a route without code generation: here 3 logins per
// minute per client IP.
func ExampleMiddleware() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lim := memlimit.New(memlimit.WithClock(func() time.Time { return now }))

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

// downLimiter is a Limiter whose backend is unreachable.
type downLimiter struct{}

func (downLimiter) Decide(context.Context, ...runtime.Request) (runtime.Decisions, error) {
	return runtime.Decisions{}, fmt.Errorf("dial 10.0.0.3:6379: connection refused: %w", runtime.ErrUnavailable)
}

// When the limiter cannot decide, Middleware answers 503 unless the route
// prefers to be served unprotected; either way OnLimiterError sees why.
func ExampleServeOnLimiterError() {
	limit := runtime.Limit{Name: "api.search", Window: time.Minute, Max: 100}
	search := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "results") })
	logErr := ratelimithttp.OnLimiterError(func(r *http.Request, err error) {
		fmt.Println("limiter:", err)
	})

	for _, h := range []http.Handler{
		ratelimithttp.Middleware(downLimiter{}, limit, ratelimithttp.ByClientIP(), logErr)(search),
		ratelimithttp.Middleware(downLimiter{}, limit, ratelimithttp.ByClientIP(), logErr,
			ratelimithttp.ServeOnLimiterError())(search),
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/search", nil))
		fmt.Println(w.Code, w.Header().Get("Content-Type"))
	}
	// Output:
	// limiter: dial 10.0.0.3:6379: connection refused: ratelimit: limiter backend unavailable
	// 503 application/problem+json
	// limiter: dial 10.0.0.3:6379: connection refused: ratelimit: limiter backend unavailable
	// 200 text/plain; charset=utf-8
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
	lim := memlimit.New()
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
