package ratelimithttp

import (
	"encoding/json"
	"net/http"
)

// problemTypeQuotaExceeded is the problem type of 429 bodies: the "Quota
// Exceeded" type of draft-ietf-httpapi-ratelimit-headers-11, section 5.1.
// Other bodies use "about:blank", whose meaning is the status code alone
// (RFC 9457, section 4.2.1).
const problemTypeQuotaExceeded = "https://iana.org/assignments/http-problem-types#quota-exceeded"

// contentTypeProblem is the media type of every body this package writes.
const contentTypeProblem = "application/problem+json"

// problem is the RFC 9457 problem details object of the bodies this
// package writes; the package documentation lists its members for
// clients. Members that do not apply to a response are left out.
type problem struct {
	// Type is problemTypeQuotaExceeded for a 429, "about:blank" otherwise.
	Type string `json:"type"`
	// Title is a short summary that is the same for every problem of Type.
	Title string `json:"title"`
	// Status repeats the HTTP status code.
	Status int `json:"status"`
	// Detail explains this occurrence to a person.
	Detail string `json:"detail"`
	// ViolatedPolicies names the limit that denied the request, written as
	// in the RateLimit fields: the draft's extension member.
	ViolatedPolicies []string `json:"violated-policies,omitempty"`
	// RetryAfterSeconds repeats Retry-After for clients that read only the
	// body.
	RetryAfterSeconds int64 `json:"retry_after_seconds,omitempty"`
	// Quota is the limit's Max, the q of RateLimit-Policy.
	Quota int `json:"quota,omitempty"`
	// WindowSeconds is the limit's Window in seconds, rounded up: the w of
	// RateLimit-Policy.
	WindowSeconds int64 `json:"window_seconds,omitempty"`
}

// writeProblem sends p with p.Status. A HEAD request gets the fields only.
func writeProblem(w http.ResponseWriter, r *http.Request, p problem) {
	// problem holds only strings, string slices and integers, which always
	// marshal (invalid UTF-8 becomes U+FFFD).
	body, _ := json.Marshal(p)
	h := w.Header()
	h.Set("Content-Type", contentTypeProblem)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Del("Content-Length")
	w.WriteHeader(p.Status)
	if r != nil && r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(append(body, '\n'))
}
