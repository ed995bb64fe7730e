package ratelimithttp

import (
	"fmt"
	"net/http"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// Option configures Middleware.
type Option func(*middlewareConfig)

type middlewareConfig struct {
	failOpen     bool
	onLimiterErr func(*http.Request, error)
	onKeyErr     func(http.ResponseWriter, *http.Request, error)
}

// FailOpen makes Middleware pass a request to the next handler, without
// RateLimit fields, when the limiter returns an error, instead of
// answering 503. Availability then wins over protection for this route.
// (A RedisLimiter has its own failure policy, applied before the
// middleware sees an error; under runtime.FailLocal, the default, it
// rarely returns one.)
func FailOpen() Option {
	return func(c *middlewareConfig) { c.failOpen = true }
}

// OnLimiterError registers f to be called with every error the limiter
// returns, before the 503 (or, with FailOpen, before the next handler). The
// response never shows the error, so this is where to log it.
func OnLimiterError(f func(r *http.Request, err error)) Option {
	return func(c *middlewareConfig) { c.onLimiterErr = f }
}

// OnKeyError replaces the default answer to a request its KeyFunc cannot
// key: 400 Bad Request with the KeyFunc's error message as the problem
// detail. f must write a response; the next handler is not called. Use it,
// for example, to answer 401 when the key is the authenticated user.
func OnKeyError(f func(w http.ResponseWriter, r *http.Request, err error)) Option {
	return func(c *middlewareConfig) { c.onKeyErr = f }
}

// Middleware limits the requests to a handler to l per key, for routes
// that want a limit without code generation:
//
//	limit := runtime.Limit{Name: "api.login", Window: time.Minute, Max: 5}
//	mux.Handle("POST /login", ratelimithttp.Middleware(lim, limit,
//		ratelimithttp.ByClientIP())(loginHandler))
//
// For each request it computes key(r) and asks lim.Allow(r.Context(), l,
// key), then:
//
//   - admitted: sets the RateLimit-Policy and RateLimit fields (SetHeaders)
//     and calls the next handler, which may overwrite them;
//   - denied: answers 429 as WriteLimited does, with Retry-After, the
//     RateLimit fields and a problem body; the next handler is not called;
//   - limiter error (any error: the limiter could not decide): answers 503
//     as WriteUnavailable does, or calls the next handler with FailOpen;
//     OnLimiterError observes the error either way;
//   - key error: answers 400 Bad Request with the error's message as the
//     detail (see KeyFunc), or what OnKeyError writes.
//
// Every request that reaches the limiter counts, whatever status the next
// handler returns. The key never appears in a response.
//
// Middleware panics if lim or key is nil or l is invalid (l.Validate), so
// that a wiring mistake stops the program at start-up instead of failing,
// or under FailOpen silently never limiting, at every request. A nil next
// handler panics when the returned func is called, like other net/http
// middleware misuse.
func Middleware(lim runtime.Limiter, l runtime.Limit, key KeyFunc, opts ...Option) func(http.Handler) http.Handler {
	switch {
	case lim == nil:
		panic("ratelimithttp: Middleware: nil Limiter; pass e.g. runtime.NewMemoryLimiter()")
	case key == nil:
		panic("ratelimithttp: Middleware: nil KeyFunc; pass e.g. ratelimithttp.ByClientIP()")
	}
	if err := l.Validate(); err != nil {
		panic(fmt.Sprintf("ratelimithttp: Middleware: %v", err))
	}
	var c middlewareConfig
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return func(next http.Handler) http.Handler {
		if next == nil {
			panic(fmt.Sprintf("ratelimithttp: Middleware for %q applied to a nil http.Handler", l.Name))
		}
		return &limitHandler{lim: lim, limit: l, key: key, cfg: c, next: next}
	}
}

type limitHandler struct {
	lim   runtime.Limiter
	limit runtime.Limit
	key   KeyFunc
	cfg   middlewareConfig
	next  http.Handler
}

func (h *limitHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k, err := h.key(r)
	if err != nil {
		if h.cfg.onKeyErr != nil {
			h.cfg.onKeyErr(w, r, err)
			return
		}
		writeProblem(w, r, Problem{
			Type:   "about:blank",
			Title:  "Bad Request",
			Status: http.StatusBadRequest,
			Detail: err.Error(),
		})
		return
	}
	d, err := h.lim.Allow(r.Context(), h.limit, k)
	if err != nil {
		if h.cfg.onLimiterErr != nil {
			h.cfg.onLimiterErr(r, err)
		}
		if h.cfg.failOpen {
			h.next.ServeHTTP(w, r)
			return
		}
		WriteUnavailable(w, r)
		return
	}
	if !d.Allowed {
		WriteLimited(w, r, runtime.NewLimitError(h.limit, d))
		return
	}
	SetHeaders(w.Header(), h.limit, d)
	h.next.ServeHTTP(w, r)
}
