package main

import (
	"context"
	"net/http"

	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// A generated wrapper returns only an error: a denial carries its Decision
// in the *runtime.LimitError, but an admitted call returns nothing of it.
// To advertise the remaining quota on successful responses too, the
// handler puts a *quota in the request's context, the wrapper passes that
// context to the limiter, and quotaLimiter records the decision there.

// quotaLimiter is a runtime.Limiter that records each decision in the
// *quota of the call's context, if there is one. It implements
// runtime.NLimiter too, so that directives with cost= keep working.
type quotaLimiter struct{ runtime.Limiter }

// Allow implements runtime.Limiter.
func (l quotaLimiter) Allow(ctx context.Context, lim runtime.Limit, key string) (runtime.Decision, error) {
	return l.AllowN(ctx, lim, key, 1)
}

// AllowN implements runtime.NLimiter.
func (l quotaLimiter) AllowN(ctx context.Context, lim runtime.Limit, key string, n int) (runtime.Decision, error) {
	d, err := runtime.AllowN(ctx, l.Limiter, lim, key, n)
	if q, ok := ctx.Value(quotaKey{}).(*quota); ok && err == nil {
		*q = quota{set: true, limit: lim, decision: d}
	}
	return d, err
}

type quotaKey struct{}

// quota is the last decision taken for one request.
type quota struct {
	set      bool
	limit    runtime.Limit
	decision runtime.Decision
}

// withQuota returns a context in which quotaLimiter records decisions in q.
func withQuota(ctx context.Context) (_ context.Context, q *quota) {
	q = new(quota)
	return context.WithValue(ctx, quotaKey{}, q), q
}

// setHeaders adds the RateLimit-Policy and RateLimit fields of the recorded
// decision to h; it does nothing if no limiter decided.
func (q *quota) setHeaders(h http.Header) {
	if q.set {
		ratelimithttp.SetHeaders(h, q.limit, q.decision)
	}
}
