package ratelimithttp

import (
	"net/http"
	"strconv"
	"strings"
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

// SetHeaders sets the RateLimit-Policy and RateLimit fields of
// draft-ietf-httpapi-ratelimit-headers-11 (23 May 2026) that describe l and
// d, so that successful responses advertise the remaining quota too:
//
//	RateLimit-Policy: "Notifier.SendCode";q=3;w=60
//	RateLimit: "Notifier.SendCode";r=2;t=60
//
// The policy item is l.Name as an sf-string (RFC 9651) with q = l.Max and
// w = l.Window in seconds, rounded up. The service-limit item carries
// r = d.Remaining (clamped to [0, l.Max]) and t, the draft's "effective
// window" in seconds, rounded up:
//
//   - when d is a denial, t is d.RetryAfter (at least 1): the time until the
//     key has room again, which is also the Retry-After value WriteError
//     sends, as the draft asks;
//   - when d admitted the call, t is d.ResetAfter, the time until the full
//     quota is back. With a sliding window some room may come back sooner,
//     so this t errs on the side of a client that never sees a 429 for
//     this limit if it spends at most r units within t seconds. t is left
//     out when d.ResetAfter is not positive, since the draft makes it
//     optional.
//
// Names are written byte for byte when they are printable ASCII; '"' and
// '\' are escaped as sf-strings require, and every other byte (control
// characters, non-ASCII, and '%' itself) is percent-encoded as %xx so that
// distinct names stay distinct. The key is never written.
//
// An item already in h for the same policy name is replaced, and items of
// other policies are kept, so one response can report several limits
// (for example a route limit from Middleware and a method limit from a
// generated wrapper). If l is invalid (l.Validate fails) h is left
// unchanged: such a limit describes no policy, and no Limiter accepts it.
func SetHeaders(h http.Header, l runtime.Limit, d runtime.Decision) {
	if l.Validate() != nil {
		return
	}
	name := sfString(policyName(l.Name))

	policy := name + ";q=" + strconv.Itoa(l.Max) + ";w=" + strconv.FormatInt(ceilSeconds(l.Window), 10)
	setItem(h, fieldPolicy, name, policy)

	remaining := min(max(d.Remaining, 0), l.Max)
	item := name + ";r=" + strconv.Itoa(remaining)
	switch {
	case !d.Allowed:
		item += ";t=" + strconv.FormatInt(retryAfterSeconds(d.RetryAfter), 10)
	case d.ResetAfter > 0:
		item += ";t=" + strconv.FormatInt(ceilSeconds(d.ResetAfter), 10)
	}
	setItem(h, fieldRateLimit, name, item)
}

// setItem appends item to the list field, dropping earlier items that start
// with the same sf-string name so that a policy is reported once.
func setItem(h http.Header, field, name, item string) {
	key := http.CanonicalHeaderKey(field)
	prefix := name + ";"
	old := h[key]
	kept := make([]string, 0, len(old)+1)
	for _, v := range old {
		if !strings.HasPrefix(v, prefix) {
			kept = append(kept, v)
		}
	}
	h[key] = append(kept, item)
}

// policyName is the form of a Limit.Name used in the RateLimit fields and
// in the problem body's "violated-policies": printable ASCII stays as is,
// every other byte and '%' become %xx (lowercase hex, as RFC 9651 Display
// Strings do), so the result fits an sf-string and is injective.
func policyName(name string) string {
	clean := true
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c > 0x7e || c == '%' {
			clean = false
			break
		}
	}
	if clean {
		return name
	}
	const hex = "0123456789abcdef"
	var b strings.Builder
	b.Grow(len(name) + 16)
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c > 0x7e || c == '%' {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// sfString serialises s, which must be printable ASCII (see policyName), as
// an RFC 9651 sf-string: in double quotes, with '"' and '\' escaped.
func sfString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
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
