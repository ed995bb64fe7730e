package ratelimithttp

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// WriteError answers the request if err is a rate-limit outcome, and
// reports whether it wrote a response. Errors are matched through wrapping:
//
//   - a *runtime.LimitError: 429 Too Many Requests with Retry-After (the
//     denial's RetryAfter in seconds, rounded up, at least 1), the
//     RateLimit fields of its Limit and Decision (see SetHeaders), and a
//     problem body naming the limit and the wait; for a concurrency limit,
//     with no Retry-After and no wait;
//   - another error matching runtime.ErrLimited: 429 with a generic body
//     and no Retry-After or RateLimit fields, as it carries no wait;
//   - an error matching runtime.ErrUnavailable (the limiter could not
//     decide): 503 Service Unavailable, never 429;
//   - nil or any other error: nothing is written and WriteError returns
//     false, so the caller answers it as it would without rate limiting
//     (usually a 500).
//
// Responses never contain the key or the error's text. r may be nil; a
// HEAD request gets no body. Typical use, after a generated wrapper's call:
//
//	if err := codes.SendCode(r.Context(), email); err != nil {
//		if ratelimithttp.WriteError(w, r, err) {
//			return
//		}
//		http.Error(w, "could not send the code", http.StatusInternalServerError)
//		return
//	}
func WriteError(w http.ResponseWriter, r *http.Request, err error) bool {
	if err == nil {
		return false
	}
	var le *runtime.LimitError
	switch {
	case errors.As(err, &le):
		writeLimited(w, r, le)
	case errors.Is(err, runtime.ErrLimited):
		writeLimited(w, r, nil)
	case errors.Is(err, runtime.ErrUnavailable):
		writeUnavailable(w, r)
	default:
		return false
	}
	return true
}

// writeLimited answers 429 Too Many Requests for the denial e: Retry-After
// in whole seconds, rounded up and at least 1 (1.2s gives 2, 1ms gives 1);
// the RateLimit fields of e.Limit and e.Decision, whose t equals
// Retry-After and whose r is the quota left (0 unless the denied call cost
// more than one unit); and a problem body of type problemTypeQuotaExceeded.
// A nil e, or one whose Limit is invalid, gets a 429 with what can still
// be said: no RateLimit fields, and no Retry-After when e is nil. A denial
// of a concurrency limit has no Retry-After (see SetHeaders).
func writeLimited(w http.ResponseWriter, r *http.Request, e *runtime.LimitError) {
	p := problem{
		Type:   problemTypeQuotaExceeded,
		Title:  "Request cannot be satisfied as assigned quota has been exceeded",
		Status: http.StatusTooManyRequests,
		Detail: "Too many requests. Retry later.",
	}
	if e == nil {
		writeProblem(w, r, p)
		return
	}
	d := e.Decision
	d.Allowed = false // a LimitError is a denial, however it was built
	if l := e.Limit; l.Algorithm == runtime.Concurrency && l.Validate() == nil {
		// No Retry-After: a permit comes back when a call in flight ends,
		// which nothing predicts.
		SetHeaders(w.Header(), l, d)
		p.Detail = fmt.Sprintf("Too many requests in flight for %s: at most %d at once. Retry once one ends.", l.Name, l.Max)
		p.ViolatedPolicies = []string{policyName(l.Name)}
		p.Quota = l.Max
		writeProblem(w, r, p)
		return
	}
	retry := retryAfterSeconds(d.RetryAfter)
	w.Header().Set(fieldRetry, strconv.FormatInt(retry, 10))
	p.RetryAfterSeconds = retry
	p.Detail = fmt.Sprintf("Too many requests. Retry in %d s.", retry)
	if l := e.Limit; l.Validate() == nil {
		SetHeaders(w.Header(), l, d)
		p.Detail = fmt.Sprintf("Too many requests for %s: at most %d per %v. Retry in %d s.", l.Name, l.Max, l.Window, retry)
		p.ViolatedPolicies = []string{policyName(l.Name)}
		p.Quota = l.Max
		p.WindowSeconds = ceilSeconds(l.Window)
	}
	writeProblem(w, r, p)
}

// writeUnavailable answers 503 Service Unavailable for a limiter that could
// not decide. The client is not told it exceeded anything, since its quota
// is unknown, and the body leaves out the limiter's error, which describes
// the server's infrastructure.
func writeUnavailable(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, r, problem{
		Type:   "about:blank",
		Title:  "Service Unavailable",
		Status: http.StatusServiceUnavailable,
		Detail: "The rate limiter could not decide whether to accept this request, so it was not processed. Please retry later.",
	})
}
