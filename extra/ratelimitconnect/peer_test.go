package ratelimitconnect_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitconnect"
	"github.com/ratelimitgen/ratelimitgen/internal/peertest"
	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

var peerLimit = runtime.Limit{Name: "Notifier.SendCode", Window: time.Minute, Max: 2}

// peerServer is a real connect-go service over HTTP/2 with TLS on [::1],
// whose SendCode handler keys its limit on the client's IP address with
// ratelimithttp.ClientIPKey, from the call's Peer().Addr and headers.
type peerServer struct {
	*httptest.Server
	lis  *peertest.Listener
	mu   sync.Mutex
	keys []string
}

func startPeerServer(t *testing.T, opts ...ratelimithttp.ClientIPOption) *peerServer {
	t.Helper()
	s := &peerServer{lis: peertest.Listen(t, "tcp6", "[::1]:0")}
	lim := memlimit.New()
	clientIP := ratelimithttp.ClientIPKey(opts...)
	mux := http.NewServeMux()
	mux.Handle(sendCode, connect.NewUnaryHandler(sendCode,
		func(ctx context.Context, req *connect.Request[wrapperspb.StringValue]) (*connect.Response[emptypb.Empty], error) {
			k, err := clientIP(req.Peer().Addr, req.Header().Values)
			if err != nil {
				return nil, connect.NewError(connect.CodeInvalidArgument, err)
			}
			s.mu.Lock()
			s.keys = append(s.keys, k)
			s.mu.Unlock()
			if err := runtime.Enforce(ctx, lim, runtime.Request{Limit: peerLimit, Key: k}); err != nil {
				return nil, err
			}
			return connect.NewResponse(&emptypb.Empty{}), nil
		}, connect.WithInterceptors(ratelimitconnect.NewInterceptor())))
	s.Server = httptest.NewUnstartedServer(mux)
	if err := s.Listener.Close(); err != nil {
		t.Fatal(err)
	}
	s.Listener = s.lis
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func (s *peerServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...)
}

// call makes one SendCode call on a new connection, which the server sees
// from addr ("" for the real [::1]), with X-Forwarded-For xff if not "".
func (s *peerServer) call(t *testing.T, opts []connect.ClientOption, addr, xff string) error {
	t.Helper()
	s.lis.As(addr)
	hc := &http.Client{Transport: s.Client().Transport.(*http.Transport).Clone()}
	t.Cleanup(hc.CloseIdleConnections)
	client := connect.NewClient[wrapperspb.StringValue, emptypb.Empty](hc, s.URL+sendCode, opts...)
	req := connect.NewRequest(wrapperspb.String("anyone"))
	if xff != "" {
		req.Header().Set("X-Forwarded-For", xff)
	}
	_, err := client.CallUnary(t.Context(), req)
	return err
}

// check makes the calls, each on a new connection, and compares their
// outcomes and the keys the handler saw.
func (s *peerServer) check(t *testing.T, opts []connect.ClientOption, calls []peerCall, keys []string) {
	t.Helper()
	for _, c := range calls {
		err := s.call(t, opts, c.addr, c.xff)
		switch {
		case !c.denied && err != nil:
			t.Errorf("call from %q with X-Forwarded-For %q: %v", c.addr, c.xff, err)
		case c.denied && connect.CodeOf(err) != connect.CodeResourceExhausted:
			t.Errorf("call from %q with X-Forwarded-For %q: %v, want resource_exhausted", c.addr, c.xff, err)
		}
	}
	if got := s.seen(); !reflect.DeepEqual(got, keys) {
		t.Errorf("keys %q, want %q", got, keys)
	}
}

type peerCall struct {
	addr, xff string // addr "" is the real [::1]
	denied    bool
}

// TestPeerKeyOverIPv6: over each protocol, through a real server and
// client, calls from two addresses of one /64 share one count (Max 2),
// another /64 has its own, IPv4-mapped addresses are IPv4, and [::1] is
// keyed by its /64 too; IPv6Prefix(128) keys whole addresses.
func TestPeerKeyOverIPv6(t *testing.T) {
	for name, opts := range protocols {
		t.Run(name, func(t *testing.T) {
			startPeerServer(t).check(t, opts, []peerCall{
				{addr: ""},
				{addr: "[2001:db8::1]:40000"},
				{addr: "[2001:db8::2]:40001"},
				{addr: "[2001:db8::ffff:3]:40002", denied: true},
				{addr: "[2001:db8:0:1::1]:40003"},
				{addr: "[::ffff:192.0.2.1]:40004"},
			}, []string{"::/64", "2001:db8::/64", "2001:db8::/64", "2001:db8::/64", "2001:db8:0:1::/64", "192.0.2.1"})

			startPeerServer(t, ratelimithttp.IPv6Prefix(128)).check(t, opts, []peerCall{
				{addr: ""},
				{addr: "[2001:db8::1]:40000"},
				{addr: "[2001:db8::2]:40001"},
				{addr: "[2001:db8::1]:40002"},
				{addr: "[2001:db8::1]:40003", denied: true},
			}, []string{"::1", "2001:db8::1", "2001:db8::2", "2001:db8::1", "2001:db8::1"})
		})
	}
}

// TestPeerKeyProxiedSharesTheDirectCount: behind a trusted proxy ([::1]
// here), the client in X-Forwarded-For counts against the same limit as
// the same client connected directly, whose own header is ignored.
func TestPeerKeyProxiedSharesTheDirectCount(t *testing.T) {
	for name, opts := range protocols {
		t.Run(name, func(t *testing.T) {
			trust := ratelimithttp.TrustProxyHeader("X-Forwarded-For", netip.MustParsePrefix("::1/128"))
			startPeerServer(t, trust).check(t, opts, []peerCall{
				{xff: "2001:db8::1"},
				{addr: "[2001:db8::2]:40000", xff: "192.0.2.99"},
				{xff: "2001:db8:0:1::1, 2001:db8::3", denied: true},
				{xff: "2001:db8:0:1::1"},
			}, []string{"2001:db8::/64", "2001:db8::/64", "2001:db8::/64", "2001:db8:0:1::/64"})
		})
	}
}
