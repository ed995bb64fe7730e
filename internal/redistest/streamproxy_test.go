package redistest

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStreamProxy: bytes from the target pass unless held; Release
// delivers what was held; the target closing while bytes are held drops
// them, and the connection closes.
func TestStreamProxy(t *testing.T) {
	t.Parallel()
	srv := StartServer(t)
	p := StartStreamProxy(t, srv.Addr())
	conn, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer conn.Close()
	r := bufio.NewReader(conn)
	ping := func() {
		t.Helper()
		_, err := io.WriteString(conn, "PING\r\n")
		require.NoError(t, err)
	}

	ping()
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", line)
	require.Equal(t, 1, p.Connections())

	p.Hold()
	ping()
	require.Eventually(t, func() bool { return p.Held() == int64(len("+PONG\r\n")) }, 10*time.Second, 5*time.Millisecond,
		"the reply must reach the proxy and be held there")
	p.Release()
	line, err = r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", line)
	require.Zero(t, p.Held())

	p.Hold()
	ping()
	require.Eventually(t, func() bool { return p.Held() > 0 }, 10*time.Second, 5*time.Millisecond)
	srv.Stop(t)
	_, err = r.ReadString('\n')
	require.ErrorIs(t, err, io.EOF, "the held reply must not be delivered once its server is gone")
	require.Equal(t, int64(len("+PONG\r\n")), p.Dropped())
	require.Zero(t, p.Held())
	require.Equal(t, 1, p.Connections())
}
