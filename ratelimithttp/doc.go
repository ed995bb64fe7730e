// Package ratelimithttp turns rate-limit decisions into HTTP responses, and
// offers a plain net/http middleware for a per-route limit without code
// generation. It works with any runtime.Limiter and imports no backend.
//
// # Which function to call
//
//   - WriteError, in a handler that called a rate-limited method such as a
//     ratelimitgen wrapper: it answers denials and limiter failures, and
//     returns false for every other error.
//   - QuotaHeaders around the handlers, with RecordDecisions around the
//     Limiter given to the wrappers, so that every response, successful
//     ones included, advertises the quota left.
//   - SetHeaders, to set the RateLimit fields yourself from a Limit and a
//     Decision.
//   - Middleware, to limit a whole route per client IP (ByClientIP), per
//     header (ByHeader) or per any KeyFunc.
//
// # Responses
//
// A denied call answers 429 Too Many Requests with Retry-After in whole
// seconds, rounded up so that a client that honours it is never early; the
// RateLimit-Policy and RateLimit fields of the IETF httpapi draft
// "RateLimit header fields for HTTP" (draft-ietf-httpapi-ratelimit-headers-11);
// and an RFC 9457 problem body that says which limit was hit and when to
// retry:
//
//	HTTP/1.1 429 Too Many Requests
//	Content-Type: application/problem+json
//	Ratelimit: "Notifier.SendCode";r=0;t=42
//	Ratelimit-Policy: "Notifier.SendCode";q=3;w=60
//	Retry-After: 42
//
//	{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded",
//	 "title":"Request cannot be satisfied as assigned quota has been exceeded",
//	 "status":429,
//	 "detail":"Too many requests for Notifier.SendCode: at most 3 per 1m0s. Retry in 42 s.",
//	 "violated-policies":["Notifier.SendCode"],
//	 "retry_after_seconds":42,"quota":3,"window_seconds":60}
//
// The body's members are those of RFC 9457 (type, title, status, detail),
// the draft's violated-policies, and retry_after_seconds, quota and
// window_seconds, which repeat Retry-After and the q and w of
// RateLimit-Policy for clients that read only the body.
//
// A denial by a concurrency limit (requests in flight) has no Retry-After
// and no t, since nothing predicts when a request in flight ends; its
// policy says qu="concurrent-requests" in place of a window:
//
//	Ratelimit: "Exports";r=0
//	Ratelimit-Policy: "Exports";q=2;qu="concurrent-requests"
//
// A limiter that could not decide (for example Redis unreachable under
// redislimit.FailClosed) answers 503 Service Unavailable with an
// "about:blank" problem body, never 429: the client did nothing wrong and
// its quota is unknown. Other errors are left to the caller.
//
// No response ever contains the rate-limit key, which often holds personal
// data such as an e-mail or IP address, nor the limiter's error text.
package ratelimithttp
