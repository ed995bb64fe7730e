package redislimit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// The permit tests run holders in processes of their own, to kill or
// freeze them: this test binary started again with permitInstanceEnv set,
// which init sees (TestMain is the lease tests'). A holder connects and
// writes "ready"; once it reads "go" it holds Holds permits of its limit
// on its key, each under runtime.Keep, and writes "held". It writes "lost
// i" when Keep cancels hold i with runtime.ErrPermitLost. Once its stdin
// closes it settles every hold, writing "settled i ok", "settled i lost"
// or "settled i error", then "done".

// permitInstanceEnv holds the JSON permitInstanceConfig of a holder.
const permitInstanceEnv = "REDISLIMIT_TEST_PERMIT_INSTANCE"

func init() {
	if cfg := os.Getenv(permitInstanceEnv); cfg != "" {
		os.Exit(runPermitInstance(cfg))
	}
}

// permitHolderName is the client name of a holder's connections.
const permitHolderName = "permit-holder"

// permitInstanceConfig is what one holder holds.
type permitInstanceConfig struct {
	Addr  string
	Limit runtime.Limit
	Key   string
	Holds int
}

// runPermitInstance is the holder program; it returns the exit code.
func runPermitInstance(cfgJSON string) int {
	var cfg permitInstanceConfig
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "permit instance: bad %s: %v\n", permitInstanceEnv, err)
		return 2
	}
	// Named, so that the test sees when Redis has closed its connections.
	client := redis.NewClient(&redis.Options{Addr: cfg.Addr, ClientName: permitHolderName})
	defer client.Close()
	lim := New(client, WithFailurePolicy(FailClosed), WithTimeout(5*time.Second))
	stop, ok := awaitGo("permit instance")
	if !ok {
		return 2
	}
	var (
		out   sync.Mutex
		holds []runtime.Hold
		stops []func()
	)
	say := func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
	}
	for i := range cfg.Holds {
		h, err := runtime.Admit(context.Background(), lim, runtime.Request{Limit: cfg.Limit, Key: cfg.Key})
		if err != nil {
			fmt.Fprintf(os.Stderr, "permit instance: hold %d: %v\n", i, err)
			return 2
		}
		kept, stopKeep := runtime.Keep(context.Background(), h)
		go func() {
			<-kept.Done()
			if errors.Is(context.Cause(kept), runtime.ErrPermitLost) {
				say("lost %d", i)
			}
		}()
		holds, stops = append(holds, h), append(stops, stopKeep)
	}
	say("held")
	<-stop
	for i, h := range holds {
		stops[i]()
		err := h.Settle(context.Background(), 1)
		switch {
		case err == nil:
			say("settled %d ok", i)
		case errors.Is(err, runtime.ErrPermitLost):
			say("settled %d lost", i)
		default:
			say("settled %d error %v", i, err)
		}
	}
	say("done")
	return 0
}

// startPermitInstance starts a holder per cfg, lets it hold its permits,
// and waits until it has. t.Cleanup kills it.
func startPermitInstance(t *testing.T, cfg permitInstanceConfig) *instance {
	t.Helper()
	in := startProgram(t, permitInstanceEnv, cfg)
	_, err := io.WriteString(in.stdin, "go\n")
	require.NoError(t, err)
	expectLine(t, in, "held")
	return in
}

// expectLine waits for the next line of in and requires it to be want.
func expectLine(t *testing.T, in *instance, want string) {
	t.Helper()
	require.Equal(t, want, in.line(t, instanceReportBound), "stderr: %s", in.stderr.String())
}

// redisTime returns Redis's clock in µs.
func redisTime(t *testing.T, srv *redistest.Server) int64 {
	t.Helper()
	now, err := srv.Client(t).Time(ctx).Result()
	require.NoError(t, err)
	return now.UnixMicro()
}

