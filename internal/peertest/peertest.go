// Package peertest holds a real TCP listener whose accepted connections
// report a remote address the test chooses, so that tests on one machine
// can be clients from any IPv4 or IPv6 address.
package peertest

import (
	"net"
	"net/netip"
	"sync"
	"testing"
)

// A Listener is a real listener; the connections it accepts report the
// address last given to As, or their own before any and after As("").
type Listener struct {
	net.Listener
	mu   sync.Mutex
	next net.Addr
}

// Listen listens on network and address, as net.Listen, and closes the
// listener when t ends.
func Listen(t testing.TB, network, address string) *Listener {
	t.Helper()
	lis, err := net.Listen(network, address)
	if err != nil {
		t.Fatalf("peertest: listen on %s %s: %v", network, address, err)
	}
	t.Cleanup(func() { _ = lis.Close() })
	return &Listener{Listener: lis}
}

// As makes the connections accepted from now on report addr (host:port),
// or their real address if addr is "".
func (l *Listener) As(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next = nil
	if addr != "" {
		l.next = net.TCPAddrFromAddrPort(netip.MustParseAddrPort(addr))
	}
}

// Accept accepts a connection, reporting the address As set.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.next == nil {
		return c, nil
	}
	return conn{c, l.next}, nil
}

type conn struct {
	net.Conn
	remote net.Addr
}

func (c conn) RemoteAddr() net.Addr { return c.remote }
