package redistest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// rawTimeout bounds each read and write on a raw connection in these tests.
// It only decides when to give up on a broken proxy; a healthy one answers in
// milliseconds.
const rawTimeout = 10 * time.Second

func TestProxyPassesCommandsThrough(t *testing.T) {
	s := StartServer(t)
	p := StartProxy(t, s.Addr())
	c := proxyClient(t, p, &redis.Options{})
	direct := s.Client(t)
	ctx := context.Background()

	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	require.Equal(t, "v", c.Get(ctx, "k").Val())
	require.ErrorIs(t, c.Get(ctx, "missing").Err(), redis.Nil)

	cmds, err := c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for range 100 {
			pipe.Incr(ctx, "n")
		}
		return nil
	})
	require.NoError(t, err)
	require.Len(t, cmds, 100)
	for i, cmd := range cmds {
		require.Equal(t, int64(i+1), cmd.(*redis.IntCmd).Val(), "pipelined replies in order")
	}

	var incr *redis.IntCmd
	var get *redis.StringCmd
	_, err = c.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, "tx", "1", 0)
		incr = pipe.Incr(ctx, "tx")
		get = pipe.Get(ctx, "tx")
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, int64(2), incr.Val())
	require.Equal(t, "2", get.Val())

	require.NoError(t, c.HSet(ctx, "h", "f1", "v1", "f2", "v2").Err())
	require.Equal(t, map[string]string{"f1": "v1", "f2": "v2"}, c.HGetAll(ctx, "h").Val())

	big := bytes.Repeat([]byte("0123456789abc\r\n"), (1<<20)/15+1)[:1<<20]
	require.NoError(t, c.Set(ctx, "big", big, 0).Err())
	got, err := c.Get(ctx, "big").Bytes()
	require.NoError(t, err)
	require.True(t, bytes.Equal(big, got), "1 MiB value read back through the proxy")
	got, err = direct.Get(ctx, "big").Bytes()
	require.NoError(t, err)
	require.True(t, bytes.Equal(big, got), "1 MiB value as stored on the server")

	require.Positive(t, p.Requests(func(args []string) bool {
		return strings.EqualFold(args[0], "HELLO") && len(args) > 1 && args[1] == "3"
	}), "go-redis negotiated RESP3 through the proxy")
	require.Equal(t, 100+1, p.Requests(isCommand("INCR")))
	require.Zero(t, p.Dropped())
}

// The proxy must hand over every RESP3 reply byte for byte, pushes and
// attributes included. DEBUG PROTOCOL makes the server produce each type.
func TestProxyRelaysEveryReplyTypeUnchanged(t *testing.T) {
	s := StartServer(t, WithArgs("--enable-debug-command", "yes"))
	p := StartProxy(t, s.Addr())
	viaProxy := dialRaw(t, p.Addr())
	direct := dialRaw(t, s.Addr())
	for _, c := range []*rawConn{viaProxy, direct} {
		c.send("HELLO", "3")
		require.True(t, strings.HasPrefix(c.reply(), "%"), "HELLO 3 answers with a map")
		c.send("HSET", "h", "f", "v")
		c.send("SADD", "s", "1", "2", "3")
		c.send("ZADD", "z", "1.5", "m")
		c.reply()
		c.reply()
		c.reply()
	}

	for _, cmd := range [][]string{
		{"HGETALL", "h"},
		{"SMEMBERS", "s"},
		{"ZSCORE", "z", "m"},
		{"ZRANGE", "z", "0", "-1", "WITHSCORES"},
		{"GET", "missing"},
		{"NO-SUCH-COMMAND"},
		{"EVAL", "return {big_number='123456789012345678901234567890'}", "0"},
		{"EVAL", "return {double=3.5}", "0"},
		{"DEBUG", "PROTOCOL", "string"},
		{"DEBUG", "PROTOCOL", "integer"},
		{"DEBUG", "PROTOCOL", "double"},
		{"DEBUG", "PROTOCOL", "bignum"},
		{"DEBUG", "PROTOCOL", "null"},
		{"DEBUG", "PROTOCOL", "array"},
		{"DEBUG", "PROTOCOL", "set"},
		{"DEBUG", "PROTOCOL", "map"},
		{"DEBUG", "PROTOCOL", "attrib"},
		{"DEBUG", "PROTOCOL", "push"},
		{"DEBUG", "PROTOCOL", "verbatim"},
		{"DEBUG", "PROTOCOL", "true"},
		{"DEBUG", "PROTOCOL", "false"},
	} {
		direct.send(cmd...)
		want := direct.replyPastPushes()
		viaProxy.send(cmd...)
		require.Equal(t, want, viaProxy.replyPastPushes(), "%v", cmd)
	}
	require.Zero(t, p.Dropped())
}