// awaitAdmitted holds a permit of l on key through lim as soon as one is
// free, within a bound no correct run comes near.
func awaitAdmitted(t *testing.T, lim *Limiter, l runtime.Limit, key string) runtime.PermitHold {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ds, h, err := lim.Hold(ctx, runtime.Request{Limit: l, Key: key})
		require.NoError(t, err)
		if ds.Allowed {
			return h.(runtime.PermitHold)
		}
	}
	t.Fatal("no permit came back")
	return nil
}

// TestPermitsOfAKilledHolderComeBack kills (SIGKILL) a process holding
// every permit of a key, renewed by runtime.Keep: its permits expire, on
// Redis's clock, within one lease of the kill, and another caller is
// admitted then.
func TestPermitsOfAKilledHolderComeBack(t *testing.T) {
	srv := redistest.StartServer(t)
	l := concLimit("conc.killed", 2, 2*time.Second)
	in := startPermitInstance(t, permitInstanceConfig{Addr: srv.Addr(), Limit: l, Key: "k", Holds: 2})
	lim := New(srv.Client(t), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	ds, _, err := lim.Hold(ctx, runtime.Request{Limit: l, Key: "k"})
	require.NoError(t, err)
	require.False(t, ds.Allowed, "the holder holds every permit")

	list, err := srv.Client(t).ClientList(ctx).Result()
	require.NoError(t, err)
	require.Contains(t, list, "name="+permitHolderName+" ", "the holder's connections are named")
	require.NoError(t, in.cmd.Process.Kill())
	// Once Redis has closed the holder's connections, it has run every
	// renewal the holder sent before it died.
	require.Eventually(t, func() bool {
		list, err := srv.Client(t).ClientList(ctx).Result()
		require.NoError(t, err)
		return !strings.Contains(list, "name="+permitHolderName+" ")
	}, time.Minute, 10*time.Millisecond)
	killed := redisTime(t, srv)
	expiries, err := srv.Client(t).ZRangeByScoreWithScores(ctx, lim.storageKey(l, "k"), &redis.ZRangeBy{Min: "0", Max: "+inf"}).Result()
	require.NoError(t, err)
	require.Len(t, expiries, 2)
	for _, z := range expiries {
		require.LessOrEqual(t, int64(z.Score), killed+l.Window.Microseconds(), "a permit outlives the kill by one lease at most")
	}
	h := awaitAdmitted(t, lim, l, "k")
	require.NoError(t, h.Settle(ctx, 1))
}

// TestPermitsOfAPausedHolder freezes (SIGSTOP) a process holding the only
// permit of a key until its lease has passed and another caller holds the
// permit, then resumes it (SIGCONT): runtime.Keep cancels its call with
// ErrPermitLost, its release reports the permit lost, and the other
// caller's permit stays held.
func TestPermitsOfAPausedHolder(t *testing.T) {
	srv := redistest.StartServer(t)
	l := concLimit("conc.paused", 1, 3*time.Second)
	in := startPermitInstance(t, permitInstanceConfig{Addr: srv.Addr(), Limit: l, Key: "k", Holds: 1})
	lim := New(srv.Client(t), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))

	require.NoError(t, redistest.PauseProcess(in.cmd.Process))
	mine := awaitAdmitted(t, lim, l, "k")
	kept, stop := runtime.Keep(ctx, mine)
	defer stop()
	require.NoError(t, redistest.ResumeProcess(in.cmd.Process))

	expectLine(t, in, "lost 0")
	require.NoError(t, in.stdin.Close())
	expectLine(t, in, "settled 0 lost")
	expectLine(t, in, "done")
	require.NoError(t, kept.Err(), "the other caller's permit is held")
	require.Equal(t, 1, permitsHeld(t, lim, l, "k"))
	require.NoError(t, mine.Renew(ctx))
	stop()
	require.NoError(t, mine.Settle(ctx, 1))
	require.Zero(t, permitsHeld(t, lim, l, "k"))
}
