package ratelimithttp

import (
	"fmt"
	"net/http"
)

// KeyFunc returns the rate-limit key of a request: requests with the same
// key share one count. Any func with this signature is a KeyFunc, so a key
// from the authenticated user, a path value or a combination
// (runtime.Key(a, b)) needs no helper.
//
// A non-nil error means the request cannot be keyed. Middleware then
// answers 400 Bad Request with the error's message as the problem detail,
// unless OnKeyError says otherwise; so the message is shown to the client
// and must say what the request lacks without revealing secrets.
type KeyFunc func(*http.Request) (string, error)

// ByHeader keys requests on the value of the request header name, for
// example an API client identifier. A request without the header, or with
// an empty value, is an error ("missing X-Client-Id header"); with several
// values, the first counts.
//
// The value is the key verbatim, and limiters may store keys as they are
// (runtime/redislimit stores keys of up to 180 bytes in Redis). For a
// secret such as an API key, write a KeyFunc that keys on a hash of it.
func ByHeader(name string) KeyFunc {
	name = http.CanonicalHeaderKey(name)
	return func(r *http.Request) (string, error) {
		v := r.Header.Get(name)
		if v == "" {
			return "", fmt.Errorf("missing %s header: this endpoint's rate limit is counted per %s value", name, name)
		}
		return v, nil
	}
}