func TestProxyHandlesPipelinedAndInlineRequestsInOrder(t *testing.T) {
	s := StartServer(t)
	p := StartProxy(t, s.Addr())
	c := dialRaw(t, p.Addr())

	// One write: inline commands, empty requests Redis ignores, and a
	// command array.
	c.write("PING\r\n\r\n*0\r\nSET k v\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
	require.Equal(t, "+PONG\r\n", c.reply())
	require.Equal(t, "+OK\r\n", c.reply())
	require.Equal(t, "$1\r\nv\r\n", c.reply())
	require.Equal(t, 3, p.Requests(nil), "empty requests are not passed on")
}

// Pushes the server sends on its own, between replies, reach the client at
// once and do not stand in for the reply to the client's next request.
func TestProxyForwardsPushesOutsideReplies(t *testing.T) {
	s := StartServer(t)
	p := StartProxy(t, s.Addr())
	c := dialRaw(t, p.Addr())
	c.send("HELLO", "3")
	c.reply()
	c.send("CLIENT", "TRACKING", "ON")
	require.Equal(t, "+OK\r\n", c.reply())
	c.send("GET", "tracked")
	require.Equal(t, "_\r\n", c.reply())

	require.NoError(t, s.Client(t).Set(context.Background(), "tracked", "x", 0).Err())
	require.Equal(t, ">2\r\n$10\r\ninvalidate\r\n*1\r\n$7\r\ntracked\r\n", c.reply(), "invalidation forwarded without a request")

	c.send("GET", "tracked")
	require.Equal(t, "$1\r\nx\r\n", c.reply())
}

// A push preceding a reply is not the reply: it reaches the client, and the
// reply after it is the one dropped.
func TestProxyDropReplyAfterPush(t *testing.T) {
	s := StartServer(t, WithArgs("--enable-debug-command", "yes"))
	p := StartProxy(t, s.Addr())
	c := dialRaw(t, p.Addr())
	c.send("HELLO", "3")
	c.reply()
	p.DropReplies(1, isCommand("DEBUG"))
	c.send("DEBUG", "PROTOCOL", "push")
	require.True(t, strings.HasPrefix(c.reply(), ">2\r\n"), "the push is forwarded")
	c.requireClosed()
	require.Equal(t, 1, p.Dropped())
}

// The fault DropReplies exists for: the server runs INCR, the reply is lost
// with the connection, go-redis retries on a new connection, and INCR runs a
// second time. The caller sees one successful INCR.
func TestProxyDropReplyMakesRetriedIncrRunTwice(t *testing.T) {
	s := StartServer(t)
	p := StartProxy(t, s.Addr())
	c := proxyClient(t, p, &redis.Options{}) // default MaxRetries: 3
	ctx := context.Background()
	p.DropReplies(1, isCommand("INCR"))

	n, err := c.Incr(ctx, "counter").Result()
	require.NoError(t, err, "go-redis retries after the dropped reply")
	require.Equal(t, int64(2), n)
	require.Equal(t, "2", s.Client(t).Get(ctx, "counter").Val(), "INCR ran twice on the server")
	require.Equal(t, 1, p.Dropped())
	require.Equal(t, 2, p.Requests(isCommand("INCR")), "the retry went through the proxy")
}

func TestProxyDropReplyWithoutRetriesFailsTheCommand(t *testing.T) {
	s := StartServer(t)
	p := StartProxy(t, s.Addr())
	c := proxyClient(t, p, &redis.Options{MaxRetries: -1})
	direct := s.Client(t)
	ctx := context.Background()
	p.DropReplies(1, isCommand("INCR"))

	err := c.Incr(ctx, "counter").Err()
	require.ErrorIs(t, err, io.EOF, "the client sees the connection close")
	require.Equal(t, "1", direct.Get(ctx, "counter").Val(), "the server ran the INCR whose reply was dropped")
	require.Equal(t, 1, p.Dropped())

	n, err := c.Incr(ctx, "counter").Result()
	require.NoError(t, err, "only one reply was to be dropped")
	require.Equal(t, int64(2), n)
	require.Equal(t, 1, p.Dropped())
}

// Without a client library in between: the connection closes, cleanly, only
// after the server has run the command.
func TestProxyDropReplyClosesTheConnection(t *testing.T) {
	s := StartServer(t)
	p := StartProxy(t, s.Addr())
	p.DropReplies(1, func(args []string) bool { return len(args) == 3 && args[0] == "SET" && args[1] == "dropped" })
	c := dialRaw(t, p.Addr())
	c.send("SET", "kept", "1")
	require.Equal(t, "+OK\r\n", c.reply())
	c.send("SET", "dropped", "2")
	c.requireClosed()

	require.Equal(t, "2", s.Client(t).Get(context.Background(), "dropped").Val())
	require.Equal(t, 1, p.Dropped())
}

// Requests are passed on one at a time: once a reply in a pipeline is dropped,
// the commands after it never reach the server.
func TestProxyDropReplyEndsPipelineAtTheDroppedCommand(t *testing.T) {
	s := StartServer(t)
	p := StartProxy(t, s.Addr())
	c := proxyClient(t, p, &redis.Options{MaxRetries: -1})
	direct := s.Client(t)
	ctx := context.Background()
	p.DropReplies(1, func(args []string) bool { return isCommand("INCR")(args) && args[1] == "b" })

	_, err := c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Incr(ctx, "a")
		pipe.Incr(ctx, "b")
		pipe.Incr(ctx, "c")
		return nil
	})
	require.Error(t, err)
	require.Equal(t, "1", direct.Get(ctx, "a").Val())
	require.Equal(t, "1", direct.Get(ctx, "b").Val())
	require.Zero(t, direct.Exists(ctx, "c").Val(), "the command after the dropped reply was never sent")
	require.Equal(t, 1, p.Dropped())
	require.Equal(t, 2, p.Requests(isCommand("INCR")))
}

