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
	assert.Equal(t, "2001:db8::/64", clientKey(t, f, "[2001:db8::1]:443", nil))
	assert.Equal(t, "192.0.2.1", clientKey(t, f, "[::ffff:192.0.2.1]:443", nil), "IPv4-mapped addresses are unmapped")
	assert.Equal(t, "fe80::1", clientKey(t, ratelimithttp.ByClientIP(ratelimithttp.IPv6Prefix(128)), "[fe80::1%eth0]:443", nil), "zones are dropped")
	assert.Equal(t, "192.0.2.1", clientKey(t, f, "192.0.2.1", nil), "a RemoteAddr without port")
}

func TestByClientIPRejectsNonIPRemoteAddr(t *testing.T) {
	for _, addr := range []string{"", "@", "/run/app.sock", "example.com:80"} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = addr
		_, err := ratelimithttp.ByClientIP()(r)
		require.EqualError(t, err, "cannot key the rate limit on the client IP: the connection's peer address is not an IP address (a Unix socket listener?); key this endpoint on something else", "RemoteAddr %q", addr)
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
		{"bracketed IPv6 hop with port", "10.0.0.5:1", []string{"[2001:db8:0:7::7]:443"}, "2001:db8:0:7::/64"},
		{"bracketed IPv6 hop", "10.0.0.5:1", []string{"[2001:db8:0:7::7]"}, "2001:db8:0:7::/64"},
		{"IPv6 trusted proxy", "[2001:db8:ffff::1]:1", []string{"2001:db8:0:7::7"}, "2001:db8:0:7::/64"},
		{"IPv4-mapped hop is IPv4", "[2001:db8:ffff::1]:1", []string{"::ffff:203.0.113.9"}, "203.0.113.9"},
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

// TestByClientIPKeysIPv6Networks: an IPv6 client is keyed by its /64 unless
// IPv6Prefix says otherwise; IPv4, mapped or not, is keyed whole.
func TestByClientIPKeysIPv6Networks(t *testing.T) {
	def := ratelimithttp.ByClientIP()
	assert.Equal(t, "2001:db8::/64", clientKey(t, def, "[2001:db8::1]:1", nil))
	assert.Equal(t, "2001:db8::/64", clientKey(t, def, "[2001:db8::2]:1", nil), "same /64, same key")
	assert.Equal(t, "2001:db8::/64", clientKey(t, def, "[2001:db8::ffff:ffff:ffff:ffff]:1", nil), "the /64's last address")
	assert.Equal(t, "2001:db8:0:1::/64", clientKey(t, def, "[2001:db8:0:1::1]:1", nil), "the next /64 has its own key")
	assert.Equal(t, "fe80::/64", clientKey(t, def, "[fe80::1%eth0]:1", nil), "zones are dropped")
	assert.Equal(t, "192.0.2.1", clientKey(t, def, "192.0.2.1:1", nil), "IPv4 is keyed whole")
	assert.Equal(t, "192.0.2.2", clientKey(t, def, "192.0.2.2:1", nil))
	assert.Equal(t, "192.0.2.1", clientKey(t, def, "[::ffff:192.0.2.1]:1", nil), "IPv4-mapped is IPv4, whole")

	whole := ratelimithttp.ByClientIP(ratelimithttp.IPv6Prefix(128))
	assert.Equal(t, "2001:db8::1", clientKey(t, whole, "[2001:db8::1]:1", nil))
	assert.Equal(t, "2001:db8::2", clientKey(t, whole, "[2001:db8::2]:1", nil))
	assert.Equal(t, "192.0.2.1", clientKey(t, whole, "[::ffff:192.0.2.1]:1", nil))

	site := ratelimithttp.ByClientIP(ratelimithttp.IPv6Prefix(48))
	assert.Equal(t, "2001:db8:1::/48", clientKey(t, site, "[2001:db8:1:2:3:4:5:6]:1", nil))
	assert.Equal(t, "2001:db8:1::/48", clientKey(t, site, "[2001:db8:1:ffff::1]:1", nil))
	assert.Equal(t, "192.0.2.1", clientKey(t, site, "192.0.2.1:1", nil))
}

// TestByClientIPDirectAndProxiedAgree: a client's key is the same, byte for
// byte, whether it connects directly or its address arrives in a trusted
// header, through an IPv4 or an IPv6 proxy, with any IPv6Prefix.
func TestByClientIPDirectAndProxiedAgree(t *testing.T) {
	clients := []struct{ remoteAddr, hop string }{
		{"192.0.2.1:1", "192.0.2.1"},
		{"192.0.2.1:1", "192.0.2.1:4711"},
		{"[::ffff:192.0.2.1]:1", "::ffff:192.0.2.1"},
		{"[::ffff:192.0.2.1]:1", "[::ffff:192.0.2.1]:4711"},
		{"[2001:db8::1]:1", "2001:db8::1"},
		{"[2001:db8::2]:1", "[2001:db8::2]:4711"},
		{"[2001:db8:1:2:3:4:5:6]:1", "[2001:db8:1:2:3:4:5:6]"},
		{"[fe80::1%eth0]:1", "fe80::1"},
		{"[::1]:1", "::1"},
	}
	for _, bits := range []int{64, 1, 48, 56, 127, 128} {
		trust := ratelimithttp.TrustProxyHeader("X-Forwarded-For", mustPrefix("10.0.0.0/8"), mustPrefix("2001:db8:ffff::/48"))
		f := ratelimithttp.ByClientIP(trust, ratelimithttp.IPv6Prefix(bits))
		for _, c := range clients {
			direct := clientKey(t, f, c.remoteAddr, nil)
			for _, proxy := range []string{"10.0.0.5:1", "[2001:db8:ffff::1]:1", "[::ffff:10.0.0.5]:1"} {
				h := http.Header{"X-Forwarded-For": {"198.51.100.66, " + c.hop + ", 10.0.0.7"}}
				assert.Equal(t, direct, clientKey(t, f, proxy, h), "/%d: %s directly and %s through %s", bits, c.remoteAddr, c.hop, proxy)
			}
		}
	}
}

func TestClientIPKey(t *testing.T) {
	key := ratelimithttp.ClientIPKey(ratelimithttp.TrustProxyHeader("X-Real-IP", mustPrefix("10.0.0.0/8")))
	k, err := key("[2001:db8::1]:443", nil)
	require.NoError(t, err)
	assert.Equal(t, "2001:db8::/64", k)

	var asked []string
	values := func(name string) []string {
		asked = append(asked, name)
		return []string{"2001:db8:0:1::9"}
	}
	k, err = key("192.0.2.1:443", values)
	require.NoError(t, err)
	assert.Equal(t, "192.0.2.1", k, "the header of an untrusted peer is ignored")
	assert.Empty(t, asked, "nor is it read")

	k, err = key("10.0.0.5", values)
	require.NoError(t, err)
	assert.Equal(t, "2001:db8:0:1::/64", k)
	assert.Equal(t, []string{"X-Real-Ip"}, asked, "asked by its canonical name")

	k, err = key("10.0.0.5", nil)
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.5", k, "no headers: the proxy itself")

	_, err = key("@", values)
	require.ErrorContains(t, err, "is not an IP address")
}

func TestClientIPOptionsPanicOnWiringMistakes(t *testing.T) {
	assert.Panics(t, func() { ratelimithttp.TrustProxyHeader(" ", mustPrefix("10.0.0.0/8")) })
	assert.Panics(t, func() { ratelimithttp.TrustProxyHeader("X-Forwarded-For", netip.Prefix{}) })
	assert.Panics(t, func() { ratelimithttp.IPv6Prefix(0) })
	assert.Panics(t, func() { ratelimithttp.IPv6Prefix(129) })
	assert.NotPanics(t, func() { ratelimithttp.ByClientIP(nil) })
}

// TestTrustProxyHeaderRefusesEveryAddress: trusting a prefix that holds a
// whole family would make every client's own header its key, so it is
// refused at construction, with what to pass instead.
func TestTrustProxyHeaderRefusesEveryAddress(t *testing.T) {
	for prefix, family := range map[string]string{
		"0.0.0.0/0":          "IPv4",
		"192.0.2.0/0":        "IPv4",
		"::/0":               "IPv6",
		"2001:db8::/0":       "IPv6",
		"::ffff:0:0/96":      "IPv4",
		"::ffff:0.0.0.0/96":  "IPv4",
		"::ffff:10.0.0.0/96": "IPv4",
		"::ffff:0:0/95":      "IPv4-mapped IPv6",
		"::/80":              "IPv4-mapped IPv6",
		"::/1":               "IPv4-mapped IPv6",
	} {
		assert.PanicsWithValue(t, "ratelimithttp: TrustProxyHeader: proxies[1] ("+mustPrefix(prefix).String()+") holds every "+family+
			" address, so any client could choose its own key by sending X-Forwarded-For; pass only your proxies' networks, e.g. \"10.0.0.0/8\"",
			func() {
				ratelimithttp.TrustProxyHeader("x-forwarded-for", mustPrefix("10.0.0.0/8"), mustPrefix(prefix))
			}, prefix)
	}
	for _, ok := range []string{"10.0.0.0/8", "0.0.0.0/1", "::ffff:10.0.0.0/104", "::/96", "2000::/3", "::1/128", "8000::/1"} {
		assert.NotPanics(t, func() { ratelimithttp.TrustProxyHeader("X-Forwarded-For", mustPrefix(ok)) }, ok)
	}
}
