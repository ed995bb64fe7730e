package ratelimithttp

import (
	"context"
	"fmt"
	"net/http"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// Option configures Middleware.
type Option func(*middlewareConfig)

type middlewareConfig struct {
	serveOnLimiterErr bool
	onLimiterErr      func(*http.Request, error)
	onKeyErr          func(http.ResponseWriter, *http.Request, error)
	// count, set by CountStatus, says which statuses count.
	count func(status int) bool
}

// ServeOnLimiterError makes Middleware serve the request, without
// RateLimit fields and without counting it, when the limiter returns an
// error instead of a decision; by default Middleware answers 503. The
// route's availability then wins over its protection while the limiter is
// down. It does not change how the limiter itself fails: a
// runtime/redislimit Limiter applies its own failure policy first, and
// under its default (FailLocal) rarely returns an error at all.
func ServeOnLimiterError() Option {
	return func(c *middlewareConfig) { c.serveOnLimiterErr = true }
}

// OnLimiterError registers f to observe every error the limiter returns,
// before Middleware answers 503 (or, with ServeOnLimiterError, serves the
// request). The response never shows the error, so this is where to log
// it. f must not write a response.
func OnLimiterError(f func(r *http.Request, err error)) Option {
	return func(c *middlewareConfig) { c.onLimiterErr = f }
}

// OnKeyError replaces the answer to a request its KeyFunc cannot key,
// which by default is 400 Bad Request with the KeyFunc's error message as
// the problem detail. f must write a response; the request is neither
// counted nor served. Use it, for example, to answer 401 when the key is
// the authenticated user.
func OnKeyError(f func(w http.ResponseWriter, r *http.Request, err error)) Option {
	return func(c *middlewareConfig) { c.onKeyErr = f }
}

// Middleware limits the requests to a handler to l per key, for a route
// that wants a limit without code generation:
//
//	limit := runtime.Limit{Name: "api.login", Window: time.Minute, Max: 5}
//	mux.Handle("POST /login", ratelimithttp.Middleware(lim, limit,
//		ratelimithttp.ByClientIP())(loginHandler))
//
// Each request is keyed with key and decided by lim with cost 1, then:
//
//   - admitted: the RateLimit fields are set (see SetHeaders) and the next
//     handler is called; it may overwrite them;
//   - denied: 429 as WriteError answers a *runtime.LimitError, and the next
//     handler is not called;
//   - limiter error: 503 as WriteError answers runtime.ErrUnavailable,
//     whatever the error (by the Limiter contract no decision was made),
//     unless ServeOnLimiterError; OnLimiterError sees the error;
//   - key error: 400 Bad Request with the error's message as the detail,
//     unless OnKeyError.
//
// Every admitted request counts, whatever the next handler answers, unless
// CountStatus says which answers count. The key never appears in a
// response.
//
// A limit of runtime.Concurrency limits requests in flight: an admitted
// request holds a permit while the next handler runs, with the request's
// context kept by runtime.Keep (cancelled with runtime.ErrPermitLost as
// the cause if the permit is lost), and releases it when the handler
// returns or panics. Its 429 carries no Retry-After, since nothing
// predicts when a request in flight ends.
//
// Middleware panics if lim or key is nil or l is invalid (l.Validate), so
// that a wiring mistake stops the program at start-up instead of failing
// every request; the returned func panics on a nil handler. It panics too
// when CountStatus or a concurrency limit needs a runtime.Holder and lim is
// not one, and for CountStatus on a concurrency limit, whose permits are
// released whatever the answer.
func Middleware(lim runtime.Limiter, l runtime.Limit, key KeyFunc, opts ...Option) func(http.Handler) http.Handler {
	switch {
	case lim == nil:
		panic("ratelimithttp: Middleware: nil Limiter; pass e.g. memlimit.New()")
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
	inFlight := l.Algorithm == runtime.Concurrency
	switch _, holds := lim.(runtime.Holder); {
	case c.count != nil && inFlight:
		panic(fmt.Sprintf("ratelimithttp: Middleware for %q: CountStatus counts answers, but a concurrency limit releases its permit whatever the answer; drop CountStatus", l.Name))
	case (c.count != nil || inFlight) && !holds:
		panic(fmt.Sprintf("ratelimithttp: Middleware for %q: CountStatus and concurrency limits need a runtime.Holder, which %T is not; pass a memlimit or redislimit Limiter, or runtime.Operate's", l.Name, lim))
	}
	return func(next http.Handler) http.Handler {
		if next == nil {
			panic(fmt.Sprintf("ratelimithttp: Middleware for %q applied to a nil http.Handler", l.Name))
		}
		return &limitHandler{lim: lim, limit: l, key: key, cfg: c, next: next, inFlight: inFlight}
	}
}

type limitHandler struct {
	lim   runtime.Limiter
	limit runtime.Limit
	key   KeyFunc
	cfg   middlewareConfig
	next  http.Handler
	// inFlight says the limit is a concurrency limit.
	inFlight bool
}

func (h *limitHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k, err := h.key(r)
	if err != nil {
		if h.cfg.onKeyErr != nil {
			h.cfg.onKeyErr(w, r, err)
			return
		}
		writeProblem(w, r, problem{
			Type:   "about:blank",
			Title:  "Bad Request",
			Status: http.StatusBadRequest,
			Detail: err.Error(),
		})
		return
	}
	req := runtime.Request{Limit: h.limit, Key: k}
	var (
		ds   runtime.Decisions
		hold runtime.Hold
	)
	if h.cfg.count != nil || h.inFlight {
		ds, hold, err = h.lim.(runtime.Holder).Hold(r.Context(), req)
	} else {
		ds, err = h.lim.Decide(r.Context(), req)
	}
	if err != nil {
		if h.cfg.onLimiterErr != nil {
			h.cfg.onLimiterErr(r, err)
		}
		if h.cfg.serveOnLimiterErr {
			h.next.ServeHTTP(w, r)
			return
		}
		writeUnavailable(w, r)
		return
	}
	d := ds.Decision()
	if !d.Allowed {
		writeLimited(w, r, &runtime.LimitError{Limit: h.limit, Decision: d})
		return
	}
	SetHeaders(w.Header(), h.limit, d)
	if hold == nil {
		h.next.ServeHTTP(w, r)
		return
	}
	if h.inFlight {
		h.serveHolding(w, r, hold)
		return
	}
	sw := &statusWriter{ResponseWriter: w}
	h.next.ServeHTTP(sw, r)
	if !sw.hijacked && !h.cfg.count(sw.final()) {
		// A failed settlement keeps the unit, erring toward denial;
		// an Operate limiter's observers are told.
		_ = hold.Settle(r.Context(), 0)
	}
}

// serveHolding serves a request admitted by a concurrency limit, holding
// its permit until the next handler returns or panics.
func (h *limitHandler) serveHolding(w http.ResponseWriter, r *http.Request, hold runtime.Hold) {
	ctx, stop := runtime.Keep(r.Context(), hold)
	defer func() {
		stop()
		// A permit that was lost meanwhile is released as well; the error
		// says so, and an Operate limiter's observers are told.
		_ = hold.Settle(context.WithoutCancel(r.Context()), 1)
	}()
	h.next.ServeHTTP(w, r.WithContext(ctx))
}