// The rate limiter's own case: a script run by EVALSHA, matched on its key.
func TestProxyDropReplyOfScriptMatchedByKey(t *testing.T) {
	s := StartServer(t)
	p := StartProxy(t, s.Addr())
	c := proxyClient(t, p, &redis.Options{})
	direct := s.Client(t)
	ctx := context.Background()
	script := redis.NewScript(`return redis.call('INCRBY', KEYS[1], ARGV[1])`)
	require.NoError(t, script.Load(ctx, direct).Err())
	isEvalSHAOn := func(key string) func([]string) bool {
		return func(args []string) bool {
			return isCommand("EVALSHA")(args) && len(args) > 3 && args[2] == "1" && args[3] == key
		}
	}
	p.DropReplies(1, isEvalSHAOn("rl:{user}"))

	require.Equal(t, int64(5), script.Run(ctx, c, []string{"rl:{other}"}, 5).Val())
	n, err := script.Run(ctx, c, []string{"rl:{user}"}, 5).Int64()
	require.NoError(t, err)
	require.Equal(t, int64(10), n, "the retried script ran twice")
	require.Equal(t, "10", direct.Get(ctx, "rl:{user}").Val())
	require.Equal(t, "5", direct.Get(ctx, "rl:{other}").Val())
	require.Equal(t, 1, p.Dropped())
	require.Equal(t, 2, p.Requests(isEvalSHAOn("rl:{user}")))
}

