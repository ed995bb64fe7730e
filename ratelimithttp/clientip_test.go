package ratelimithttp_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
)

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func clientKey(t *testing.T, f ratelimithttp.KeyFunc, remoteAddr string, header http.Header) string {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = remoteAddr
	r.Header = header
	k, err := f(r)
	require.NoError(t, err)
	return k
}

func TestByClientIPDefaultIgnoresProxyHeaders(t *testing.T) {
	f := ratelimithttp.ByClientIP()
	spoof := http.Header{"X-Forwarded-For": {"203.0.113.9"}, "X-Real-Ip": {"203.0.113.8"}}
	assert.Equal(t, "192.0.2.1", clientKey(t, f, "192.0.2.1:1234", spoof))
	assert.Equal(t, "10.0.0.1", clientKey(t, f, "10.0.0.1:1234", spoof), "no peer is trusted by default, private or not")
	assert.Equal(t, "2001:db8::1", clientKey(t, f, "[2001:db8::1]:443", nil))
	assert.Equal(t, "192.0.2.1", clientKey(t, f, "[::ffff:192.0.2.1]:443", nil), "IPv4-mapped addresses are unmapped")
	assert.Equal(t, "fe80::1", clientKey(t, f, "[fe80::1%eth0]:443", nil), "zones are dropped")
	assert.Equal(t, "192.0.2.1", clientKey(t, f, "192.0.2.1", nil), "a RemoteAddr without port")
}

func TestByClientIPRejectsNonIPRemoteAddr(t *testing.T) {
	for _, addr := range []string{"", "@", "/run/app.sock", "example.com:80"} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = addr
		_, err := ratelimithttp.ByClientIP()(r)
		assert.ErrorContains(t, err, "which is not an IP address", "RemoteAddr %q", addr)
	}
}

func TestByClientIPTrustedForwardedFor(t *testing.T) {
	f := ratelimithttp.ByClientIP(ratelimithttp.TrustProxyHeader("X-Forwarded-For",
		mustPrefix("10.0.0.0/8"), mustPrefix("2001:db8:ffff::/48")))
	cases := []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"untrusted peer: header ignored", "198.51.100.1:1", []string{"203.0.113.9"}, "198.51.100.1"},
		{"one trusted proxy", "10.0.0.5:1", []string{"203.0.113.9"}, "203.0.113.9"},
		{"client-sent prefix is skipped", "10.0.0.5:1", []string{"198.51.100.66, 203.0.113.9"}, "203.0.113.9"},
		{"chain of trusted proxies", "10.0.0.5:1", []string{"203.0.113.9, 10.1.2.3,10.0.0.7"}, "203.0.113.9"},
		{"several header lines form one list", "10.0.0.5:1", []string{"198.51.100.66", "203.0.113.9"}, "203.0.113.9"},
		{"no header: the proxy itself", "10.0.0.5:1", nil, "10.0.0.5"},
		{"garbage hop: stop at last trusted", "10.0.0.5:1", []string{"203.0.113.9, unknown"}, "10.0.0.5"},
		{"garbage after a trusted hop", "10.0.0.5:1", []string{"bogus, 10.0.0.7"}, "10.0.0.7"},
		{"all trusted: leftmost", "10.0.0.5:1", []string{"10.9.9.9, 10.0.0.7"}, "10.9.9.9"},
		{"empty entries are garbage", "10.0.0.5:1", []string{""}, "10.0.0.5"},
		{"hop with port", "10.0.0.5:1", []string{"203.0.113.9:4711"}, "203.0.113.9"},
		{"bracketed IPv6 hop with port", "10.0.0.5:1", []string{"[2001:db8::7]:443"}, "2001:db8::7"},
		{"bracketed IPv6 hop", "10.0.0.5:1", []string{"[2001:db8::7]"}, "2001:db8::7"},
		{"IPv6 trusted proxy", "[2001:db8:ffff::1]:1", []string{"2001:db8::7"}, "2001:db8::7"},
		{"IPv4-mapped peer is trusted by its IPv4 prefix", "[::ffff:10.0.0.5]:1", []string{"203.0.113.9"}, "203.0.113.9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.xff {
				h.Add("X-Forwarded-For", v)
			}
			assert.Equal(t, tc.want, clientKey(t, f, tc.peer, h))
		})
	}
}

func TestByClientIPTrustedRealIP(t *testing.T) {
	f := ratelimithttp.ByClientIP(ratelimithttp.TrustProxyHeader("x-real-ip", mustPrefix("127.0.0.1/32")))
	assert.Equal(t, "203.0.113.9", clientKey(t, f, "127.0.0.1:1", http.Header{"X-Real-Ip": {"203.0.113.9"}}))
	assert.Equal(t, "192.0.2.4", clientKey(t, f, "192.0.2.4:1", http.Header{"X-Real-Ip": {"203.0.113.9"}}), "untrusted peer")
	assert.Equal(t, "127.0.0.1", clientKey(t, f, "127.0.0.1:1",
		http.Header{"X-Forwarded-For": {"203.0.113.9"}}), "only the named header is trusted")
}

func TestByClientIPMappedTrustedPrefix(t *testing.T) {
	f := ratelimithttp.ByClientIP(ratelimithttp.TrustProxyHeader("X-Forwarded-For", mustPrefix("::ffff:10.0.0.0/104")))
	assert.Equal(t, "203.0.113.9", clientKey(t, f, "10.0.0.5:1", http.Header{"X-Forwarded-For": {"203.0.113.9"}}))
}

func TestByClientIPv6Prefix(t *testing.T) {
	f := ratelimithttp.ByClientIP(ratelimithttp.IPv6Prefix(64))
	assert.Equal(t, "2001:db8:1:2::/64", clientKey(t, f, "[2001:db8:1:2:3:4:5:6]:1", nil))
	assert.Equal(t, "2001:db8:1:2::/64", clientKey(t, f, "[2001:db8:1:2:ffff::1]:1", nil), "same /64, same key")
	assert.Equal(t, "192.0.2.1", clientKey(t, f, "192.0.2.1:1", nil), "IPv4 is keyed whole")
	assert.Equal(t, "192.0.2.1", clientKey(t, f, "[::ffff:192.0.2.1]:1", nil))
	assert.Equal(t, "2001:db8::1", clientKey(t, ratelimithttp.ByClientIP(ratelimithttp.IPv6Prefix(128)), "[2001:db8::1]:1", nil))
}

func TestClientIPOptionsPanicOnWiringMistakes(t *testing.T) {
	assert.Panics(t, func() { ratelimithttp.TrustProxyHeader(" ", mustPrefix("10.0.0.0/8")) })
	assert.Panics(t, func() { ratelimithttp.TrustProxyHeader("X-Forwarded-For", netip.Prefix{}) })
	assert.Panics(t, func() { ratelimithttp.IPv6Prefix(0) })
	assert.Panics(t, func() { ratelimithttp.IPv6Prefix(129) })
	assert.NotPanics(t, func() { ratelimithttp.ByClientIP(nil) })
}
