package runtime_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestLoadFileCalendarWindows: "window": "1mo" with "tz" switches a limit
// to a calendar window, a fixed window without burst; a duration window
// switches a calendar limit back. Only how overrides apply is tested
// here, not how a Limiter decides calendar windows.
func TestLoadFileCalendarWindows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "overrides.json")
	writeFile(t, path, `{"limits": {
		"Exports.Run":  {"window": "1mo", "tz": "Europe/Berlin"},
		"SMS.Send":     {"window": "1d", "max": 50},
		"Quota.Yearly": {"window": "30s"},
		"Plan.Weekly":  {"window": "1w", "tz": "UTC", "mode": "shadow"}
	}}`)
	var ov runtime.Overrides
	exports := runtime.Limit{Name: "Exports.Run", Window: time.Hour, Max: 1000, Algorithm: runtime.TokenBucket, Burst: 10}
	sms := runtime.Limit{Name: "SMS.Send", Window: time.Minute, Max: 3}
	yearly := runtime.Limit{Name: "Quota.Yearly", Max: 12, Algorithm: runtime.FixedWindow, Calendar: runtime.Calendar{Period: runtime.Year, Zone: "Asia/Tokyo"}}
	weekly := runtime.Limit{Name: "Plan.Weekly", Max: 5, Algorithm: runtime.FixedWindow, Calendar: runtime.Calendar{Period: runtime.Month}}
	require.NoError(t, ov.AddLimits(runtime.Request{Limit: exports}, runtime.Request{Limit: sms}, runtime.Request{Limit: yearly}, runtime.Request{Limit: weekly}))
	require.NoError(t, ov.LoadFile(path))
	reqs := runtime.ApplyOverrides(&ov, []runtime.Request{{Limit: exports}, {Limit: sms}, {Limit: yearly}, {Limit: weekly}})
	require.Equal(t, runtime.Limit{Name: "Exports.Run", Max: 1000, Algorithm: runtime.FixedWindow, Calendar: runtime.Calendar{Period: runtime.Month, Zone: "Europe/Berlin"}}, reqs[0].Limit)
	require.Equal(t, runtime.Limit{Name: "SMS.Send", Max: 50, Algorithm: runtime.FixedWindow, Calendar: runtime.Calendar{Period: runtime.Day}}, reqs[1].Limit)
	require.Equal(t, runtime.Limit{Name: "Quota.Yearly", Window: 30 * time.Second, Max: 12, Algorithm: runtime.FixedWindow}, reqs[2].Limit)
	require.Equal(t, runtime.Limit{Name: "Plan.Weekly", Max: 5, Algorithm: runtime.FixedWindow, Calendar: runtime.Calendar{Period: runtime.Week, Zone: "UTC"}, Mode: runtime.ModeShadow}, reqs[3].Limit)
	for _, r := range reqs {
		require.NoError(t, r.Limit.Validate())
	}
	require.Equal(t, "Exports.Run (1000 per month in Europe/Berlin)", reqs[0].Limit.String())
}

// TestLoadFileRejectsCalendarMistakes: each mistake is an error naming
// it, and the overrides in force stay.
func TestLoadFileRejectsCalendarMistakes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "overrides.json")
	var ov runtime.Overrides
	require.NoError(t, ov.AddLimits(
		runtime.Request{Limit: runtime.Limit{Name: "A.Send", Window: time.Minute, Max: 3}},
		runtime.Request{Limit: runtime.Limit{Name: "Jobs.Run", Window: 30 * time.Second, Max: 2, Algorithm: runtime.Concurrency}},
	))
	require.NoError(t, ov.Set(map[string]runtime.Override{"A.Send": {Max: 9}}))
	for contents, want := range map[string]string{
		`{"limits": {"A.Send": {"window": "30s", "tz": "Europe/Berlin"}}}`: `"A.Send": tz "Europe/Berlin" applies only to a calendar window`,
		`{"limits": {"A.Send": {"tz": "Europe/Berlin"}}}`:                  `"A.Send": tz "Europe/Berlin" applies only to a calendar window`,
		`{"limits": {"A.Send": {"window": "2mo"}}}`:                        `"A.Send": window "2mo" must be a Go duration of at least 1µs, such as "30s", or a calendar window: "1d", "1w", "1mo" or "1y"`,
		`{"limits": {"A.Send": {"window": "1mo", "tz": "Europe/Berln"}}}`:  `"A.Send": unknown time zone "Europe/Berln"`,
		`{"limits": {"A.Send": {"window": "1mo", "tz": ""}}}`:              `"A.Send": tz is empty`,
		`{"limits": {"A.Send": {"window": "1mo", "tz": "Local"}}}`:         `"A.Send": zone "Local" is the time zone of whichever machine runs the program`,
		`{"limits": {"A.Send": {"window": "1d", "burst": 5}}}`:             `"A.Send": burst 5 with a calendar window, which is a fixed window and has no burst`,
		`{"limits": {"Jobs.Run": {"window": "1d"}}}`:                       `"Jobs.Run": its calls would fail: limit "Jobs.Run" has a Calendar and Algorithm concurrency`,
	} {
		writeFile(t, path, contents)
		err := ov.LoadFile(path)
		require.ErrorContains(t, err, want, contents)
		require.ErrorContains(t, err, path)
		require.Equal(t, 9, runtime.ApplyOverrides(&ov, []runtime.Request{{Limit: runtime.Limit{Name: "A.Send", Max: 1}}})[0].Limit.Max, contents)
	}
}

// TestSetCalendarMistakes: Set refuses a Calendar it cannot apply.
func TestSetCalendarMistakes(t *testing.T) {
	var ov runtime.Overrides
	for ovr, want := range map[runtime.Override]string{
		{Calendar: runtime.Calendar{Zone: "Europe/Berlin"}}:                            `"A.Send": zone "Europe/Berlin" without a calendar Period`,
		{Calendar: runtime.Calendar{Period: runtime.Year + 1}}:                         `"A.Send": unknown calendar Period(5)`,
		{Window: time.Minute, Calendar: runtime.Calendar{Period: runtime.Day}}:         `"A.Send": window 1m0s and a calendar window of a day: give one of them`,
		{Calendar: runtime.Calendar{Period: runtime.Month, Zone: "Mars/Olympus_Mons"}}: `"A.Send": unknown time zone "Mars/Olympus_Mons"`,
	} {
		require.ErrorContains(t, ov.Set(map[string]runtime.Override{"A.Send": ovr}), want)
	}
	require.NoError(t, ov.Set(map[string]runtime.Override{"A.Send": {Calendar: runtime.Calendar{Period: runtime.Month, Zone: "America/Sao_Paulo"}}}))
}
