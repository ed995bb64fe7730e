package redislimit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestServerWideErrorsOpenTheBreaker points a limiter without a password at
// a real Redis that requires one. Every call would fail the same way, so the
// first failure must open the breaker: later calls get the policy's answer
// at once instead of each going back to Redis.
func TestServerWideErrorsOpenTheBreaker(t *testing.T) {
	srv := redistest.StartServer(t)
	admin := srv.Client(t)
	bg := context.Background()
	require.NoError(t, admin.ConfigSet(bg, "requirepass", "s3cret").Err())
	t.Cleanup(func() { _ = admin.ConfigSet(bg, "requirepass", "").Err() })

	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	events := &degradedLog{}
	lim := New(client, WithFailurePolicy(FailOpen), WithRetryInterval(time.Hour),
		WithOnDegraded(events.record))
	l := runtime.Limit{Name: "breaker.auth", Window: time.Minute, Max: 3}

	for i := 0; i < 5; i++ {
		d, err := lim.Allow(bg, l, "k")
		require.NoError(t, err)
		require.True(t, d.Allowed, "FailOpen admits")
	}
	evs := events.since(0)
	require.Len(t, evs, 5)
	t.Logf("first degraded event: %v", evs[0].Err)
	require.NotErrorIs(t, evs[0].Err, ErrCircuitOpen, "the first call asks Redis and reports its error")
	var rerr redis.Error
	require.ErrorAs(t, evs[0].Err, &rerr, "the event carries Redis' own error")
	for i, ev := range evs[1:] {
		require.ErrorIs(t, ev.Err, ErrCircuitOpen, "call %d: an authentication failure concerns every key, so Redis must not be asked again", i+2)
	}
}

// redisErr is an error reply as go-redis returns it, for classifying
// replies that are hard to provoke from a healthy server.
type redisErr string

func (e redisErr) Error() string { return string(e) }
func (redisErr) RedisError()     {}

// TestTripsBreaker classifies error replies of Redis 6 and 7: only those
// about one key or one script spare the breaker.
func TestTripsBreaker(t *testing.T) {
	spare := []string{
		"WRONGTYPE Operation against a key holding the wrong kind of value script: 1a2b, on @user_script:12.",
		"ERR user_script:12: Script attempted to access nonexistent global variable 'x' script: 1a2b, on @user_script:12.",
		"ERR Error running script (call to f_1a2b): @user_script:12: WRONGTYPE Operation against a key holding the wrong kind of value",
		"ERR ratelimit: unknown algorithm nope",
	}
	trip := []string{
		"ERR Protocol error: unauthenticated multibulk length",
		"NOAUTH Authentication required.",
		"WRONGPASS invalid username-password pair or user is disabled.",
		"NOPERM this user has no permissions to run the 'evalsha' command",
		"OOM command not allowed when used memory > 'maxmemory'. script: 1a2b, on @user_script:40.",
		"ERR Error running script (call to f_1a2b): @user_script:40: -OOM command not allowed when used memory > 'maxmemory'.",
		"LOADING Redis is loading the dataset in memory",
		"READONLY You can't write against a read only replica.",
		"CLUSTERDOWN The cluster is down",
		"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
		"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
		"MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk.",
		"ERR max number of clients reached",
		"ERR unknown command 'EVALSHA', with args beginning with: ",
	}
	for _, msg := range spare {
		require.False(t, tripsBreaker(redisErr(msg)), "%q concerns one key or script", msg)
	}
	for _, msg := range trip {
		require.True(t, tripsBreaker(redisErr(msg)), "%q concerns the whole server", msg)
	}
	require.True(t, tripsBreaker(context.DeadlineExceeded))
	require.True(t, tripsBreaker(errors.New("dial tcp 127.0.0.1:1: connect: connection refused")))
}
