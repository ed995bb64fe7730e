package runtime_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// The limits of a service, as a generated RateLimits() returns them: a
// token bucket, a limit whose calls cost 5 (cost=weight), one whose Max
// each call computes, and a computed cost.
var (
	svcTB       = runtime.Limit{Name: "Svc.TB", Window: time.Second, Max: 10, Algorithm: runtime.TokenBucket}
	svcHeavy    = runtime.Limit{Name: "Svc.Heavy", Window: time.Minute, Max: 10, Algorithm: runtime.FixedWindow}
	svcPlan     = runtime.Limit{Name: "Svc.Plan", Window: time.Minute, Algorithm: runtime.SlidingWindow}
	svcPlanTB   = runtime.Limit{Name: "Svc.PlanTB", Window: time.Second, Algorithm: runtime.TokenBucket}
	svcPlanGCRA = runtime.Limit{Name: "Svc.PlanGCRA", Window: time.Second, Algorithm: runtime.GCRA, Burst: 20}
	svcComputed = runtime.Limit{Name: "Svc.Computed", Window: time.Minute, Max: 4}
	svcLimits   = []runtime.Request{
		{Limit: svcTB},
		{Limit: svcHeavy, Cost: 5},
		{Limit: svcPlan, Cost: 5},
		{Limit: svcPlanTB},
		{Limit: svcPlanGCRA},
		{Limit: svcComputed},
	}
)

// The three files of issue 32 that used to load and then break an
// endpoint, or do nothing.
const (
	windowTooLong = `{"limits": {"Svc.TB": {"window": "2000000h"}}}`
	maxBelowCost  = `{"limits": {"Svc.Heavy": {"max": 3}}}`
	typo          = `{"limits": {"Svc.Typo": {"mode": "off"}}}`
	good          = `{"limits": {"Svc.TB": {"max": 20}, "Svc.Heavy": {"max": 6}}}`
)

