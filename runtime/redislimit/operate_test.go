package redislimit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// eventLog is an Observer that keeps the results it is told, by limit.
type eventLog struct {
	mu     sync.Mutex
	counts map[string]int
	events []runtime.Event
}

func (e *eventLog) Observe(_ context.Context, ev runtime.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.counts == nil {
		e.counts = map[string]int{}
	}
	e.counts[ev.Limit.Name+" "+ev.Result.String()+" "+ev.Source.String()]++
	e.events = append(e.events, ev)
}

func (e *eventLog) take() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.counts
	e.counts, e.events = nil, nil
	return c
}

// TestCachedDenialHoldsOnlyForItsLimitValues: a denial in the deny cache
// answers only calls of the limit values it was decided with, so neither
// an override nor a Max computed per call is ever answered with a stale
// limit.
func TestCachedDenialHoldsOnlyForItsLimitValues(t *testing.T) {
	srv := redistest.StartServer(t)
	clock := newFakeClock()
	lim, cnt := countedLimiter(t, srv, WithClock(clock.Now), WithPrefix("ov:"),
		WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	l := runtime.Limit{Name: "ov.send", Window: time.Minute, Max: 1}
	req := runtime.Request{Limit: l, Key: "tenant-a"}

	ds, asked := askCounted(t, lim, cnt, req)
	require.True(t, asked)
	require.True(t, ds.Allowed)
	ds, asked = askCounted(t, lim, cnt, req)
	require.True(t, asked)
	require.False(t, ds.Allowed)
	ds, asked = askCounted(t, lim, cnt, req)
	require.False(t, asked, "the denial is cached for Max 1")
	require.False(t, ds.Allowed)

	// A per-call Max of 3 (a directive's max= expression for a bigger
	// plan) is decided by Redis, against the same count.
	pro := req
	pro.Limit.Max = 3
	for range 2 {
		ds, asked = askCounted(t, lim, cnt, pro)
		require.True(t, asked)
		require.True(t, ds.Allowed)
	}
	ds, asked = askCounted(t, lim, cnt, pro)
	require.True(t, asked)
	require.False(t, ds.Allowed)

	// An override raising Max to 5 is decided by Redis too.
	var ov runtime.Overrides
	op := runtime.Operate(lim, runtime.WithOverrides(&ov))
	require.ErrorIs(t, runtime.Enforce(ctx, op, req), runtime.ErrLimited)
	require.NoError(t, ov.Set(map[string]runtime.Override{"ov.send": {Max: 5}}))
	before := cnt.calls(t)
	require.NoError(t, runtime.Enforce(ctx, op, req))
	require.NoError(t, runtime.Enforce(ctx, op, req))
	require.ErrorIs(t, runtime.Enforce(ctx, op, req), runtime.ErrLimited)
	require.Equal(t, int64(3), cnt.calls(t)-before, "every decision under the override asked Redis")

	// Lowering it again is answered from the cache only after Redis denied
	// under the lowered values.
	require.NoError(t, ov.Set(map[string]runtime.Override{"ov.send": {Max: 4}}))
	before = cnt.calls(t)
	require.ErrorIs(t, runtime.Enforce(ctx, op, req), runtime.ErrLimited)
	require.Equal(t, int64(1), cnt.calls(t)-before)
}

// TestShadowAndOverridesOnRedis: shadow mode admits and reports on Redis,
// beside an enforced limit; an override file's change is in force after
// the reload that reports it, and a malformed one keeps the last good
// overrides.
func TestShadowAndOverridesOnRedis(t *testing.T) {
	srv := redistest.StartServer(t)
	clock := newFakeClock()
	rec := &eventLog{}
	var ov runtime.Overrides
	lim := runtime.Operate(New(srv.Client(t), WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second)),
		runtime.WithOverrides(&ov), runtime.WithObserver(rec))
	shadow := runtime.Limit{Name: "sh.daily", Window: time.Hour, Max: 2, Mode: runtime.ModeShadow}
	enforced := runtime.Limit{Name: "sh.minute", Window: time.Minute, Max: 4}
	reqs := []runtime.Request{{Limit: shadow, Key: "k"}, {Limit: enforced, Key: "k"}}
	for range 4 {
		require.NoError(t, runtime.Enforce(ctx, lim, reqs...))
	}
	require.ErrorIs(t, runtime.Enforce(ctx, lim, reqs...), runtime.ErrLimited)
	// Redis decided every call, the shadow limit's room with it, in one
	// script each.
	require.Equal(t, map[string]int{
		"sh.daily allowed store": 2, "sh.daily shadow-limited store": 3,
		"sh.minute allowed store": 4, "sh.minute limited store": 1,
	}, rec.take())

	path := filepath.Join(t.TempDir(), "overrides.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"limits": {"sh.minute": {"max": 6}}}`), 0o600))
	reports := make(chan error, 8)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	require.NoError(t, ov.WatchFile(wctx, path, 5*time.Millisecond, func(err error) { reports <- err }))
	next := func() error {
		t.Helper()
		select {
		case err := <-reports:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("no reload reported")
			return nil
		}
	}
	for range 2 {
		require.NoError(t, runtime.Enforce(ctx, lim, reqs...))
	}
	require.ErrorIs(t, runtime.Enforce(ctx, lim, reqs...), runtime.ErrLimited)

	replace := func(contents string) {
		tmp := path + ".tmp"
		require.NoError(t, os.WriteFile(tmp, []byte(contents), 0o600))
		require.NoError(t, os.Rename(tmp, path))
	}
	replace(`{"limits": {"sh.minute": {"max": 7}, "sh.daily": {"mode": "enforce"}}}`)
	require.NoError(t, next())
	err := runtime.Enforce(ctx, lim, reqs...)
	var le *runtime.LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "sh.daily", le.Limit.Name, "the daily limit now enforces")
	require.Equal(t, runtime.ModeEnforce, le.Limit.Mode)

	replace(`{"limits": {"sh.minute": {"max": 7}, "sh.daily": {"mode": "enforce"}`)
	require.Error(t, next())
	require.ErrorIs(t, runtime.Enforce(ctx, lim, reqs...), runtime.ErrLimited, "the last good overrides stay")

	replace(`{"limits": {"sh.minute": {"max": 7}}}`)
	require.NoError(t, next())
	rec.take()
	require.NoError(t, runtime.Enforce(ctx, lim, reqs...), "the seventh call, the daily limit in shadow again")
	require.ErrorIs(t, runtime.Enforce(ctx, lim, reqs...), runtime.ErrLimited)
	got := rec.take()
	require.Equal(t, 1, got["sh.minute allowed store"])
	require.Equal(t, 1, got["sh.minute limited store"])
}

