package ratelimithttp_test

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// TestMiddlewareOneCountPerIPv6Network: with the in-memory limiter, two
// addresses of one /64 share one count, and another /64 has its own.
func TestMiddlewareOneCountPerIPv6Network(t *testing.T) {
	h := ratelimithttp.Middleware(memlimit.New(), login, ratelimithttp.ByClientIP())(&okHandler{})
	for i, peer := range []string{"[2001:db8::1]:1000", "[2001:db8::2]:1001", "[2001:db8::1]:1002"} {
		require.Equal(t, http.StatusOK, serve(h, peer, nil).Code, "request %d from %s", i+1, peer)
	}
	assert.Equal(t, http.StatusTooManyRequests, serve(h, "[2001:db8::2]:1003", nil).Code, "the /64's fourth request")
	assert.Equal(t, http.StatusTooManyRequests, serve(h, "[2001:db8::ffff:1]:1004", nil).Code, "any address of the /64")
	assert.Equal(t, http.StatusOK, serve(h, "[2001:db8:0:1::1]:1005", nil).Code, "the next /64 has its own count")

	whole := ratelimithttp.Middleware(memlimit.New(), login, ratelimithttp.ByClientIP(ratelimithttp.IPv6Prefix(128)))(&okHandler{})
	for i := range login.Max {
		require.Equal(t, http.StatusOK, serve(whole, "[2001:db8::1]:1", nil).Code, "request %d", i+1)
	}
	assert.Equal(t, http.StatusTooManyRequests, serve(whole, "[2001:db8::1]:1", nil).Code)
	assert.Equal(t, http.StatusOK, serve(whole, "[2001:db8::2]:1", nil).Code, "IPv6Prefix(128): each address its own count")
}

// listen starts h on a real listener on network ("tcp4", "tcp6") address.
func listen(t *testing.T, network, address string, h http.Handler) string {
	t.Helper()
	lis, err := net.Listen(network, address)
	require.NoError(t, err)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + lis.Addr().String()
}

func get(t *testing.T, url string, header http.Header) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/login", nil)
	require.NoError(t, err)
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp.StatusCode
}

// TestByClientIPOverIPv6Loopback: real requests from [::1], straight to
// the service and through a real reverse proxy (httputil.ReverseProxy,
// which appends the client to X-Forwarded-For) that the service trusts,
// reach the limiter with the same key and share one count; a header the
// client sends itself changes neither.
func TestByClientIPOverIPv6Loopback(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []ratelimithttp.ClientIPOption
		want string
	}{
		{"default /64", nil, "::/64"},
		{"IPv6Prefix(128)", []ratelimithttp.ClientIPOption{ratelimithttp.IPv6Prefix(128)}, "::1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := newCountLimiter(time.Second, time.Minute)
			opts := append([]ratelimithttp.ClientIPOption{
				ratelimithttp.TrustProxyHeader("X-Forwarded-For", mustPrefix("127.0.0.1/32")),
			}, tc.opts...)
			svc := ratelimithttp.Middleware(lim, login, ratelimithttp.ByClientIP(opts...))(&okHandler{})
			direct := listen(t, "tcp6", "[::1]:0", svc) // clients
			behind := listen(t, "tcp4", "127.0.0.1:0", svc)
			target, err := url.Parse(behind)
			require.NoError(t, err)
			proxied := listen(t, "tcp6", "[::1]:0", httputil.NewSingleHostReverseProxy(target))

			spoof := http.Header{"X-Forwarded-For": {"2001:db8::66"}}
			assert.Equal(t, http.StatusOK, get(t, direct, nil))
			assert.Equal(t, http.StatusOK, get(t, proxied, nil))
			assert.Equal(t, http.StatusOK, get(t, direct, spoof), "from an untrusted peer the header is ignored")
			assert.Equal(t, http.StatusTooManyRequests, get(t, proxied, spoof), "what the client prepends is skipped")
			assert.Equal(t, http.StatusTooManyRequests, get(t, direct, nil))
			assert.Equal(t, []string{tc.want, tc.want, tc.want, tc.want, tc.want}, lim.seenKeys())
		})
	}
}

// TestByClientIPProxiedSharesTheDirectCount: requests from two addresses
// of one /64, one connected directly and one through a trusted proxy,
// count against one limit.
func TestByClientIPProxiedSharesTheDirectCount(t *testing.T) {
	lim := newCountLimiter(time.Second, time.Minute)
	h := ratelimithttp.Middleware(lim, login, ratelimithttp.ByClientIP(
		ratelimithttp.TrustProxyHeader("X-Forwarded-For", mustPrefix("::1/128"))))(&okHandler{})
	base := listen(t, "tcp6", "[::1]:0", h)
	assert.Equal(t, http.StatusOK, get(t, base, http.Header{"X-Forwarded-For": {"2001:db8::1"}}))
	assert.Equal(t, http.StatusOK, serve(h, "[2001:db8::2]:4711", nil).Code)
	assert.Equal(t, http.StatusOK, get(t, base, http.Header{"X-Forwarded-For": {"[2001:db8::3]:80"}}))
	assert.Equal(t, http.StatusTooManyRequests, serve(h, "[2001:db8::1]:4711", nil).Code)
	assert.Equal(t, http.StatusOK, get(t, base, http.Header{"X-Forwarded-For": {"2001:db8:0:1::1"}}))
	assert.Equal(t, []string{"2001:db8::/64", "2001:db8::/64", "2001:db8::/64", "2001:db8::/64", "2001:db8:0:1::/64"}, lim.seenKeys())
}