// TestOverridesFilesThatWouldBreakALimit: without the limits, each file
// loads, and its calls are decided by the limit as declared, the override
// logged once; once a limit was decided through Operate, or told by
// AddLimits, LoadFile refuses the file whole, naming the limit and why, and
// the last good set stays.
func TestOverridesFilesThatWouldBreakALimit(t *testing.T) {
	for _, c := range []struct {
		file string
		req  runtime.Request
		want []string
	}{
		{windowTooLong, runtime.Request{Limit: svcTB, Key: "k"}, []string{`"Svc.TB": its calls would fail: token-bucket limit "Svc.TB": Window 2000000h0m0s times Burst 10 is too large`}},
		{maxBelowCost, runtime.Request{Limit: svcHeavy, Key: "k", Cost: 5}, []string{`"Svc.Heavy": its calls would fail: limit "Svc.Heavy" cannot admit a cost of 5`, "capacity (3)"}},
	} {
		path := filepath.Join(t.TempDir(), "overrides.json")
		writeFile(t, path, c.file)

		// A process that does not know its limits loads the file, and the
		// limit as declared decides, the override logged once.
		var blind runtime.Overrides
		require.NoError(t, blind.LoadFile(path), c.file)
		mem, _ := newTestMemory()
		var logs bytes.Buffer
		blindLim := runtime.Operate(mem, runtime.WithOverrides(&blind), runtime.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		for range 3 {
			ds, err := blindLim.Decide(ctx, c.req)
			require.NoError(t, err, "%s: the declared limit decides", c.file)
			require.Equal(t, c.req.Limit.Max, ds.Each[0].Remaining+int(max(c.req.Cost, 1)), "%s: under the declared Max", c.file)
			_ = runtime.Reset(ctx, blindLim, c.req)
		}
		require.Equal(t, 1, strings.Count(logs.String(), "level=ERROR"), "%s: logged once:\n%s", c.file, logs.String())
		require.Contains(t, logs.String(), "override not applied")
		require.Contains(t, logs.String(), "limit="+c.req.Limit.Name)
		require.NotContains(t, logs.String(), "=k ", "no key in the log")

		// A process that decided the limit refuses the file, though it
		// never called AddLimits.
		var learned runtime.Overrides
		decided, _ := newTestMemory()
		_, err := runtime.Operate(decided, runtime.WithOverrides(&learned)).Decide(ctx, c.req)
		require.NoError(t, err)
		err = learned.LoadFile(path)
		require.Error(t, err, "%s: refused once the limit was decided", c.file)
		for _, want := range c.want {
			require.ErrorContains(t, err, want)
		}

		var ov runtime.Overrides
		require.NoError(t, ov.AddLimits(svcLimits...))
		writeFile(t, path, good)
		require.NoError(t, ov.LoadFile(path))
		writeFile(t, path, c.file)
		err = ov.LoadFile(path)
		require.Error(t, err, c.file)
		for _, want := range c.want {
			require.ErrorContains(t, err, want)
		}
		require.ErrorContains(t, err, "overrides file "+path+" refused, the overrides in force stay")
		require.ErrorContains(t, err, "correct or remove the override")
		require.NotContains(t, err.Error(), `"k"`, "no key in the error")

		lim := runtime.Operate(mem, runtime.WithOverrides(&ov))
		require.NoError(t, runtime.Enforce(ctx, lim, c.req), "%s: the last good set is in force", c.file)
		require.Equal(t, map[string]int{"Svc.TB": 20, "Svc.Heavy": 6}, map[string]int{
			"Svc.TB":    runtime.ApplyOverrides(&ov, []runtime.Request{{Limit: svcTB}})[0].Limit.Max,
			"Svc.Heavy": runtime.ApplyOverrides(&ov, []runtime.Request{{Limit: svcHeavy}})[0].Limit.Max,
		}, "%s: the last good set is in force", c.file)
	}
}

// TestOverridesUnmatchedName: a name that matches no known limit does not
// refuse the file (the other overrides in it take effect), and Unmatched
// names it until a limit of that name is known.
func TestOverridesUnmatchedName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "overrides.json")
	writeFile(t, path, typo)
	var ov runtime.Overrides
	require.NoError(t, ov.LoadFile(path))
	require.Equal(t, []string{"Svc.Typo"}, ov.Unmatched(), "no limit is known yet")

	require.NoError(t, ov.AddLimits(svcLimits...))
	require.Equal(t, []string{"Svc.Typo"}, ov.Unmatched())

	writeFile(t, path, `{"limits": {"Svc.Typo": {"mode": "off"}, "Svc.Zeta": {}, "Svc.TB": {"mode": "off"}}}`)
	require.NoError(t, ov.LoadFile(path))
	require.Equal(t, []string{"Svc.Typo", "Svc.Zeta"}, ov.Unmatched(), "sorted, without the matched Svc.TB")
	require.Equal(t, runtime.ModeOff, runtime.ApplyOverrides(&ov, []runtime.Request{{Limit: svcTB}})[0].Limit.Mode, "the matched override is in force")

	require.NoError(t, ov.AddLimits(runtime.Request{Limit: runtime.Limit{Name: "Svc.Typo", Window: time.Second, Max: 1}}))
	require.Equal(t, []string{"Svc.Zeta"}, ov.Unmatched())

	require.NoError(t, ov.Set(nil))
	require.Empty(t, ov.Unmatched())
}

// TestWatchFileKeepsTheLastGoodSet: a file that parses but would break a
// limit is reported, like one that does not parse, and the last good set
// stays in force until a good file replaces it; a file whose names match
// no limit is in force, and Unmatched names them when it is reported.
func TestWatchFileKeepsTheLastGoodSet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "overrides.json")
	writeFile(t, path, good)
	var ov runtime.Overrides
	require.NoError(t, ov.AddLimits(svcLimits...))
	mem, _ := newTestMemory()
	lim := runtime.Operate(mem, runtime.WithOverrides(&ov))
	type report struct {
		err       error
		unmatched []string
	}
	reports := make(chan report, 16)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	require.NoError(t, ov.WatchFile(wctx, path, 5*time.Millisecond, func(err error) {
		r := report{err: err}
		if err == nil {
			r.unmatched = ov.Unmatched()
		}
		reports <- r
	}))
	next := func() report {
		t.Helper()
		select {
		case r := <-reports:
			return r
		case <-time.After(30 * time.Second):
			t.Fatal("no reload reported")
			return report{}
		}
	}
	heavy := runtime.Request{Limit: svcHeavy, Key: "k", Cost: 5}
	require.NoError(t, runtime.Enforce(ctx, lim, heavy), "max 6 admits a cost of 5")
	require.ErrorIs(t, runtime.Enforce(ctx, lim, heavy), runtime.ErrLimited)

	writeFile(t, path, windowTooLong)
	r := next()
	require.ErrorContains(t, r.err, `"Svc.TB": its calls would fail`)
	require.ErrorContains(t, r.err, "the overrides in force stay")
	require.NoError(t, runtime.Enforce(ctx, lim, runtime.Request{Limit: svcTB, Key: "k"}), "the last good window is in force")

	writeFile(t, path, maxBelowCost)
	r = next()
	require.ErrorContains(t, r.err, `"Svc.Heavy": its calls would fail: limit "Svc.Heavy" cannot admit a cost of 5`)
	require.ErrorIs(t, runtime.Enforce(ctx, lim, heavy), runtime.ErrLimited, "a denial, not ErrInvalidCost: max 6 stays")
	require.Equal(t, 6, runtime.ApplyOverrides(&ov, []runtime.Request{{Limit: svcHeavy}})[0].Limit.Max)

	writeFile(t, path, typo)
	r = next()
	require.NoError(t, r.err)
	require.Equal(t, []string{"Svc.Typo"}, r.unmatched)
	require.Equal(t, 10, runtime.ApplyOverrides(&ov, []runtime.Request{{Limit: svcHeavy}})[0].Limit.Max, "the file replaced the good set")
	cancel()
}

