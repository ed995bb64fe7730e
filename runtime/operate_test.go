package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/testclock"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// recorder is an Observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []runtime.Event
}

func (r *recorder) Observe(_ context.Context, ev runtime.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) take() []runtime.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	evs := r.events
	r.events = nil
	return evs
}

// results counts the recorded events per limit name and result.
func results(evs []runtime.Event) map[string]int {
	n := map[string]int{}
	for _, ev := range evs {
		n[ev.Limit.Name+" "+ev.Result.String()]++
	}
	return n
}

var ctx = context.Background()

func newTestMemory() (*memlimit.Limiter, *testclock.Clock) {
	clock := testclock.New()
	return memlimit.New(memlimit.WithClock(clock.Now)), clock
}

// TestShadowAdmitsAndReports: a limit in shadow mode never denies, its
// would-be denials are reported, and it keeps counting as it would.
func TestShadowAdmitsAndReports(t *testing.T) {
	mem, _ := newTestMemory()
	rec := &recorder{}
	lim := runtime.Operate(mem, runtime.WithObserver(rec))
	shadow := runtime.Limit{Name: "Shadow.Only", Window: time.Minute, Max: 2, Mode: runtime.ModeShadow}
	for range 5 {
		require.NoError(t, runtime.Enforce(ctx, lim, runtime.Request{Limit: shadow, Key: "k"}))
	}
	require.Equal(t, map[string]int{"Shadow.Only allowed": 2, "Shadow.Only shadow-limited": 3}, results(rec.take()))

	// Enforced, the same limit and key deny: the shadow calls beyond Max
	// were not recorded, the first two were.
	enforced := shadow
	enforced.Mode = runtime.ModeEnforce
	require.ErrorIs(t, runtime.Enforce(ctx, lim, runtime.Request{Limit: enforced, Key: "k"}), runtime.ErrLimited)
	require.Equal(t, map[string]int{"Shadow.Only limited": 1}, results(rec.take()))
}

// TestShadowBesideEnforced: a call with a shadow limit and an enforced one
// is decided and recorded by the enforced one alone once the shadow limit
// is full, and denied only by the enforced one.
func TestShadowBesideEnforced(t *testing.T) {
	mem, _ := newTestMemory()
	rec := &recorder{}
	lim := runtime.Operate(mem, runtime.WithObserver(rec))
	shadow := runtime.Limit{Name: "Mixed.Shadow", Window: time.Minute, Max: 1, Mode: runtime.ModeShadow}
	enforced := runtime.Limit{Name: "Mixed.Enforced", Window: time.Minute, Max: 3}
	reqs := []runtime.Request{{Limit: shadow, Key: "k"}, {Limit: enforced, Key: "k"}}
	for range 3 {
		require.NoError(t, runtime.Enforce(ctx, lim, reqs...))
	}
	err := runtime.Enforce(ctx, lim, reqs...)
	var le *runtime.LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "Mixed.Enforced", le.Limit.Name, "the shadow limit never names a denial")
	require.Equal(t, map[string]int{
		"Mixed.Shadow allowed": 1, "Mixed.Shadow shadow-limited": 3,
		"Mixed.Enforced allowed": 3, "Mixed.Enforced limited": 1,
	}, results(rec.take()))

	// Without Operate, Enforce applies modes alike.
	mem2, _ := newTestMemory()
	for range 3 {
		require.NoError(t, runtime.Enforce(ctx, mem2, reqs...))
	}
	require.ErrorIs(t, runtime.Enforce(ctx, mem2, reqs...), runtime.ErrLimited)
}

// TestModeOffSkipsTheLimit: a limit turned off is neither asked nor
// recorded nor observed.
func TestModeOffSkipsTheLimit(t *testing.T) {
	mem, _ := newTestMemory()
	rec := &recorder{}
	lim := runtime.Operate(mem, runtime.WithObserver(rec))
	off := runtime.Limit{Name: "Off.Limit", Window: time.Minute, Max: 1, Mode: runtime.ModeOff}
	for range 3 {
		ds, err := lim.Decide(ctx, runtime.Request{Limit: off, Key: "k"})
		require.NoError(t, err)
		require.True(t, ds.Allowed)
		require.Equal(t, []runtime.Decision{{Allowed: true, Remaining: 1}}, ds.Each)
	}
	require.Zero(t, mem.Len())
	require.Empty(t, rec.take())
}

