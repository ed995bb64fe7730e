package main

// problem is the RFC 9457 body this service answers errors with, the same
// members ratelimithttp writes for its 429s and 503s (see its package
// documentation), so that clients parse one error format.
type problem struct {
	Type             string   `json:"type"`
	Title            string   `json:"title"`
	Status           int      `json:"status"`
	Detail           string   `json:"detail"`
	ViolatedPolicies []string `json:"violated-policies,omitempty"`
}

const contentTypeProblem = "application/problem+json"
