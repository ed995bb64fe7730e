package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestServerAnswersOnLoopback(t *testing.T) {
	s := StartServer(t)
	host, _, err := net.SplitHostPort(s.Addr())
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", host)
	require.True(t, s.Running())

	ctx := context.Background()
	c := s.Client(t)
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	require.Equal(t, "v", c.Get(ctx, "k").Val())

	// Nothing must be persisted: tests share no state through disk.
	save, err := c.ConfigGet(ctx, "save").Result()
	require.NoError(t, err)
	require.Equal(t, "", save["save"])
	aof, err := c.ConfigGet(ctx, "appendonly").Result()
	require.NoError(t, err)
	require.Equal(t, "no", aof["appendonly"])
}

func TestServerStopThenStartOnSamePort(t *testing.T) {
	s := StartServer(t)
	addr := s.Addr()
	ctx := context.Background()
	c := s.Client(t)
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())

	s.Stop(t)
	require.False(t, s.Running())
	_, err := net.Dial("tcp", addr)
	require.Error(t, err, "a stopped server's port must refuse connections")
	require.Error(t, c.Ping(ctx).Err())

	s.Start(t)
	require.Equal(t, addr, s.Addr())
	require.NoError(t, c.Ping(ctx).Err(), "the same client reconnects after Start")
	require.ErrorIs(t, c.Get(ctx, "k").Err(), redis.Nil, "a restarted server starts empty")

	s.StopGracefully(t)
	_, err = net.Dial("tcp", addr)
	require.Error(t, err)
	s.Start(t)
	require.NoError(t, c.Ping(ctx).Err())
}

func TestServerWithArgs(t *testing.T) {
	s := StartServer(t, WithArgs("--maxmemory", "1mb"))
	got, err := s.Client(t).ConfigGet(context.Background(), "maxmemory").Result()
	require.NoError(t, err)
	require.Equal(t, "1048576", got["maxmemory"])
}

func TestServerPauseMakesClientsTimeOut(t *testing.T) {
	s := StartServer(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), ReadTimeout: 100 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	ctx := context.Background()
	require.NoError(t, c.Ping(ctx).Err())

	s.Pause(t)
	err := c.Ping(ctx).Err()
	var netErr net.Error
	require.True(t, errors.As(err, &netErr) && netErr.Timeout(), "want a timeout from a paused server, got %v", err)

	s.Resume(t)
	require.NoError(t, c.Ping(ctx).Err())

	s.Pause(t)
	s.Stop(t)
	require.False(t, s.Running(), "a paused server can be stopped")
}

func TestServerStoppedByCleanup(t *testing.T) {
	var addr string
	t.Run("owner", func(t *testing.T) {
		addr = StartServer(t).Addr()
	})
	_, err := net.Dial("tcp", addr)
	require.Error(t, err, "the server must be gone once the test that started it ended")
}

func TestServerFailsWithoutRedisInPath(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	ft := &fatalRecorder{TB: t}
	func() {
		defer func() { _ = recover() }()
		StartServer(ft)
	}()
	require.Contains(t, ft.msg, "redis-server not found in PATH")
	require.Contains(t, ft.msg, "apt-get install -y redis-server")
}

// fatalRecorder captures a Fatalf instead of ending the test, by panicking
// out of the code under test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

// A port taken between choosing it and redis-server binding it must be
// reported as errPortInUse, which makes StartServer retry elsewhere, whether
// the port holds some listener or another redis-server.
func TestLaunchReportsPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	s := newServer(t, false, nil)
	err = s.launch(l.Addr().(*net.TCPAddr).Port)
	require.ErrorIs(t, err, errPortInUse)
	require.False(t, s.Running())

	other := StartServer(t)
	err = s.launch(other.Port())
	require.ErrorIs(t, err, errPortInUse)
	require.False(t, s.Running())
	require.NoError(t, other.Client(t).Ping(context.Background()).Err(), "the other server is left alone")
}