// TestOverridesOfAMaxComputedPerCall: a limit whose Max each call
// computes is refused only what no Max could make valid, and is checked
// in full once the override sets the Max.
func TestOverridesOfAMaxComputedPerCall(t *testing.T) {
	var ov runtime.Overrides
	require.NoError(t, ov.AddLimits(svcLimits...))
	huge := 2_000_000 * time.Hour
	for _, c := range []struct {
		name string
		ov   runtime.Override
		ok   bool
	}{
		{"Svc.Plan", runtime.Override{Window: time.Hour}, true},
		{"Svc.Plan", runtime.Override{Max: 5}, true},
		{"Svc.Plan", runtime.Override{Max: 4}, false}, // below the cost of 5
		{"Svc.Plan", runtime.Override{Window: huge}, false},
		// A burst that is Max: a small Max keeps Window·Burst small.
		{"Svc.PlanTB", runtime.Override{Window: time.Hour}, true},
		{"Svc.PlanTB", runtime.Override{Window: huge}, false},
		{"Svc.PlanTB", runtime.Override{Window: huge, Max: 1000}, false},
		// A burst of its own: a large Max keeps GCRA's interval short, so
		// 100,000h is valid for some Max, and not for a Max of 1.
		{"Svc.PlanGCRA", runtime.Override{Window: 100_000 * time.Hour}, true},
		{"Svc.PlanGCRA", runtime.Override{Window: 100_000 * time.Hour, Max: 1000}, true},
		{"Svc.PlanGCRA", runtime.Override{Window: 100_000 * time.Hour, Max: 1}, false},
		// A computed cost is checked at 1.
		{"Svc.Computed", runtime.Override{Max: 1}, true},
	} {
		err := ov.Set(map[string]runtime.Override{c.name: c.ov})
		if c.ok {
			require.NoError(t, err, "%s %+v", c.name, c.ov)
		} else {
			require.ErrorContains(t, err, "ratelimit: overrides refused, those in force stay: "+`"`+c.name+`": its calls would fail`, "%s %+v", c.name, c.ov)
		}
	}
}

// TestAddLimitsChecksTheSetInForce: limits told after a set is in force
// are refused, and not added, if the set would break them.
func TestAddLimitsChecksTheSetInForce(t *testing.T) {
	var ov runtime.Overrides
	require.NoError(t, ov.Set(map[string]runtime.Override{"Svc.Heavy": {Max: 3}}))
	err := ov.AddLimits(svcLimits...)
	require.ErrorContains(t, err, `AddLimits refused, as the overrides in force would break a limit: "Svc.Heavy": its calls would fail: limit "Svc.Heavy" cannot admit a cost of 5`)
	require.Equal(t, []string{"Svc.Heavy"}, ov.Unmatched(), "nothing was added")
	require.NoError(t, ov.Set(map[string]runtime.Override{"Svc.Heavy": {Max: 3}}), "nothing was added")

	require.ErrorContains(t, ov.AddLimits(runtime.Request{Limit: runtime.Limit{Window: time.Second, Max: 1}}), "without a Name")
	require.ErrorContains(t, ov.AddLimits(runtime.Request{Limit: svcTB, Cost: -1}), `limit "Svc.TB" with Cost -1`)

	// A limit may be told several times, by packages that share its name,
	// with other costs: every one is checked.
	require.NoError(t, ov.Set(nil))
	require.NoError(t, ov.AddLimits(runtime.Request{Limit: svcHeavy, Cost: 2}, runtime.Request{Limit: svcHeavy, Cost: 5}))
	require.NoError(t, ov.Set(map[string]runtime.Override{"Svc.Heavy": {Max: 5}}))
	require.ErrorContains(t, ov.Set(map[string]runtime.Override{"Svc.Heavy": {Max: 4}}), "cannot admit a cost of 5")
}