// TestObserverNeverSeesTheKeyOnRedis: the events of decisions made by
// Redis, by the deny cache and under a failure carry no trace of the key.
func TestObserverNeverSeesTheKeyOnRedis(t *testing.T) {
	srv := redistest.StartServer(t)
	rec := &eventLog{}
	const key = "carol@example.com"
	lim := runtime.Operate(New(srv.Client(t), WithFailurePolicy(FailClosed), WithTimeout(2*time.Second)),
		runtime.WithObserver(rec))
	l := runtime.Limit{Name: "key.secret", Window: time.Minute, Max: 1}
	require.NoError(t, runtime.Enforce(ctx, lim, runtime.Request{Limit: l, Key: key}))
	require.ErrorIs(t, runtime.Enforce(ctx, lim, runtime.Request{Limit: l, Key: key}), runtime.ErrLimited)
	require.ErrorIs(t, runtime.Enforce(ctx, lim, runtime.Request{Limit: l, Key: key}), runtime.ErrLimited)
	srv.Stop(t)
	other := runtime.Request{Limit: l, Key: key + ".other"}
	require.ErrorIs(t, runtime.Enforce(ctx, lim, other), runtime.ErrUnavailable)

	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Equal(t, map[string]int{
		"key.secret allowed store": 1, "key.secret limited store": 1, "key.secret limited deny-cache": 1,
		"key.secret error store": 1,
	}, rec.counts)
	for _, ev := range rec.events {
		require.NotContains(t, fmt.Sprintf("%+v %#v %v", ev, ev, ev.Err), "carol")
	}
}