// Many connections at once, with drops spread among them. Enough retries are
// allowed that every INCR succeeds however the drops fall, so each drop adds
// exactly one extra increment.
func TestProxyDropRepliesUnderConcurrentClients(t *testing.T) {
	const workers, perWorker, drops = 8, 25, 5
	s := StartServer(t)
	p := StartProxy(t, s.Addr())
	c := proxyClient(t, p, &redis.Options{PoolSize: workers, MaxRetries: drops + 1})
	ctx := context.Background()
	p.DropReplies(2, isCommand("INCR"))
	p.DropReplies(drops-2, isCommand("INCR")) // calls add up

	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for range workers {
		wg.Go(func() {
			for range perWorker {
				if err := c.Incr(ctx, "counter").Err(); err != nil {
					errs <- err
				}
				if err := c.Get(ctx, "counter").Err(); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, fmt.Sprint(workers*perWorker+drops), s.Client(t).Get(ctx, "counter").Val())
	require.Equal(t, drops, p.Dropped())
	require.Equal(t, workers*perWorker+drops, p.Requests(isCommand("INCR")))
}

func TestProxyClosesClientsWhenServerStops(t *testing.T) {
	s := StartServer(t)
	p := StartProxy(t, s.Addr())
	c := dialRaw(t, p.Addr())
	c.send("PING")
	require.Equal(t, "+PONG\r\n", c.reply())
	client := proxyClient(t, p, &redis.Options{MaxRetries: -1})
	ctx := context.Background()
	require.NoError(t, client.Ping(ctx).Err())

	s.Stop(t)
	c.requireClosed() // an idle connection is closed when the server's is
	dialRaw(t, p.Addr()).requireClosed()
	require.Error(t, client.Ping(ctx).Err())

	s.Start(t)
	require.NoError(t, client.Ping(ctx).Err(), "the proxy reaches the restarted server")
}

func TestProxyClosesClientsWhenServerRefuses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	p := StartProxy(t, addr)
	dialRaw(t, p.Addr()).requireClosed()
	err = proxyClient(t, p, &redis.Options{MaxRetries: -1}).Ping(context.Background()).Err()
	require.Error(t, err)
}

// A client hanging up closes its connection to the server, even while its
// command is still running (a blocked BLPOP).
func TestProxyClosesServerConnWhenClientHangsUp(t *testing.T) {
	s := StartServer(t)
	p := StartProxy(t, s.Addr())
	idle := dialRaw(t, p.Addr())
	idle.send("CLIENT", "SETNAME", "proxied-idle")
	require.Equal(t, "+OK\r\n", idle.reply())
	blocked := dialRaw(t, p.Addr())
	blocked.send("CLIENT", "SETNAME", "proxied-blocked")
	require.Equal(t, "+OK\r\n", blocked.reply())
	blocked.send("BLPOP", "nothing", "0")
	awaitClients(t, s, "name=proxied-blocked", "cmd=blpop")

	require.NoError(t, idle.conn.Close())
	require.NoError(t, blocked.conn.Close())
	awaitClients(t, s, "name=proxied-", "")
}

func TestProxyCleanupClosesEverything(t *testing.T) {
	s := StartServer(t)
	var p *Proxy
	var conns []*rawConn
	t.Run("owner", func(st *testing.T) {
		p = StartProxy(st, s.Addr())
		// The connections belong to the outer test, so that only the
		// proxy's cleanup can have closed them when it checks.
		idle := dialRaw(t, p.Addr()).as(st)
		idle.send("CLIENT", "SETNAME", "proxied-idle")
		require.Equal(st, "+OK\r\n", idle.reply())
		blocked := dialRaw(t, p.Addr()).as(st)
		blocked.send("CLIENT", "SETNAME", "proxied-blocked")
		require.Equal(st, "+OK\r\n", blocked.reply())
		blocked.send("BLPOP", "nothing", "0")
		awaitClients(st, s, "name=proxied-blocked", "cmd=blpop")
		partial := dialRaw(t, p.Addr()).as(st)
		partial.write("*2\r\n$4\r\nECHO\r\n$5\r\nhe")
		conns = []*rawConn{idle, blocked, partial}
	})
	conns[0].as(t).requireClosed()
	conns[1].as(t).requireClosed()
	// The proxy may close before it has read the partial request, and a
	// socket closed with unread data is reset rather than shut down.
	conns[2].as(t).requireClosedOrReset()
	_, err := net.Dial("tcp", p.Addr())
	require.Error(t, err, "the listener is closed")
	awaitClients(t, s, "name=proxied-", "")

	// Cleanup waited for the goroutines; make sure that wait really ended.
	exited := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(rawTimeout):
		t.Fatalf("proxy goroutines still running %v after cleanup", rawTimeout)
	}
}

// isCommand returns a match function for requests of the command name.
func isCommand(name string) func(args []string) bool {
	return func(args []string) bool { return len(args) > 0 && strings.EqualFold(args[0], name) }
}

// proxyClient returns a go-redis client with opts connecting to p, closed
// when the test ends.
func proxyClient(t testing.TB, p *Proxy, opts *redis.Options) *redis.Client {
	t.Helper()
	opts.Addr = p.Addr()
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// awaitClients polls until the server's CLIENT LIST has a line containing
// both part and want, or, if want is "", until it has none containing part.
func awaitClients(t testing.TB, s *Server, part, want string) {
	t.Helper()
	c := s.Client(t)
	err := poll(stopTimeout, func() error {
		list, err := c.ClientList(context.Background()).Result()
		if err != nil {
			return err
		}
		for line := range strings.Lines(list) {
			if strings.Contains(line, part) && (want == "" || strings.Contains(line, want)) {
				if want == "" {
					return fmt.Errorf("server still has a client %q", strings.TrimSpace(line))
				}
				return nil
			}
		}
		if want == "" {
			return nil
		}
		return fmt.Errorf("no client with %q and %q in:\n%s", part, want, list)
	})
	require.NoError(t, err)
}

// rawConn is a plain TCP connection speaking RESP, for tests that need
// control over exactly what is written and read.
type rawConn struct {
	t    testing.TB
	conn net.Conn
	r    *bufio.Reader
}

// dialRaw connects to addr; the connection is closed when the test ends.
func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, rawTimeout)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return &rawConn{t: t, conn: conn, r: bufio.NewReader(conn)}
}

