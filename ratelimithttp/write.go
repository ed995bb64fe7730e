package ratelimithttp

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// WriteError answers the request if err is a rate-limit outcome, and
// reports whether it wrote a response. Call it with the error of a
// rate-limited call, such as a method of a ratelimitgen wrapper:
//
//	if err := notifier.SendCode(ctx, req); err != nil {
//		if ratelimithttp.WriteError(w, r, err) {
//			return
//		}
//		http.Error(w, "could not send the code", http.StatusInternalServerError)
//		return
//	}
//
// The mapping, with errors matched through wrapping (errors.As, errors.Is):
//
//   - a *runtime.LimitError: 429 as WriteLimited writes it;
//   - any other error matching runtime.ErrLimited: a 429 with a generic
//     body and neither Retry-After nor RateLimit fields, since it carries
//     no limit or wait to report;
//   - an error matching runtime.ErrUnavailable (the limiter could not
//     decide, e.g. Redis down under runtime.FailClosed): 503 as
//     WriteUnavailable writes it, never 429;
//   - nil and every other error: nothing is written and WriteError returns
//     false. Such errors come from the wrapped method itself, or are
//     programming errors such as an invalid Limit, and the caller knows
//     better than this package what they mean.
//
// When a limiter is called directly and any error it returns means "no
// decision", call WriteUnavailable for that error instead, as Middleware
// does. r is the request being answered; a HEAD request gets no body, and
// r may be nil.
func WriteError(w http.ResponseWriter, r *http.Request, err error) bool {
	if err == nil {
		return false
	}
	var le *runtime.LimitError
	switch {
	case errors.As(err, &le):
		WriteLimited(w, r, le)
	case errors.Is(err, runtime.ErrLimited):
		WriteLimited(w, r, nil)
	case errors.Is(err, runtime.ErrUnavailable):
		WriteUnavailable(w, r)
	default:
		return false
	}
	return true
}

// WriteLimited answers 429 Too Many Requests for the denial e:
//
//   - Retry-After: e.RetryAfter in whole seconds, rounded up and at least 1
//     (1.2s gives 2, 1ms gives 1), so that a client honouring it is never
//     early;
//   - RateLimit-Policy and RateLimit for e.Limit and e.Decision, as
//     SetHeaders writes them: t equals Retry-After, and r is the quota
//     left, which is 0 unless the denied call cost more than one unit;
//   - a problem body of type ProblemTypeQuotaExceeded whose detail reads,
//     for example, "Too many requests for Notifier.SendCode: at most 3 per
//     1m0s. Retry in 42 s.", with the members violated-policies,
//     retry_after_seconds, quota and window_seconds.
//
// The key that was limited appears nowhere in the response. A nil e (or one
// whose Limit is invalid) gets a 429 with what can still be said: no
// RateLimit fields, and no Retry-After when e is nil.
func WriteLimited(w http.ResponseWriter, r *http.Request, e *runtime.LimitError) {
	p := Problem{
		Type:   ProblemTypeQuotaExceeded,
		Title:  "Request cannot be satisfied as assigned quota has been exceeded",
		Status: http.StatusTooManyRequests,
		Detail: "Too many requests. Retry later.",
	}
	if e == nil {
		writeProblem(w, r, p)
		return
	}
	retry := retryAfterSeconds(e.RetryAfter)
	w.Header().Set(fieldRetry, strconv.FormatInt(retry, 10))
	p.RetryAfterSeconds = retry
	p.Detail = fmt.Sprintf("Too many requests. Retry in %d s.", retry)
	if l := e.Limit; l.Validate() == nil {
		d := e.Decision
		d.Allowed = false
		d.RetryAfter = e.RetryAfter
		SetHeaders(w.Header(), l, d)
		p.Detail = fmt.Sprintf("Too many requests for %s: at most %d per %v. Retry in %d s.", l.Name, l.Max, l.Window, retry)
		p.ViolatedPolicies = []string{policyName(l.Name)}
		p.Quota = l.Max
		p.WindowSeconds = ceilSeconds(l.Window)
	}
	writeProblem(w, r, p)
}

// WriteUnavailable answers 503 Service Unavailable for a limiter that could
// not decide whether to admit the request. The request was not processed,
// and the client is not told it exceeded anything, because its quota is
// unknown. The body does not include the limiter's error, which describes
// the server's infrastructure; log it where the error is at hand (see
// OnLimiterError for Middleware).
func WriteUnavailable(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, r, Problem{
		Type:   "about:blank",
		Title:  "Service Unavailable",
		Status: http.StatusServiceUnavailable,
		Detail: "The rate limiter could not decide whether to accept this request, so it was not processed. Please retry later.",
	})
}
