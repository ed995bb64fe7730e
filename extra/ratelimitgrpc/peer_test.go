package ratelimitgrpc_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc"
	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc/internal/verifypb"
	"github.com/ratelimitgen/ratelimitgen/internal/peertest"
	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// keyRecorder is a Limiter that records the keys it is asked about.
type keyRecorder struct {
	runtime.Limiter
	mu   sync.Mutex
	keys []string
}

func (r *keyRecorder) Decide(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	r.mu.Lock()
	for _, q := range reqs {
		r.keys = append(r.keys, q.Key)
	}
	r.mu.Unlock()
	return r.Limiter.Decide(ctx, reqs...)
}

func (r *keyRecorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.keys...)
}

// dialAs opens a new connection to lis, which reports it as from addr.
func dialAs(t *testing.T, lis *peertest.Listener, addr string) verifypb.VerifierClient {
	t.Helper()
	lis.As(addr)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cc.Close()) })
	return verifypb.NewVerifierClient(cc)
}

func keyOf(t *testing.T, f ratelimitgrpc.KeyFunc, addr net.Addr, md metadata.MD) string {
	t.Helper()
	ctx := peer.NewContext(t.Context(), &peer.Peer{Addr: addr})
	ctx = metadata.NewIncomingContext(ctx, md)
	k, err := f(ctx)
	require.NoError(t, err)
	return k
}

// TestByPeerKeysAsByClientIP: ByPeer keys a connection's address as
// ratelimithttp.ByClientIP keys the same RemoteAddr, byte for byte, with
// each IPv6Prefix, and proxied calls as the direct ones.
func TestByPeerKeysAsByClientIP(t *testing.T) {
	addrs := []struct {
		tcp  *net.TCPAddr
		want string // with the default /64
	}{
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 1}, "2001:db8::/64"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::2"), Port: 2}, "2001:db8::/64"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:0:1::1"), Port: 3}, "2001:db8:0:1::/64"},
		{&net.TCPAddr{IP: net.ParseIP("fe80::1"), Zone: "eth0", Port: 4}, "fe80::/64"},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 5}, "::/64"},
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 6}, "192.0.2.1"},        // 16-byte form
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.1").To4(), Port: 7}, "192.0.2.1"},  // 4-byte form
		{&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.2"), Port: 8}, "192.0.2.2"}, // mapped
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:3:4:5:6"), Port: 9}, "2001:db8:1:2::/64"},
	}
	for _, a := range addrs {
		assert.Equal(t, a.want, keyOf(t, ratelimitgrpc.ByPeer(), a.tcp, nil), "%s", a.tcp)
	}
	trust := ratelimithttp.TrustProxyHeader("X-Forwarded-For", netip.MustParsePrefix("10.0.0.0/8"))
	proxy := &net.TCPAddr{IP: net.ParseIP("10.0.0.5"), Port: 443}
	for _, bits := range []int{64, 48, 127, 128} {
		byPeer := ratelimitgrpc.ByPeer(trust, ratelimithttp.IPv6Prefix(bits))
		byClientIP := ratelimithttp.ByClientIP(trust, ratelimithttp.IPv6Prefix(bits))
		for _, a := range addrs {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = a.tcp.String()
			want, err := byClientIP(r)
			require.NoError(t, err)
			assert.Equal(t, want, keyOf(t, byPeer, a.tcp, nil), "/%d: %s directly", bits, a.tcp)
			hop := netip.AddrFrom16([16]byte(a.tcp.IP.To16())).Unmap().String()
			md := metadata.Pairs("x-forwarded-for", "198.51.100.66, "+hop)
			assert.Equal(t, want, keyOf(t, byPeer, proxy, md), "/%d: %s through a trusted proxy", bits, hop)
			assert.Equal(t, keyOf(t, byPeer, a.tcp, nil), keyOf(t, byPeer, a.tcp, md), "/%d: %s's own header is ignored", bits, a.tcp)
		}
	}
}

func TestByPeerWithoutIPAddress(t *testing.T) {
	unix := &net.UnixAddr{Name: "/run/app.sock", Net: "unix"}
	assert.Equal(t, "/run/app.sock", keyOf(t, ratelimitgrpc.ByPeer(), unix, nil), "a non-IP peer is keyed by its address")
	_, err := ratelimitgrpc.ByPeer()(t.Context())
	assert.EqualError(t, err, "the rate limit is per client address, and this call has none")
}

// TestByPeerOverIPv6: through a real server and clients, calls from two
// addresses of one /64 share one count (Max 2), another /64 has its own,
// and [::1] is keyed by its /64 too.
func TestByPeerOverIPv6(t *testing.T) {
	lis := peertest.Listen(t, "tcp6", "[::1]:0")
	lim := &keyRecorder{Limiter: memlimit.New()}
	loopback := serveMethodLimited(t, lis, lim, ratelimitgrpc.ByPeer(), sendLimit)
	req := &verifypb.SendCodeRequest{Email: key}

	_, err := loopback.SendCode(t.Context(), req)
	require.NoError(t, err, "from [::1]")
	_, err = dialAs(t, lis, "[2001:db8::1]:40000").SendCode(t.Context(), req)
	require.NoError(t, err)
	_, err = dialAs(t, lis, "[2001:db8::2]:40001").SendCode(t.Context(), req)
	require.NoError(t, err)
	_, err = dialAs(t, lis, "[2001:db8::ffff:3]:40002").SendCode(t.Context(), req)
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "the /64's third call: %v", err)
	_, err = dialAs(t, lis, "[2001:db8:0:1::1]:40003").SendCode(t.Context(), req)
	require.NoError(t, err, "the next /64 has its own count")
	_, err = dialAs(t, lis, "[::ffff:192.0.2.1]:40004").SendCode(t.Context(), req)
	require.NoError(t, err)
	assert.Equal(t, []string{"::/64", "2001:db8::/64", "2001:db8::/64", "2001:db8::/64", "2001:db8:0:1::/64", "192.0.2.1"}, lim.seen())
}

// TestByPeerProxiedSharesTheDirectCount: behind a trusted proxy, the
// client in x-forwarded-for counts against the same limit as the same
// client connected directly.
func TestByPeerProxiedSharesTheDirectCount(t *testing.T) {
	lis := peertest.Listen(t, "tcp6", "[::1]:0")
	lim := &keyRecorder{Limiter: memlimit.New()}
	byPeer := ratelimitgrpc.ByPeer(ratelimithttp.TrustProxyHeader("X-Forwarded-For", netip.MustParsePrefix("::1/128")))
	viaProxy := serveMethodLimited(t, lis, lim, byPeer, sendLimit)
	req := &verifypb.SendCodeRequest{Email: key}
	forwarded := func(xff string) context.Context {
		return metadata.AppendToOutgoingContext(t.Context(), "x-forwarded-for", xff)
	}

	_, err := viaProxy.SendCode(forwarded("2001:db8::1"), req)
	require.NoError(t, err)
	direct := dialAs(t, lis, "[2001:db8::2]:40000")
	_, err = direct.SendCode(forwarded("192.0.2.99"), req)
	require.NoError(t, err, "a direct client's own header is ignored")
	_, err = viaProxy.SendCode(forwarded("2001:db8:0:1::1, 2001:db8::3"), req)
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "what the client prepends is skipped: %v", err)
	assert.Equal(t, []string{"2001:db8::/64", "2001:db8::/64", "2001:db8::/64"}, lim.seen())
}
