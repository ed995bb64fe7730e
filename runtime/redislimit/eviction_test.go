package redislimit

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// syncBuffer is a bytes.Buffer safe for the limiter's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// checkConfigNow makes one decision that starts a configuration check and
// waits until the check has finished.
func checkConfigNow(t *testing.T, lim *Limiter, l runtime.Limit) {
	t.Helper()
	lim.settings.reset()
	_, err := lim.Allow(context.Background(), l, "k")
	require.NoError(t, err)
	deadline := time.Now().Add(recoveryBound)
	for lim.settings.running.Load() || lim.settings.next.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the configuration check did not finish within %v", recoveryBound)
		}
		time.Sleep(time.Millisecond)
	}
}

// riskEvents returns the events reporting ErrEvictionRisk.
func riskEvents(events *degradedLog) []DegradedEvent {
	var out []DegradedEvent
	for _, ev := range events.since(0) {
		if ev.Err != nil && strings.Contains(ev.Err.Error(), ErrEvictionRisk.Error()) {
			out = append(out, ev)
		}
	}
	return out
}

// TestEvictionPolicyIsReported runs a limiter against real servers whose
// maxmemory-policy lets Redis delete limiter keys, and checks that it says
// so once per finding, through OnDegraded and the logger, naming the policy
// and the fix; that a safe configuration says nothing; and that a server
// which refuses CONFIG (as managed Redis often does) is reported once too.
func TestEvictionPolicyIsReported(t *testing.T) {
	l := runtime.Limit{Name: "config.eviction", Window: time.Minute, Max: 1000}
	bg := context.Background()

	t.Run("evicting policies", func(t *testing.T) {
		srv := redistest.StartServer(t, redistest.WithArgs("--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"))
		admin := srv.Client(t)
		events := &degradedLog{}
		var logs syncBuffer
		lim := New(srv.Client(t), WithOnDegraded(events.record),
			WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))

		checkConfigNow(t, lim, l)
		evs := riskEvents(events)
		require.Len(t, evs, 1, "allkeys-lru with maxmemory must be reported")
		require.ErrorIs(t, evs[0].Err, ErrEvictionRisk)
		msg := evs[0].Err.Error()
		t.Logf("reported: %s", msg)
		require.Contains(t, msg, "allkeys-lru")
		require.Contains(t, msg, "noeviction", "the report must name the fix")
		require.Equal(t, runtime.Decision{}, evs[0].Decision, "a configuration finding decides nothing")
		require.Equal(t, l, evs[0].Limit)
		require.Equal(t, 1, strings.Count(logs.String(), "allkeys-lru"), "logged once: %s", logs.String())
		require.Contains(t, logs.String(), "level=WARN")

		checkConfigNow(t, lim, l)
		require.Len(t, riskEvents(events), 1, "the same finding is reported once")
		require.Equal(t, 1, strings.Count(logs.String(), "allkeys-lru"))

		require.NoError(t, admin.ConfigSet(bg, "maxmemory-policy", "volatile-lru").Err())
		checkConfigNow(t, lim, l)
		evs = riskEvents(events)
		require.Len(t, evs, 2, "a new finding is reported again")
		require.Contains(t, evs[1].Err.Error(), "volatile-lru")

		require.NoError(t, admin.ConfigSet(bg, "maxmemory-policy", "noeviction").Err())
		checkConfigNow(t, lim, l)
		require.Len(t, riskEvents(events), 2, "noeviction is safe")
		require.NoError(t, admin.ConfigSet(bg, "maxmemory-policy", "allkeys-random").Err())
		checkConfigNow(t, lim, l)
		require.Len(t, riskEvents(events), 3, "a risk that comes back after a fix is reported again")
	})

	t.Run("safe configurations", func(t *testing.T) {
		// No maxmemory: Redis never evicts, whatever the policy says.
		srv := redistest.StartServer(t, redistest.WithArgs("--maxmemory-policy", "allkeys-lru"))
		noLimit := &degradedLog{}
		lim := New(srv.Client(t), WithOnDegraded(noLimit.record))
		checkConfigNow(t, lim, l)
		require.Empty(t, riskEvents(noLimit))

		srv = redistest.StartServer(t, redistest.WithArgs("--maxmemory", "100mb", "--maxmemory-policy", "noeviction"))
		noEviction := &degradedLog{}
		lim = New(srv.Client(t), WithOnDegraded(noEviction.record))
		checkConfigNow(t, lim, l)
		require.Empty(t, riskEvents(noEviction))
	})

	t.Run("CONFIG not permitted", func(t *testing.T) {
		srv := redistest.StartServer(t)
		admin := srv.Client(t)
		require.NoError(t, admin.Do(bg, "ACL", "SETUSER", "app", "on", ">app-pass", "~*", "&*", "+@all", "-config").Err())
		client := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "app", Password: "app-pass"})
		t.Cleanup(func() { _ = client.Close() })
		events := &degradedLog{}
		var logs syncBuffer
		lim := New(client, WithOnDegraded(events.record),
			WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		checkConfigNow(t, lim, l)
		checkConfigNow(t, lim, l)
		evs := riskEvents(events)
		require.Len(t, evs, 1, "a configuration the limiter cannot read is reported, once")
		t.Logf("reported: %s", evs[0].Err)
		require.Contains(t, evs[0].Err.Error(), "cannot read maxmemory-policy")
		require.Contains(t, evs[0].Err.Error(), "noeviction")
		require.Equal(t, 1, strings.Count(logs.String(), "cannot read maxmemory-policy"))
		for _, ev := range events.since(0) {
			require.ErrorIs(t, ev.Err, ErrEvictionRisk, "decisions themselves were made by Redis")
		}
	})
}
