package redistest

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
)

// StreamProxy is a raw TCP relay in front of one redis-server, meant for a
// replica's replication link (see Sentinel.ReplicateThrough). Bytes from
// the connecting side (the replica: PSYNC, REPLCONF ACK) always pass at
// once. Bytes from the target (the master's replication stream) pass at
// once too, unless the proxy is held: they are then buffered, undelivered,
// so the replica falls behind while its link still looks up, and its
// acknowledgements stop advancing. Release delivers what was held, in
// order. A connection whose target side closes while bytes are held loses
// them (see Dropped), as a replica loses what its dying master had not
// sent; a connection whose one side closes has its other side closed, and
// its held bytes dropped.
//
// Unlike Proxy it understands nothing of RESP, so it relays any protocol,
// including an RDB transfer.
//
// A StreamProxy's methods may be called from several goroutines.
type StreamProxy struct {
	target string
	ln     net.Listener
	wg     sync.WaitGroup

	mu          sync.Mutex
	changed     *sync.Cond // signalled on new bytes, Release, a side closing, or close
	held        bool
	closed      bool
	conns       map[*streamConn]struct{}
	connections int
	dropped     int64
}

// streamConn is one relayed connection; its fields are guarded by the
// proxy's mutex.
type streamConn struct {
	down, up net.Conn // the connecting side, and the target
	pending  []byte   // from the target, not yet delivered
	upDone   bool     // the target side has closed or failed
	downDone bool     // the connecting side has closed or failed
}

// StartStreamProxy starts a StreamProxy on 127.0.0.1 on a free port,
// relaying to target ("host:port"); it dials target once for each
// connection it accepts. Everything is closed by t.Cleanup.
func StartStreamProxy(t testing.TB, target string) *StreamProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: StartStreamProxy: listening on 127.0.0.1: %v", err)
	}
	p := &StreamProxy{target: target, ln: ln, conns: make(map[*streamConn]struct{})}
	p.changed = sync.NewCond(&p.mu)
	runProxy(t, p, &p.wg, p.accept)
	return p
}

// Addr returns the "127.0.0.1:port" address to connect to.
func (p *StreamProxy) Addr() string { return p.ln.Addr().String() }

// Port returns the port of Addr.
func (p *StreamProxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// String identifies the proxy in messages.
func (p *StreamProxy) String() string {
	return fmt.Sprintf("redistest stream proxy %s -> %s", p.Addr(), p.target)
}

// Hold stops delivering the target's bytes, on current and later
// connections, until Release.
func (p *StreamProxy) Hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = true
}

// Release delivers what is held and lets the target's bytes pass again.
func (p *StreamProxy) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = false
	p.changed.Broadcast()
}

// Held returns how many bytes from the target are buffered and not yet
// delivered, over the open connections.
func (p *StreamProxy) Held() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for c := range p.conns {
		n += int64(len(c.pending))
	}
	return n
}

// Dropped returns how many bytes from the target were never delivered
// because their connection closed, on either side, while they were held.
func (p *StreamProxy) Dropped() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// Connections returns how many connections the proxy has accepted.
func (p *StreamProxy) Connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.connections
}

// accept relays each connection until the listener closes.
func (p *StreamProxy) accept() {
	defer p.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.DialTimeout("tcp", p.target, proxyDialTimeout)
		if err != nil {
			// As if the target itself had refused the connection.
			_ = down.Close()
			continue
		}
		c := &streamConn{down: down, up: up}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = down.Close()
			_ = up.Close()
			return
		}
		p.conns[c] = struct{}{}
		p.connections++
		p.mu.Unlock()
		p.wg.Add(3)
		go p.forward(c)
		go p.receive(c)
		go p.deliver(c)
	}
}

// forward copies the connecting side to the target, unheld.
func (p *StreamProxy) forward(c *streamConn) {
	defer p.wg.Done()
	buf := make([]byte, proxyBufferSize)
	for {
		n, err := c.down.Read(buf)
		if n > 0 {
			if _, werr := c.up.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			p.mu.Lock()
			c.downDone = true
			p.changed.Broadcast()
			p.mu.Unlock()
			// Both sides go: the target sees its peer leave.
			_ = c.up.Close()
			_ = c.down.Close()
			return
		}
	}
}

// receive reads the target's bytes into the connection's buffer.
func (p *StreamProxy) receive(c *streamConn) {
	defer p.wg.Done()
	buf := make([]byte, proxyBufferSize)
	for {
		n, err := c.up.Read(buf)
		p.mu.Lock()
		c.pending = append(c.pending, buf[:n]...)
		if err != nil {
			c.upDone = true
		}
		p.changed.Broadcast()
		p.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// deliver writes the buffered bytes to the connecting side whenever the
// proxy is not held, and closes the connection once the target side has
// closed and nothing deliverable is left.
func (p *StreamProxy) deliver(c *streamConn) {
	defer p.wg.Done()
	p.mu.Lock()
	for {
		for !c.downDone && !p.closed && !c.upDone && (p.held || len(c.pending) == 0) {
			p.changed.Wait()
		}
		if c.downDone || p.closed || (c.upDone && (p.held || len(c.pending) == 0)) {
			p.dropped += int64(len(c.pending))
			c.pending = nil
			delete(p.conns, c)
			p.mu.Unlock()
			_ = c.down.Close()
			_ = c.up.Close()
			return
		}
		if p.held || len(c.pending) == 0 {
			continue
		}
		out := c.pending
		c.pending = nil
		p.mu.Unlock()
		if _, err := c.down.Write(out); err != nil {
			p.mu.Lock()
			c.downDone = true
			continue
		}
		p.mu.Lock()
	}
}

// close stops accepting, closes every connection and waits for the
// goroutines.
func (p *StreamProxy) close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.down.Close()
		_ = c.up.Close()
	}
	p.changed.Broadcast()
	p.mu.Unlock()
	err := p.ln.Close()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	if !awaitGroup(&p.wg) {
		return fmt.Errorf("goroutines still running %v after closing", proxyCloseTimeout)
	}
	return err
}
