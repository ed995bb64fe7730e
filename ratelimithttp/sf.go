package ratelimithttp

import (
	"net/http"
	"strings"
)

// The RateLimit fields are RFC 9651 lists with one item per policy, each a
// quoted policy name with parameters. This file writes and finds such
// items; SetHeaders decides what they say.

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

// setItem appends item to the list field, one item per field line,
// dropping earlier lines that start with the same sf-string name so that a
// policy is reported once.
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

// hasItem reports whether the list field holds an item named name, an
// sf-string as sfString writes it, whether the field's items came one per
// line (as setItem writes them) or comma-separated in one line.
func hasItem(h http.Header, field, name string) bool {
	for _, v := range h.Values(field) {
		for start := 0; start < len(v); {
			for start < len(v) && (v[start] == ' ' || v[start] == '\t') {
				start++
			}
			end := itemEnd(v, start)
			item := v[start:end]
			if len(item) >= len(name) && item[:len(name)] == name &&
				(len(item) == len(name) || item[len(name)] == ';' || item[len(name)] == ' ' || item[len(name)] == '\t') {
				return true
			}
			start = end + 1
		}
	}
	return false
}

// itemEnd returns the index of the comma that ends the list item starting
// at start, or len(v); commas inside sf-strings do not count.
func itemEnd(v string, start int) int {
	quoted := false
	for i := start; i < len(v); i++ {
		switch c := v[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == ',':
			return i
		}
	}
	return len(v)
}
