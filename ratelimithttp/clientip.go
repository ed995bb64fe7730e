package ratelimithttp

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// ClientIPOption configures ByClientIP: TrustProxyHeader or IPv6Prefix.
type ClientIPOption func(*clientIPConfig)

type clientIPConfig struct {
	header  string         // canonical proxy header; "" trusts none
	proxies []netip.Prefix // unmapped and masked
	v6Bits  int            // 128 keys each IPv6 address on its own
}

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
// a prefix is invalid, as those are wiring mistakes.
func TrustProxyHeader(header string, proxies ...netip.Prefix) ClientIPOption {
	if strings.TrimSpace(header) == "" {
		panic("ratelimithttp: TrustProxyHeader: empty header name; pass e.g. \"X-Forwarded-For\"")
	}
	ps := make([]netip.Prefix, 0, len(proxies))
	for i, p := range proxies {
		if !p.IsValid() {
			panic(fmt.Sprintf("ratelimithttp: TrustProxyHeader: proxies[%d] is not a valid prefix; build it with netip.ParsePrefix, e.g. \"10.0.0.0/8\"", i))
		}
		ps = append(ps, unmapPrefix(p))
	}
	header = http.CanonicalHeaderKey(strings.TrimSpace(header))
	return func(c *clientIPConfig) {
		c.header = header
		c.proxies = ps
	}
}

// IPv6Prefix makes ByClientIP key IPv6 clients on their /bits network
// instead of their full address: a single IPv6 host usually holds at least
// a /64, and would otherwise get a fresh key per address. IPv6Prefix(64) is
// the common choice; IPv4 addresses are always keyed whole. It panics
// unless 1 <= bits <= 128.
func IPv6Prefix(bits int) ClientIPOption {
	if bits < 1 || bits > 128 {
		panic(fmt.Sprintf("ratelimithttp: IPv6Prefix(%d): bits must be between 1 and 128, e.g. 64", bits))
	}
	return func(c *clientIPConfig) { c.v6Bits = bits }
}

// ByClientIP keys requests on the client's IP address: by default the host
// of r.RemoteAddr, the TCP peer, which a client cannot forge. Proxy headers
// are ignored unless TrustProxyHeader names them, so behind a reverse proxy
// without it every client shares the proxy's count.
//
// Keys are addresses in canonical form ("192.0.2.1", "2001:db8::1"), with
// IPv4-mapped addresses unmapped and zones dropped; with IPv6Prefix, IPv6
// keys are networks ("2001:db8:1:2::/64"). A RemoteAddr that is not an IP
// address (a Unix socket listener, say) is a key error.
func ByClientIP(opts ...ClientIPOption) KeyFunc {
	c := clientIPConfig{v6Bits: 128}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return func(r *http.Request) (string, error) {
		peer, ok := parseHop(r.RemoteAddr)
		if !ok {
			return "", fmt.Errorf("cannot key the rate limit on the client IP: the server sees the peer address %q, which is not an IP address", r.RemoteAddr)
		}
		return c.key(c.client(peer, r.Header)), nil
	}
}

// client walks the trusted proxy header from the right, starting at the
// peer, and returns the first address not in a trusted prefix.
func (c *clientIPConfig) client(peer netip.Addr, h http.Header) netip.Addr {
	if c.header == "" || !c.trusted(peer) {
		return peer
	}
	var hops []string
	for _, v := range h.Values(c.header) {
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

func (c *clientIPConfig) key(a netip.Addr) string {
	if a.Is6() && c.v6Bits < 128 {
		p, err := a.Prefix(c.v6Bits)
		if err == nil {
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