// TestObserverSeesWhyRedisDidNotDecide: a decision the failure policy made
// instead of Redis reaches the observers with its source and the cause,
// first Redis's own error and then the open circuit, and the log observer
// warns of it, without the key.
func TestObserverSeesWhyRedisDidNotDecide(t *testing.T) {
	for _, tc := range []struct {
		policy FailurePolicy
		source runtime.Source
	}{
		{FailLocal, runtime.SourceFallback},
		{FailOpen, runtime.SourceFailOpen},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			srv := redistest.StartServer(t)
			rec := &eventLog{}
			var logs bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			lim := runtime.Operate(New(srv.Client(t), WithFailurePolicy(tc.policy),
				WithTimeout(2*time.Second), WithRetryInterval(time.Hour), WithInstances(1)),
				runtime.WithObserver(rec), runtime.WithObserver(runtime.NewLogObserver(log)))
			l := runtime.Limit{Name: "degraded.cause", Window: time.Minute, Max: 5}
			req := runtime.Request{Limit: l, Key: "carol@example.com"}

			require.NoError(t, runtime.Enforce(ctx, lim, req))
			srv.Stop(t)
			require.NoError(t, runtime.Enforce(ctx, lim, req), "the policy admits while Redis is down")
			require.NoError(t, runtime.Enforce(ctx, lim, req))

			rec.mu.Lock()
			evs := rec.events
			rec.mu.Unlock()
			require.Len(t, evs, 3)
			require.Equal(t, runtime.SourceStore, evs[0].Source)
			require.NoError(t, evs[0].Err, "Redis decided")
			for _, ev := range evs[1:] {
				require.Equal(t, runtime.ResultAllowed, ev.Result)
				require.Equal(t, tc.source, ev.Source)
				require.Error(t, ev.Err, "a degraded decision carries why Redis did not make it")
			}
			require.NotErrorIs(t, evs[1].Err, ErrCircuitOpen, "the first failure is Redis's own error: %v", evs[1].Err)
			require.ErrorIs(t, evs[2].Err, ErrCircuitOpen, "Redis is not asked again before the retry interval")

			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			require.Len(t, lines, 2, "both degraded decisions are logged at Warn, the healthy one is not: %s", logs.String())
			for _, line := range lines {
				var r map[string]any
				require.NoError(t, json.Unmarshal([]byte(line), &r))
				require.Equal(t, "WARN", r["level"])
				require.Equal(t, "allowed", r["result"])
				require.Equal(t, tc.source.String(), r["source"])
				require.NotEmpty(t, r["err"])
			}
			require.NotContains(t, logs.String(), "carol")
		})
	}
}

// TestOverridesNeverBreakALimitOnRedis loads, into a process that was not
// told its limits, an override that would make a token-bucket limit
// invalid: Redis decides its calls by the limit as declared, the override
// is logged once, and once the limit was decided, the same file is
// refused.
func TestOverridesNeverBreakALimitOnRedis(t *testing.T) {
	srv := redistest.StartServer(t)
	tb := runtime.Limit{Name: "Trust.TB", Window: time.Second, Max: 2, Algorithm: runtime.TokenBucket}
	path := filepath.Join(t.TempDir(), "overrides.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"limits":{"Trust.TB":{"window":"2000000h"}}}`), 0o600))

	var ov runtime.Overrides
	require.NoError(t, ov.LoadFile(path), "nothing is known of Trust.TB yet")
	var logs bytes.Buffer
	clock := newFakeClock()
	lim := runtime.Operate(New(srv.Client(t), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithClock(clock.Now)),
		runtime.WithOverrides(&ov), runtime.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	for i := range 3 {
		ds, err := lim.Decide(ctx, runtime.Request{Limit: tb, Key: "alice"})
		require.NoError(t, err, "call %d", i+1)
		require.Equal(t, runtime.SourceStore, ds.Source)
		require.Equal(t, i < 2, ds.Allowed, "call %d: the declared Max of 2", i+1)
	}
	require.Equal(t, 1, strings.Count(logs.String(), "level=ERROR"), logs.String())
	require.Contains(t, logs.String(), "limit=Trust.TB")
	require.NotContains(t, logs.String(), "alice")

	require.ErrorContains(t, ov.LoadFile(path), `"Trust.TB": its calls would fail`, "the decided limit is known now")
}