// as returns a copy of c that reports failures to t.
func (c *rawConn) as(t testing.TB) *rawConn {
	return &rawConn{t: t, conn: c.conn, r: c.r}
}

// write writes s as it is.
func (c *rawConn) write(s string) {
	c.t.Helper()
	require.NoError(c.t, c.conn.SetWriteDeadline(time.Now().Add(rawTimeout)))
	_, err := io.WriteString(c.conn, s)
	require.NoError(c.t, err)
}

// send writes a command as an array of bulk strings, as client libraries do.
func (c *rawConn) send(args ...string) {
	c.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	c.write(b.String())
}

// reply reads one value.
func (c *rawConn) reply() string {
	c.t.Helper()
	require.NoError(c.t, c.conn.SetReadDeadline(time.Now().Add(rawTimeout)))
	raw, _, err := readReply(c.r)
	require.NoError(c.t, err)
	return string(raw)
}

// replyPastPushes reads values up to and including the first that is not a
// push, and returns them all.
func (c *rawConn) replyPastPushes() string {
	c.t.Helper()
	var all []byte
	for {
		require.NoError(c.t, c.conn.SetReadDeadline(time.Now().Add(rawTimeout)))
		raw, kind, err := readReply(c.r)
		require.NoError(c.t, err)
		all = append(all, raw...)
		if kind != '>' {
			return string(all)
		}
	}
}

// requireClosed requires the peer to close the connection, cleanly (as a
// client library needs to see it to retry) and without sending anything
// first.
func (c *rawConn) requireClosed() {
	c.t.Helper()
	require.ErrorIs(c.t, c.awaitClose(), io.EOF)
}

// requireClosedOrReset requires the peer to close or reset the connection
// without sending anything first.
func (c *rawConn) requireClosedOrReset() {
	c.t.Helper()
	err := c.awaitClose()
	if !errors.Is(err, syscall.ECONNRESET) {
		require.ErrorIs(c.t, err, io.EOF)
	}
}

// awaitClose reads until the connection fails and returns the error,
// failing the test if data arrives or nothing happens within rawTimeout.
func (c *rawConn) awaitClose() error {
	c.t.Helper()
	require.NoError(c.t, c.conn.SetReadDeadline(time.Now().Add(rawTimeout)))
	n, err := c.r.Read(make([]byte, 1))
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		c.t.Fatalf("connection still open after %v", rawTimeout)
	}
	require.Zero(c.t, n, "no data before the close")
	return err
}
