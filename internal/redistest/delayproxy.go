package redistest

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// DelayProxy is a TCP proxy to one address that delivers every byte, in
// both directions, a fixed delay after it arrived: a link of that latency
// and full bandwidth. Unlike Proxy it reads no protocol, so it carries any
// stream, a replica's replication link included (REPLICAOF the proxy's
// host and port). It and its connections are closed by t.Cleanup.
type DelayProxy struct {
	target string
	delay  time.Duration
	ln     net.Listener
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	conns  []net.Conn
}

// StartDelayProxy starts a DelayProxy listening on 127.0.0.1 on a free
// port and forwarding to target with delay each way.
func StartDelayProxy(t testing.TB, target string, delay time.Duration) *DelayProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: StartDelayProxy: %v", err)
	}
	p := &DelayProxy{target: target, delay: delay, ln: ln}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr returns the proxy's "host:port".
func (p *DelayProxy) Addr() string { return p.ln.Addr().String() }

// Host returns the proxy's host, as REPLICAOF takes it.
func (p *DelayProxy) Host() string { return p.ln.Addr().(*net.TCPAddr).IP.String() }

// Port returns the proxy's port, as REPLICAOF takes it.
func (p *DelayProxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *DelayProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.DialTimeout("tcp", p.target, proxyDialTimeout)
		if err != nil {
			client.Close()
			continue
		}
		if !p.track(client, server) {
			return
		}
		p.wg.Add(2)
		go p.pipe(server, client)
		go p.pipe(client, server)
	}
}

// track records conns for close, and reports false once the proxy closed.
func (p *DelayProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	p.conns = append(p.conns, conns...)
	return true
}

// chunk is bytes read at a time.
type chunk struct {
	at   time.Time
	data []byte
}

// pipe copies from src to dst, each chunk delay after it was read; when
// either side ends, both are closed.
func (p *DelayProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	chunks := make(chan chunk, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range chunks {
			time.Sleep(time.Until(c.at.Add(p.delay)))
			if _, err := dst.Write(c.data); err != nil {
				break
			}
		}
		dst.Close()
		src.Close()
		for range chunks {
		}
	}()
	buf := make([]byte, proxyBufferSize)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			chunks <- chunk{at: time.Now(), data: append([]byte(nil), buf[:n]...)}
		}
		if err != nil {
			if err != io.EOF {
				dst.Close()
			}
			break
		}
	}
	close(chunks)
	<-done
}

func (p *DelayProxy) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.mu.Unlock()
	p.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	p.wg.Wait()
}
