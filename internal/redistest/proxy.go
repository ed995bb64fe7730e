package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

// proxyDialTimeout bounds the proxy's connection attempt to its target. On
// loopback a live server accepts, and a dead one refuses, at once.
const proxyDialTimeout = 10 * time.Second

// proxyCloseTimeout bounds how long cleanup waits for the proxy's goroutines
// to exit once every connection is closed; they exit at once unless a match
// function passed to DropReplies or Requests blocks.
const proxyCloseTimeout = 10 * time.Second

// proxyBufferSize is the size of the proxy's read buffers, and so of the
// chunks in which it copies large values.
const proxyBufferSize = 64 << 10

// Proxy is a TCP proxy between Redis clients and one redis-server that can
// drop replies, to test what clients do when a connection breaks after the
// server has executed a command but before its reply arrived: go-redis, like
// most client libraries, retries then, so a non-idempotent command (INCR, a
// rate limiter's script) runs twice.
//
// Each connection accepted on Addr gets its own connection to the target.
// The proxy works request by request: it reads one complete request from the
// client, forwards it, reads the server's complete reply and forwards that;
// only then does it forward the client's next request, so a pipeline's
// commands reach the server one at a time, in order. RESP2 and RESP3 replies
// are understood; push messages ('>') that the server sends outside any reply
// (client tracking invalidations) are forwarded as they arrive and are not
// taken for the reply to a request. Commands not answered by exactly one
// reply (SUBSCRIBE and the rest of pub/sub in RESP3, MONITOR, CLIENT REPLY
// OFF) are not supported.
//
// A client connection is closed when its server connection fails or is closed
// (the server stopped, or refused the connection), and the other way round, as
// if the client had talked to the server directly.
//
// A Proxy's methods may be called from several goroutines.
type Proxy struct {
	target string
	ln     net.Listener
	ctx    context.Context // cancelled when the proxy closes, to abort dials
	cancel context.CancelFunc
	wg     sync.WaitGroup // the accept loop and every connection's goroutines

	mu        sync.Mutex
	closed    bool
	conns     map[*proxyConn]struct{}
	rules     []*dropRule // those with drops left, in the order they were added
	dropped   int
	requests  [][]string // the args of every request passed on, in order
	acceptErr error      // why the accept loop stopped, if not because of close
}

// dropRule is one DropReplies call.
type dropRule struct {
	left  int // replies still to drop; guarded by Proxy.mu
	match func(args []string) bool
}

// StartProxy starts a Proxy listening on 127.0.0.1 on a free port and
// forwarding to target, a redis-server's "host:port" address. It does not
// connect to target until a client connects to the proxy. The listener and
// every connection are closed by t.Cleanup.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: StartProxy: listening on 127.0.0.1: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		target: target,
		ln:     ln,
		ctx:    ctx,
		cancel: cancel,
		conns:  make(map[*proxyConn]struct{}),
	}
	runProxy(t, p, &p.wg, p.accept)
	return p
}

// closer is a proxy as its cleanup sees it.
type closer interface {
	fmt.Stringer
	close() error
}

// runProxy registers p's cleanup and runs accept, counted in wg, which
// p.close waits for.
func runProxy(t testing.TB, p closer, wg *sync.WaitGroup, accept func()) {
	t.Cleanup(func() {
		if err := p.close(); err != nil {
			t.Errorf("redistest: cleanup of %s: %v", p, err)
		}
	})
	wg.Add(1)
	go accept()
}

// awaitGroup waits for wg, up to proxyCloseTimeout, and reports whether it
// is done.
func awaitGroup(wg *sync.WaitGroup) bool {
	exited := make(chan struct{})
	go func() {
		wg.Wait()
		close(exited)
	}()
	select {
	case <-exited:
		return true
	case <-time.After(proxyCloseTimeout):
		return false
	}
}

// Addr returns the "127.0.0.1:port" address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// String identifies the proxy in messages.
func (p *Proxy) String() string {
	return fmt.Sprintf("redistest proxy %s -> %s", p.Addr(), p.target)
}

// DropReplies makes the proxy drop the replies to the next n requests for
// which match(args) is true, args being the command name and its arguments
// as sent (for example ["EVALSHA", sha, "2", key1, key2, ...]); a nil match
// matches every request. For such a request the proxy forwards the request,
// waits until the server's complete reply has arrived, so the command has
// run, then discards the reply and closes the client's connection (and its
// connection to the server) instead of forwarding it.
//
// Calls add up: each reply is checked against the rules of earlier calls
// first, and is dropped at most once. A request counts towards n only once
// its reply has arrived, so a request whose server went away meanwhile does
// not use up a drop. match is called from the proxy's goroutines, possibly
// concurrently, once a reply has arrived, and must not modify args. n <= 0
// adds nothing.
func (p *Proxy) DropReplies(n int, match func(args []string) bool) {
	if n <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, &dropRule{left: n, match: match})
}

// Dropped returns how many replies the proxy has dropped so far. A reply is
// counted before its client's connection is closed, so once a client has seen
// the connection break, the drop is counted.
func (p *Proxy) Dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// Requests returns how many of the requests the proxy has passed on to the
// server so far satisfy match (nil matches every request), whether their
// replies were forwarded or dropped. Empty requests, which Redis ignores, are
// not passed on. A request is counted before it is written to the server, so
// once its client has a reply or has seen the connection break, it is
// counted. It tells, for example, whether a client retried a command.
//
// match must not modify args. The proxy keeps the args of every request it
// passes on for this, which suits tests, not load generation.
func (p *Proxy) Requests(match func(args []string) bool) int {
	p.mu.Lock()
	requests := p.requests
	p.mu.Unlock()
	n := 0
	for _, args := range requests {
		if match == nil || match(args) {
			n++
		}
	}
	return n
}

