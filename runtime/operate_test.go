package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/testclock"
)

// recorder is an Observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) Observe(_ context.Context, ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) take() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	evs := r.events
	r.events = nil
	return evs
}

// results counts the recorded events per limit name and result.
func results(evs []Event) map[string]int {
	n := map[string]int{}
	for _, ev := range evs {
		n[ev.Limit.Name+" "+ev.Result.String()]++
	}
	return n
}

func newTestMemory() (*MemoryLimiter, *testclock.Clock) {
	clock := testclock.New()
	return NewMemoryLimiter(WithClock(clock.Now)), clock
}

// TestShadowAdmitsAndReports: a limit in shadow mode never denies, its
// would-be denials are reported, and it keeps counting as it would.
func TestShadowAdmitsAndReports(t *testing.T) {
	mem, _ := newTestMemory()
	rec := &recorder{}
	lim := Operate(mem, WithObserver(rec))
	shadow := Limit{Name: "Shadow.Only", Window: time.Minute, Max: 2, Mode: ModeShadow}
	for range 5 {
		require.NoError(t, Enforce(ctx, lim, Request{Limit: shadow, Key: "k"}))
	}
	require.Equal(t, map[string]int{"Shadow.Only allowed": 2, "Shadow.Only shadow-limited": 3}, results(rec.take()))

	// Enforced, the same limit and key deny: the shadow calls beyond Max
	// were not recorded, the first two were.
	enforced := shadow
	enforced.Mode = ModeEnforce
	require.ErrorIs(t, Enforce(ctx, lim, Request{Limit: enforced, Key: "k"}), ErrLimited)
	require.Equal(t, map[string]int{"Shadow.Only limited": 1}, results(rec.take()))
}

// TestShadowBesideEnforced: a call with a shadow limit and an enforced one
// is decided and recorded by the enforced one alone once the shadow limit
// is full, and denied only by the enforced one.
func TestShadowBesideEnforced(t *testing.T) {
	mem, _ := newTestMemory()
	rec := &recorder{}
	lim := Operate(mem, WithObserver(rec))
	shadow := Limit{Name: "Mixed.Shadow", Window: time.Minute, Max: 1, Mode: ModeShadow}
	enforced := Limit{Name: "Mixed.Enforced", Window: time.Minute, Max: 3}
	reqs := []Request{{Limit: shadow, Key: "k"}, {Limit: enforced, Key: "k"}}
	for range 3 {
		require.NoError(t, Enforce(ctx, lim, reqs...))
	}
	err := Enforce(ctx, lim, reqs...)
	var le *LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "Mixed.Enforced", le.Limit.Name, "the shadow limit never names a denial")
	require.Equal(t, map[string]int{
		"Mixed.Shadow allowed": 1, "Mixed.Shadow shadow-limited": 3,
		"Mixed.Enforced allowed": 3, "Mixed.Enforced limited": 1,
	}, results(rec.take()))

	// Without Operate, Enforce applies modes alike.
	mem2, _ := newTestMemory()
	for range 3 {
		require.NoError(t, Enforce(ctx, mem2, reqs...))
	}
	require.ErrorIs(t, Enforce(ctx, mem2, reqs...), ErrLimited)
}

// TestModeOffSkipsTheLimit: a limit turned off is neither asked nor
// recorded nor observed.
func TestModeOffSkipsTheLimit(t *testing.T) {
	mem, _ := newTestMemory()
	rec := &recorder{}
	lim := Operate(mem, WithObserver(rec))
	off := Limit{Name: "Off.Limit", Window: time.Minute, Max: 1, Mode: ModeOff}
	for range 3 {
		ds, err := lim.Decide(ctx, Request{Limit: off, Key: "k"})
		require.NoError(t, err)
		require.True(t, ds.Allowed)
		require.Equal(t, []Decision{{Allowed: true, Remaining: 1}}, ds.Each)
	}
	require.Zero(t, mem.Len())
	require.Empty(t, rec.take())
}

