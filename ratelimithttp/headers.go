package ratelimithttp

import (
	"net/http"
	"strconv"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// Field names of draft-ietf-httpapi-ratelimit-headers-11. net/http
// canonicalises them to "Ratelimit-Policy" and "Ratelimit" in http.Header;
// field names are case-insensitive (and HTTP/2 lowercases them anyway), so
// clients match either spelling.
const (
	fieldPolicy    = "RateLimit-Policy"
	fieldRateLimit = "RateLimit"
	fieldRetry     = "Retry-After"
)

// SetHeaders sets in h the RateLimit-Policy and RateLimit fields of
// draft-ietf-httpapi-ratelimit-headers-11 for limit l and its decision d:
//
//	RateLimit-Policy: "Notifier.SendCode";q=3;w=60
//	RateLimit: "Notifier.SendCode";r=2;t=60
//
// q is l.Max, w is l.Window and r is d.Remaining (clamped to [0, l.Max]).
// For a limit of runtime.Concurrency, q is the requests it lets be in
// flight, with qu="concurrent-requests" in place of w, and t is left out.
// t is d.RetryAfter when d denied the call (at least 1, and equal to the
// Retry-After of the 429), else d.ResetAfter, the time until the full
// quota is back (left out when not positive). Durations are in seconds,
// rounded up, so a client that trusts them is never early.
//
// The policy name is l.Name as an RFC 9651 sf-string; bytes outside
// printable ASCII, and '%', are written as %xx, so distinct names stay
// distinct. An item already in h for the same name is replaced, and items
// of other names are kept, so one response can report several limits. An
// invalid l (l.Validate fails) leaves h unchanged. The key is never written.
func SetHeaders(h http.Header, l runtime.Limit, d runtime.Decision) {
	if l.Validate() != nil {
		return
	}
	name := sfString(policyName(l.Name))

	inFlight := l.Algorithm == runtime.Concurrency
	policy := name + ";q=" + strconv.Itoa(l.Max)
	if inFlight {
		// The draft's quota unit for requests in flight; a window has no
		// meaning for them.
		policy += `;qu="concurrent-requests"`
	} else {
		policy += ";w=" + strconv.FormatInt(ceilSeconds(l.Window), 10)
	}
	setItem(h, fieldPolicy, name, policy)

	remaining := min(max(d.Remaining, 0), l.Max)
	item := name + ";r=" + strconv.Itoa(remaining)
	switch {
	case inFlight:
		// No t: a permit comes back when a request ends, which nothing
		// predicts.
	case !d.Allowed:
		item += ";t=" + strconv.FormatInt(retryAfterSeconds(d.RetryAfter), 10)
	case d.ResetAfter > 0:
		// With a sliding window some room may come back sooner; the time
		// until the full quota is back errs on the client's side: spending
		// at most r units within t seconds never meets a 429.
		item += ";t=" + strconv.FormatInt(ceilSeconds(d.ResetAfter), 10)
	}
	setItem(h, fieldRateLimit, name, item)
}

// ceilSeconds rounds d up to whole seconds, so that a client waiting that
// long is never early. Non-positive durations give 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}

// retryAfterSeconds is the delay-seconds value sent to a denied client: d
// rounded up, and at least 1, because "retry in 0 seconds" on a 429 invites
// a busy loop.
func retryAfterSeconds(d time.Duration) int64 {
	return max(1, ceilSeconds(d))
}
