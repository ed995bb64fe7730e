// Package ratelimithttp turns rate-limit decisions into HTTP responses, and
// offers a plain net/http middleware for a per-route limit without code
// generation.
//
// # Responses
//
// A call denied by a limit answers 429 Too Many Requests with Retry-After
// in whole seconds, rounded up so that a client that honours it is never
// early; the RateLimit-Policy and RateLimit fields of the IETF httpapi draft
// "RateLimit header fields for HTTP" (draft-ietf-httpapi-ratelimit-headers-11,
// 23 May 2026); and an RFC 9457 problem body (application/problem+json)
// that says in plain words which limit was hit and when to retry:
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
// A limiter that could not decide (for example Redis was unreachable under
// runtime.FailClosed) answers 503 Service Unavailable, never 429: the client
// did nothing wrong and its quota is unknown.
//
// Neither response ever contains the rate-limit key, which often holds
// personal data such as an e-mail address or an IP address.
//
// # Which function to call
//
//   - WriteError, in a handler that called a rate-limited method (for
//     example a ratelimitgen wrapper): it answers limit denials and limiter
//     failures, and reports false for every other error so the handler can
//     answer it as it would without rate limiting.
//   - RecordDecisions around the Limiter given to the wrappers, plus the
//     QuotaHeaders middleware, to advertise the quota on every response,
//     successful ones included, without touching the handlers.
//   - SetHeaders, to set those fields yourself from a Limit and a Decision.
//   - Middleware, to limit a whole route by client IP, a header or any
//     KeyFunc.
package ratelimithttp
