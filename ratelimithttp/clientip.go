package ratelimithttp

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// ClientIPOption configures ByClientIP and ClientIPKey (and so
// extra/ratelimitgrpc's ByPeer): TrustProxyHeader or IPv6Prefix.
type ClientIPOption func(*clientIPConfig)

type clientIPConfig struct {
	header  string         // canonical proxy header; "" trusts none
	proxies []netip.Prefix // unmapped and masked
	v6Bits  int            // 128 keys each IPv6 address on its own
}

// defaultIPv6Bits is the network a single IPv6 host is usually given
// (RFC 6177), so that one host gets one key however many addresses it uses.
const defaultIPv6Bits = 64

// mappedIPv4 is the first IPv4-mapped address: an IPv6 prefix that holds it
// with room for 32 more bits holds every IPv4 address in mapped form.
var mappedIPv4 = netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff})

// TrustProxyHeader makes ByClientIP take the client address from header,
// but only on requests whose peer (the RemoteAddr host) lies in one of the
// proxies prefixes, for example the load balancer's subnet:
//
//	ratelimithttp.ByClientIP(ratelimithttp.TrustProxyHeader("X-Forwarded-For",
//		netip.MustParsePrefix("10.0.0.0/8")))
//
// Any client can send any header, so trusting it from any other peer would
// let each request pick its own key. The header's values are read as one
// comma-separated list (X-Forwarded-For; X-Real-IP works too) and walked
// from the right: the first address outside the trusted prefixes is the
// client, so what a client prepends is ignored. Entries may carry a port.
// An unparsable entry stops the walk at the last trusted address before it
// (strict, never spoofable); if every entry is trusted, the leftmost is the
// key. RFC 7239 Forwarded is not understood.
//
// The last TrustProxyHeader given applies. It panics if header is empty or
// a prefix is invalid or holds every address of a family (0.0.0.0/0, ::/0,
// or any IPv6 prefix holding ::ffff:0:0/96, every IPv4 address mapped),
// which would make each client's own header its key: these are wiring
// mistakes.
func TrustProxyHeader(header string, proxies ...netip.Prefix) ClientIPOption {
	if strings.TrimSpace(header) == "" {
		panic("ratelimithttp: TrustProxyHeader: empty header name; pass e.g. \"X-Forwarded-For\"")
	}
	header = http.CanonicalHeaderKey(strings.TrimSpace(header))
	ps := make([]netip.Prefix, 0, len(proxies))
	for i, p := range proxies {
		if !p.IsValid() {
			panic(fmt.Sprintf("ratelimithttp: TrustProxyHeader: proxies[%d] is not a valid prefix; build it with netip.ParsePrefix, e.g. \"10.0.0.0/8\"", i))
		}
		u := unmapPrefix(p)
		if family := everyAddress(u); family != "" {
			panic(fmt.Sprintf("ratelimithttp: TrustProxyHeader: proxies[%d] (%s) holds every %s address, so any client could choose its own key by sending %s; pass only your proxies' networks, e.g. \"10.0.0.0/8\"", i, p, family, header))
		}
		ps = append(ps, u)
	}
	return func(c *clientIPConfig) {
		c.header = header
		c.proxies = ps
	}
}

// everyAddress names the family of which p, unmapped and masked, holds
// every address, or returns "".
func everyAddress(p netip.Prefix) string {
	switch {
	case p.Bits() == 0 && p.Addr().Is4():
		return "IPv4"
	case p.Bits() == 0:
		return "IPv6"
	case p.Bits() <= 96 && p.Contains(mappedIPv4):
		return "IPv4-mapped IPv6"
	}
	return ""
}

// IPv6Prefix keys each IPv6 client on its /bits network instead of the
// default /64, the network a single host is usually given; 128 keys each
// address on its own. IPv4 addresses, and IPv4-mapped IPv6 ones, are
// always keyed whole. It panics unless 1 <= bits <= 128.
func IPv6Prefix(bits int) ClientIPOption {
	if bits < 1 || bits > 128 {
		panic(fmt.Sprintf("ratelimithttp: IPv6Prefix(%d): bits must be between 1 and 128, e.g. 64 (the default) or 128 for whole addresses", bits))
	}
	return func(c *clientIPConfig) { c.v6Bits = bits }
}