// TestOverridesTakeEffectOnTheNextDecision: Max, Window and Mode change
// at run time by limit name, and the counts already recorded still count.
func TestOverridesTakeEffectOnTheNextDecision(t *testing.T) {
	mem, clock := newTestMemory()
	var ov runtime.Overrides
	rec := &recorder{}
	lim := runtime.Operate(mem, runtime.WithOverrides(&ov), runtime.WithObserver(rec))
	l := runtime.Limit{Name: "Over.Send", Window: time.Minute, Max: 1}
	req := runtime.Request{Limit: l, Key: "k"}
	require.NoError(t, runtime.Enforce(ctx, lim, req))
	require.ErrorIs(t, runtime.Enforce(ctx, lim, req), runtime.ErrLimited)

	require.NoError(t, ov.Set(map[string]runtime.Override{"Over.Send": {Max: 3}}))
	require.NoError(t, runtime.Enforce(ctx, lim, req))
	require.NoError(t, runtime.Enforce(ctx, lim, req))
	err := runtime.Enforce(ctx, lim, req)
	var le *runtime.LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, 3, le.Limit.Max, "the denial names the limit in force")
	require.Equal(t, 1, req.Limit.Max, "the caller's request is not changed")
	evs := rec.take()
	require.Equal(t, 3, evs[len(evs)-1].Limit.Max, "observers see the limit in force")

	shadow := runtime.ModeShadow
	require.NoError(t, ov.Set(map[string]runtime.Override{"Over.Send": {Mode: &shadow}}))
	require.NoError(t, runtime.Enforce(ctx, lim, req))
	require.Equal(t, runtime.ResultShadowLimited, rec.take()[0].Result)

	// A shorter window lets the old admissions go sooner.
	require.NoError(t, ov.Set(map[string]runtime.Override{"Over.Send": {Window: time.Second}}))
	require.ErrorIs(t, runtime.Enforce(ctx, lim, req), runtime.ErrLimited)
	clock.Advance(2 * time.Second)
	require.NoError(t, runtime.Enforce(ctx, lim, req))

	// Enforcing a limit the code declares in shadow mode works through
	// Enforce too, which must let Operate apply modes after overrides.
	declared := runtime.Limit{Name: "Over.Declared", Window: time.Minute, Max: 1, Mode: runtime.ModeShadow}
	enforce := runtime.ModeEnforce
	require.NoError(t, ov.Set(map[string]runtime.Override{"Over.Declared": {Mode: &enforce}}))
	other := runtime.Limit{Name: "Over.Other", Window: time.Minute, Max: 10}
	dreqs := []runtime.Request{{Limit: declared, Key: "k"}, {Limit: other, Key: "k"}}
	require.NoError(t, runtime.Enforce(ctx, lim, dreqs...))
	require.ErrorIs(t, runtime.Enforce(ctx, lim, dreqs...), runtime.ErrLimited)
	require.ErrorIs(t, runtime.Wait(ctx, lim, 0, dreqs...), runtime.ErrLimited)

	require.NoError(t, ov.Set(nil))
	require.ErrorIs(t, runtime.Enforce(ctx, lim, req), runtime.ErrLimited, "back to Max 1")
}

func TestOverridesRejectInvalidValues(t *testing.T) {
	var ov runtime.Overrides
	bad := runtime.Mode(9)
	for _, m := range []map[string]runtime.Override{
		{"A": {Max: -1}},
		{"A": {Window: time.Nanosecond}},
		{"A": {Burst: -2}},
		{"A": {Mode: &bad}},
		{"": {Max: 1}},
	} {
		require.Error(t, ov.Set(m), "%v", m)
	}
	require.NoError(t, ov.Set(map[string]runtime.Override{"A": {Max: 1}}))
}

// TestObserverNeverSeesTheKey: nothing an observer receives holds the
// key, including the error of a call that could not be decided, and the
// label function is what stands in for it.
func TestObserverNeverSeesTheKey(t *testing.T) {
	mem, _ := newTestMemory()
	rec := &recorder{}
	const key = "alice@example.com"
	lim := runtime.Operate(mem, runtime.WithObserver(rec), runtime.WithLabel(func(_ context.Context, r runtime.Request) string {
		if strings.HasSuffix(r.Key, "@example.com") {
			return "example"
		}
		return "other"
	}))
	l := runtime.Limit{Name: "Key.Secret", Window: time.Minute, Max: 2}
	require.NoError(t, runtime.Enforce(ctx, lim, runtime.Request{Limit: l, Key: key}))
	require.ErrorIs(t, runtime.Enforce(ctx, lim, runtime.Request{Limit: l, Key: key, Cost: 2}), runtime.ErrLimited)
	require.ErrorIs(t, runtime.Enforce(ctx, lim, runtime.Request{Limit: l, Key: key, Cost: 3}), runtime.ErrInvalidCost)
	evs := rec.take()
	require.Len(t, evs, 3)
	require.Equal(t, []runtime.Result{runtime.ResultAllowed, runtime.ResultLimited, runtime.ResultError}, []runtime.Result{evs[0].Result, evs[1].Result, evs[2].Result})
	for _, ev := range evs {
		require.Equal(t, "example", ev.Label)
		require.NotContains(t, fmt.Sprintf("%+v %#v %v", ev, ev, ev.Err), "alice")
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		require.NotContains(t, string(b), "alice")
	}
	require.Equal(t, int64(2), evs[1].Cost)
	require.Equal(t, 1, evs[1].Remaining)
}