// TestOverridesTakeEffectOnTheNextDecision: Max, Window and Mode change
// at run time by limit name, and the counts already recorded still count.
func TestOverridesTakeEffectOnTheNextDecision(t *testing.T) {
	mem, clock := newTestMemory()
	var ov Overrides
	rec := &recorder{}
	lim := Operate(mem, WithOverrides(&ov), WithObserver(rec))
	l := Limit{Name: "Over.Send", Window: time.Minute, Max: 1}
	req := Request{Limit: l, Key: "k"}
	require.NoError(t, Enforce(ctx, lim, req))
	require.ErrorIs(t, Enforce(ctx, lim, req), ErrLimited)

	require.NoError(t, ov.Set(map[string]Override{"Over.Send": {Max: 3}}))
	require.NoError(t, Enforce(ctx, lim, req))
	require.NoError(t, Enforce(ctx, lim, req))
	err := Enforce(ctx, lim, req)
	var le *LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, 3, le.Limit.Max, "the denial names the limit in force")
	require.Equal(t, 1, req.Limit.Max, "the caller's request is not changed")
	evs := rec.take()
	require.Equal(t, 3, evs[len(evs)-1].Limit.Max, "observers see the limit in force")

	shadow := ModeShadow
	require.NoError(t, ov.Set(map[string]Override{"Over.Send": {Mode: &shadow}}))
	require.NoError(t, Enforce(ctx, lim, req))
	require.Equal(t, ResultShadowLimited, rec.take()[0].Result)

	// A shorter window lets the old admissions go sooner.
	require.NoError(t, ov.Set(map[string]Override{"Over.Send": {Window: time.Second}}))
	require.ErrorIs(t, Enforce(ctx, lim, req), ErrLimited)
	clock.Advance(2 * time.Second)
	require.NoError(t, Enforce(ctx, lim, req))

	// Enforcing a limit the code declares in shadow mode works through
	// Enforce too, which must let Operate apply modes after overrides.
	declared := Limit{Name: "Over.Declared", Window: time.Minute, Max: 1, Mode: ModeShadow}
	enforce := ModeEnforce
	require.NoError(t, ov.Set(map[string]Override{"Over.Declared": {Mode: &enforce}}))
	other := Limit{Name: "Over.Other", Window: time.Minute, Max: 10}
	dreqs := []Request{{Limit: declared, Key: "k"}, {Limit: other, Key: "k"}}
	require.NoError(t, Enforce(ctx, lim, dreqs...))
	require.ErrorIs(t, Enforce(ctx, lim, dreqs...), ErrLimited)
	require.ErrorIs(t, Wait(ctx, lim, 0, dreqs...), ErrLimited)

	require.NoError(t, ov.Set(nil))
	require.ErrorIs(t, Enforce(ctx, lim, req), ErrLimited, "back to Max 1")
}

func TestOverridesRejectInvalidValues(t *testing.T) {
	var ov Overrides
	bad := Mode(9)
	for _, m := range []map[string]Override{
		{"A": {Max: -1}},
		{"A": {Window: time.Nanosecond}},
		{"A": {Burst: -2}},
		{"A": {Mode: &bad}},
		{"": {Max: 1}},
	} {
		require.Error(t, ov.Set(m), "%v", m)
	}
	require.NoError(t, ov.Set(map[string]Override{"A": {Max: 1}}))
}

// TestObserverNeverSeesTheKey: nothing an observer receives holds the
// key, including the error of a call that could not be decided, and the
// label function is what stands in for it.
func TestObserverNeverSeesTheKey(t *testing.T) {
	mem, _ := newTestMemory()
	rec := &recorder{}
	const key = "alice@example.com"
	lim := Operate(mem, WithObserver(rec), WithLabel(func(_ context.Context, r Request) string {
		if strings.HasSuffix(r.Key, "@example.com") {
			return "example"
		}
		return "other"
	}))
	l := Limit{Name: "Key.Secret", Window: time.Minute, Max: 2}
	require.NoError(t, Enforce(ctx, lim, Request{Limit: l, Key: key}))
	require.ErrorIs(t, Enforce(ctx, lim, Request{Limit: l, Key: key, Cost: 2}), ErrLimited)
	require.ErrorIs(t, Enforce(ctx, lim, Request{Limit: l, Key: key, Cost: 3}), ErrInvalidCost)
	evs := rec.take()
	require.Len(t, evs, 3)
	require.Equal(t, []Result{ResultAllowed, ResultLimited, ResultError}, []Result{evs[0].Result, evs[1].Result, evs[2].Result})
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
	l := Limit{Name: "Near", Window: time.Minute, Max: 10}
	for remaining, near := range map[int]bool{0: true, 2: true, 3: false, 10: false} {
		require.Equal(t, near, Event{Limit: l, Remaining: remaining}.NearLimit(), "remaining %d", remaining)
	}
	require.False(t, Event{Limit: l, Result: ResultError}.NearLimit())
	require.False(t, Event{Limit: l, Result: ResultLimited}.NearLimit(), "a denial is over the limit, not near it")
	require.False(t, Event{Limit: l, Result: ResultShadowLimited}.NearLimit())
}

// TestLogObserver: denials at Info, admissions at Debug, errors at Warn,
// and no key in any record.
func TestLogObserver(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	mem, _ := newTestMemory()
	lim := Operate(mem, WithObserver(NewLogObserver(log)))
	l := Limit{Name: "Log.Send", Window: time.Minute, Max: 1}
	const key = "bob@example.com"
	require.NoError(t, Enforce(ctx, lim, Request{Limit: l, Key: key}))
	require.ErrorIs(t, Enforce(ctx, lim, Request{Limit: l, Key: key}), ErrLimited)
	require.ErrorIs(t, Enforce(ctx, lim, Request{Limit: l, Key: key, Cost: 5}), ErrInvalidCost)
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
	var ov Overrides
	enforce := ModeEnforce
	require.NoError(t, ov.Set(map[string]Override{"Hidden.Shadow": {Mode: &enforce}}))
	lim := &counting{Limiter: Operate(mem, WithOverrides(&ov))}
	declared := Limit{Name: "Hidden.Shadow", Window: time.Minute, Max: 1, Mode: ModeShadow}
	other := Limit{Name: "Hidden.Other", Window: time.Minute, Max: 10}
	reqs := []Request{{Limit: declared, Key: "k"}, {Limit: other, Key: "k"}}
	require.NoError(t, Enforce(ctx, lim, reqs...))
	err := Enforce(ctx, lim, reqs...)
	var le *LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "Hidden.Shadow", le.Limit.Name)
	require.EqualValues(t, 2, lim.calls.Load(), "the denial was not asked again without the limit")
}