// record notes that a request is passed on to the server.
func (p *Proxy) record(args []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = append(p.requests, args)
}

// dropReply reports whether the reply to the request args is to be dropped,
// counting it as dropped if so. match functions are called without p.mu held.
func (p *Proxy) dropReply(args []string) bool {
	p.mu.Lock()
	rules := slices.Clone(p.rules)
	p.mu.Unlock()
	for _, r := range rules {
		if r.match != nil && !r.match(args) {
			continue
		}
		p.mu.Lock()
		if r.left == 0 { // used up by another connection meanwhile
			p.mu.Unlock()
			continue
		}
		r.left--
		if r.left == 0 {
			p.rules = slices.DeleteFunc(p.rules, func(r *dropRule) bool { return r.left == 0 })
		}
		p.dropped++
		p.mu.Unlock()
		return true
	}
	return false
}

// accept accepts client connections until the listener is closed.
func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			p.mu.Lock()
			if !p.closed {
				p.acceptErr = err
			}
			p.mu.Unlock()
			return
		}
		c := &proxyConn{
			client:   client,
			done:     make(chan struct{}),
			inflight: make(chan []string, 1),
			handled:  make(chan struct{}, 1),
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = client.Close()
			return
		}
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(c)
	}
}

// serve connects c to the target and relays between the two until either
// side closes or fails, or the proxy closes.
func (p *Proxy) serve(c *proxyConn) {
	defer p.wg.Done()
	defer func() {
		c.close()
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}()
	dialer := net.Dialer{Timeout: proxyDialTimeout}
	server, err := dialer.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		return // closing the client tells it the server is unreachable
	}
	if !c.setServer(server) {
		return // the proxy closed meanwhile
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer c.close()
		c.serverToClient(p)
	}()
	c.clientToServer(p)
}

// close closes the listener and every connection, and waits for the proxy's
// goroutines to exit.
func (p *Proxy) close() error {
	p.mu.Lock()
	p.closed = true
	conns := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	acceptErr := p.acceptErr
	p.mu.Unlock()

	p.cancel()
	_ = p.ln.Close()
	for _, c := range conns {
		c.close()
	}
	if !awaitGroup(&p.wg) {
		return fmt.Errorf("connection goroutines still running %v after closing every connection", proxyCloseTimeout)
	}
	if acceptErr != nil {
		return fmt.Errorf("stopped accepting connections early: %w", acceptErr)
	}
	return nil
}

// proxyConn is one client connection and its connection to the server. Two
// goroutines serve it: clientToServer reads requests and forwards them one at
// a time, serverToClient reads replies and forwards (or drops) them.
type proxyConn struct {
	client net.Conn
	done   chan struct{} // closed by close

	// inflight holds the args of the request forwarded to the server whose
	// reply has not arrived yet; handled is signalled once that reply has
	// been forwarded. Each holds at most one item because clientToServer
	// waits for handled before forwarding the next request.
	inflight chan []string
	handled  chan struct{}

	mu     sync.Mutex
	server net.Conn // nil until connected
	closed bool
}

// setServer records the connection to the server, or closes it and returns
// false if c has been closed meanwhile.
func (c *proxyConn) setServer(server net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		_ = server.Close()
		return false
	}
	c.server = server
	return true
}

// close closes both connections, unblocking both goroutines. It may be
// called any number of times, from any goroutine.
func (c *proxyConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	close(c.done)
	_ = c.client.Close()
	if c.server != nil {
		_ = c.server.Close()
	}
}

// clientToServer reads the client's requests and forwards each one once the
// reply to the previous one has been forwarded. It reads the next request
// while a reply is outstanding, so that a client hanging up mid-command closes
// the server connection as it would have directly.
func (c *proxyConn) clientToServer(p *Proxy) {
	r := bufio.NewReaderSize(c.client, proxyBufferSize)
	outstanding := false
	for {
		raw, args, err := readRequest(r)
		if err != nil {
			return // the client hung up, or sent something that is not RESP
		}
		if len(args) == 0 {
			continue // an empty request, which Redis ignores without replying
		}
		if outstanding {
			select {
			case <-c.handled:
			case <-c.done:
				return
			}
		}
		p.record(args)
		c.inflight <- args
		if _, err := c.server.Write(raw); err != nil {
			return
		}
		outstanding = true
	}
}

// serverToClient reads the server's replies and forwards them to the client,
// except one that DropReplies asks to drop, on which it returns instead.
func (c *proxyConn) serverToClient(p *Proxy) {
	r := bufio.NewReaderSize(c.server, proxyBufferSize)
	for {
		raw, kind, err := readReply(r)
		if err != nil {
			return // the server hung up, or sent something that is not RESP
		}
		var args []string
		if kind != '>' {
			select {
			case args = <-c.inflight:
			default:
				// Nothing was asked: an unsolicited reply, such as a RESP2
				// pub/sub message. Forward it, like a push.
			}
		}
		if args != nil && p.dropReply(args) {
			return // the caller closes both connections
		}
		if _, err := c.client.Write(raw); err != nil {
			return
		}
		if args != nil {
			c.handled <- struct{}{}
		}
	}
}
