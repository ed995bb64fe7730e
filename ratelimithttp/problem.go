package ratelimithttp

import (
	"encoding/json"
	"net/http"
)

// ProblemTypeQuotaExceeded is the problem type of 429 bodies: the "Quota
// Exceeded" type of draft-ietf-httpapi-ratelimit-headers-11, section 5.1.
// Other bodies use "about:blank", whose meaning is the status code alone
// (RFC 9457, section 4.2.1).
const ProblemTypeQuotaExceeded = "https://iana.org/assignments/http-problem-types#quota-exceeded"

// ContentTypeProblem is the media type of every body this package writes.
const ContentTypeProblem = "application/problem+json"

// Problem is the RFC 9457 problem details object in the bodies this package
// writes. Go clients can decode a response body into it. Members that do
// not apply to a response are left out of its JSON.
type Problem struct {
	// Type identifies the kind of problem: ProblemTypeQuotaExceeded for a
	// 429, "about:blank" otherwise.
	Type string `json:"type"`
	// Title is a short summary that is the same for every problem of Type.
	Title string `json:"title"`
	// Status repeats the HTTP status code.
	Status int `json:"status"`
	// Detail explains this occurrence to a person, for example "Too many
	// requests for Notifier.SendCode: at most 3 per 1m0s. Retry in 42 s."
	Detail string `json:"detail"`
	// ViolatedPolicies names the limits that denied the request, written as
	// in the RateLimit fields (see SetHeaders). It is the draft's extension
	// member of ProblemTypeQuotaExceeded.
	ViolatedPolicies []string `json:"violated-policies,omitempty"`
	// RetryAfterSeconds repeats the Retry-After field for clients that only
	// read the body.
	RetryAfterSeconds int64 `json:"retry_after_seconds,omitempty"`
	// Quota is the limit's Max, the q of RateLimit-Policy.
	Quota int `json:"quota,omitempty"`
	// WindowSeconds is the limit's Window in seconds, rounded up: the w of
	// RateLimit-Policy.
	WindowSeconds int64 `json:"window_seconds,omitempty"`
}

// writeProblem sends p with p.Status. A HEAD request gets the fields only.
func writeProblem(w http.ResponseWriter, r *http.Request, p Problem) {
	// Problem holds only strings, string slices and integers, which always
	// marshal (invalid UTF-8 becomes U+FFFD).
	body, _ := json.Marshal(p)
	h := w.Header()
	h.Set("Content-Type", ContentTypeProblem)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Del("Content-Length")
	w.WriteHeader(p.Status)
	if r != nil && r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(append(body, '\n'))
}