func TestNearLimit(t *testing.T) {
	l := runtime.Limit{Name: "Near", Window: time.Minute, Max: 10}
	for remaining, near := range map[int]bool{0: true, 2: true, 3: false, 10: false} {
		require.Equal(t, near, runtime.Event{Limit: l, Remaining: remaining}.NearLimit(), "remaining %d", remaining)
	}
	require.False(t, runtime.Event{Limit: l, Result: runtime.ResultError}.NearLimit())
	require.False(t, runtime.Event{Limit: l, Result: runtime.ResultLimited}.NearLimit(), "a denial is over the limit, not near it")
	require.False(t, runtime.Event{Limit: l, Result: runtime.ResultShadowLimited}.NearLimit())
}

// TestLogObserver: denials at Info, admissions at Debug, errors at Warn,
// and no key in any record.
func TestLogObserver(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	mem, _ := newTestMemory()
	lim := runtime.Operate(mem, runtime.WithObserver(runtime.NewLogObserver(log)))
	l := runtime.Limit{Name: "Log.Send", Window: time.Minute, Max: 1}
	const key = "bob@example.com"
	require.NoError(t, runtime.Enforce(ctx, lim, runtime.Request{Limit: l, Key: key}))
	require.ErrorIs(t, runtime.Enforce(ctx, lim, runtime.Request{Limit: l, Key: key}), runtime.ErrLimited)
	require.ErrorIs(t, runtime.Enforce(ctx, lim, runtime.Request{Limit: l, Key: key, Cost: 5}), runtime.ErrInvalidCost)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2, "the admission is logged at Debug only: %s", buf.String())
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &rec))
	require.Equal(t, "INFO", rec["level"])
	require.Equal(t, "limited", rec["result"])
	require.Equal(t, "Log.Send", rec["limit"])
	require.Equal(t, "store", rec["source"])
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &rec))
	require.Equal(t, "WARN", rec["level"])
	require.Equal(t, "error", rec["result"])
	require.NotContains(t, buf.String(), "bob")
}

// TestOverrideEnforcesBehindAWrapper: an Operate limiter hidden behind a
// wrapper (ratelimithttp.RecordDecisions, a user's metrics) still enforces
// a limit the code declares in shadow mode when an override says so.
func TestOverrideEnforcesBehindAWrapper(t *testing.T) {
	mem, _ := newTestMemory()
	var ov runtime.Overrides
	enforce := runtime.ModeEnforce
	require.NoError(t, ov.Set(map[string]runtime.Override{"Hidden.Shadow": {Mode: &enforce}}))
	lim := &counting{Limiter: runtime.Operate(mem, runtime.WithOverrides(&ov))}
	declared := runtime.Limit{Name: "Hidden.Shadow", Window: time.Minute, Max: 1, Mode: runtime.ModeShadow}
	other := runtime.Limit{Name: "Hidden.Other", Window: time.Minute, Max: 10}
	reqs := []runtime.Request{{Limit: declared, Key: "k"}, {Limit: other, Key: "k"}}
	require.NoError(t, runtime.Enforce(ctx, lim, reqs...))
	err := runtime.Enforce(ctx, lim, reqs...)
	var le *runtime.LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "Hidden.Shadow", le.Limit.Name)
	require.EqualValues(t, 2, lim.calls.Load(), "the denial was not asked again without the limit")
}

func TestMemoryFullReachesObservers(t *testing.T) {
	// The decision that forgot a counting key to make room says so, as the
	// Event.Err of Operate's observers and in NewLogObserver's warnings,
	// without the key.
	mem := memlimit.New(memlimit.WithClock(testclock.New().Now), memlimit.WithMaxMemory(64<<10))
	rec := &recorder{}
	var logs bytes.Buffer
	lim := runtime.Operate(mem, runtime.WithObserver(rec),
		runtime.WithObserver(runtime.NewLogObserver(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))))
	l := runtime.Limit{Name: "Notifier.SendCode", Window: time.Hour, Max: 3}
	decided := 0
	for ; decided < 100_000; decided++ {
		ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: "secret" + strconv.Itoa(decided) + "@example.com"})
		require.NoError(t, err)
		require.True(t, ds.Allowed)
		if ds.Cause != nil {
			require.ErrorIs(t, ds.Cause, memlimit.ErrFull)
			require.Equal(t, runtime.SourceStore, ds.Source)
			break
		}
	}
	require.Less(t, decided, 100_000, "the limiter never filled")
	// Keys fall into 64 shards of 1 KiB each by a random seed, so the
	// first full shard may come after a few dozen keys (56 the least in 300
	// runs); it must not come at once.
	require.Greater(t, decided, 16, "keys were forgotten long before the budget was reached")
	evs := rec.take()
	require.Len(t, evs, decided+1)
	for _, ev := range evs[:decided] {
		require.NoError(t, ev.Err)
	}
	last := evs[decided]
	require.ErrorIs(t, last.Err, memlimit.ErrFull)
	require.Equal(t, runtime.ResultAllowed, last.Result)

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, decided+1)
	warn := lines[decided]
	require.Contains(t, warn, `"level":"WARN"`)
	require.Contains(t, warn, memlimit.ErrFull.Error())
	require.NotContains(t, logs.String(), "@example.com", "a key was logged")
	require.NotContains(t, memlimit.ErrFull.Error(), "secret")
}