// ByClientIP keys requests on the client's IP address: by default the host
// of r.RemoteAddr, the TCP peer, which a client cannot forge. Proxy headers
// are ignored unless TrustProxyHeader names them, so behind a reverse proxy
// without it every client shares the proxy's count.
//
// An IPv4 address is keyed whole ("192.0.2.1"), an IPv4-mapped one as its
// IPv4 address; an IPv6 address as its /64 network ("2001:db8:1:2::/64"),
// or as IPv6Prefix sets ("2001:db8::1" at 128), its zone dropped. The key
// is the same, byte for byte, whether the address came from RemoteAddr or
// a trusted header. A RemoteAddr that is not an IP address (a Unix socket
// listener, say) is a key error.
func ByClientIP(opts ...ClientIPOption) KeyFunc {
	key := ClientIPKey(opts...)
	return func(r *http.Request) (string, error) {
		return key(r.RemoteAddr, r.Header.Values)
	}
}

// ClientIPKey returns the function that gives ByClientIP(opts...) its key,
// for calls that are HTTP requests seen through another API, so that one
// client has one key whatever serves it. peer is the connection's remote
// address as in http.Request.RemoteAddr ("192.0.2.1:443",
// "[2001:db8::1]:443", or without a port), and values returns the values
// of a request header by its canonical name (http.Header.Values), asked
// only when the peer is a trusted proxy. connect-go gives both as
// Peer().Addr and Header().Values; extra/ratelimitgrpc's ByPeer reads
// gRPC metadata. A peer that is not an IP address is ByClientIP's key
// error.
func ClientIPKey(opts ...ClientIPOption) func(peer string, values func(header string) []string) (string, error) {
	c := clientIPConfig{v6Bits: defaultIPv6Bits}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return func(peer string, values func(string) []string) (string, error) {
		a, ok := parseHop(peer)
		if !ok {
			return "", errNotIP
		}
		return c.key(c.client(a, values)), nil
	}
}

var errNotIP = errors.New("cannot key the rate limit on the client IP: the connection's peer address is not an IP address (a Unix socket listener?); key this endpoint on something else")

// client walks the trusted proxy header from the right, starting at the
// peer, and returns the first address not in a trusted prefix.
func (c *clientIPConfig) client(peer netip.Addr, values func(string) []string) netip.Addr {
	if c.header == "" || !c.trusted(peer) || values == nil {
		return peer
	}
	var hops []string
	for _, v := range values(c.header) {
		hops = append(hops, strings.Split(v, ",")...)
	}
	client := peer
	for i := len(hops) - 1; i >= 0 && c.trusted(client); i-- {
		a, ok := parseHop(hops[i])
		if !ok {
			break
		}
		client = a
	}
	return client
}

func (c *clientIPConfig) trusted(a netip.Addr) bool {
	for _, p := range c.proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// key writes a, unmapped and without a zone as parseHop returns it.
func (c *clientIPConfig) key(a netip.Addr) string {
	if a.Is6() && c.v6Bits < 128 {
		// Prefix fails only for bits outside 0..128, which IPv6Prefix refuses.
		if p, err := a.Prefix(c.v6Bits); err == nil {
			return p.String()
		}
	}
	return a.String()
}

// parseHop parses an address as found in RemoteAddr or a proxy header:
// bare, with a port, or bracketed IPv6 with or without a port. The result
// is unmapped and has no zone.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, err2 := netip.ParseAddrPort(s)
		switch {
		case err2 == nil:
			a = ap.Addr()
		case len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']':
			if a, err = netip.ParseAddr(s[1 : len(s)-1]); err != nil {
				return netip.Addr{}, false
			}
		default:
			return netip.Addr{}, false
		}
	}
	return a.Unmap().WithZone(""), true
}

// unmapPrefix turns an IPv4-mapped IPv6 prefix into the IPv4 prefix it
// covers, because addresses are unmapped before they are matched.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	p = p.Masked()
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p
}
