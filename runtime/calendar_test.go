package runtime_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err, "the time zone database (Debian: tzdata) must be installed")
	return loc
}

// TestCalendarWindows checks calendar windows across month ends, leap
// years, ISO weeks and daylight-saving changes, including one that skips
// midnight.
func TestCalendarWindows(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	santiago := mustZone(t, "America/Santiago")
	for _, c := range []struct {
		cal        runtime.Period
		loc        *time.Location
		at         time.Time
		start, end time.Time
		hours      float64
	}{
		{runtime.Day, time.UTC, time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC),
			time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), 24},
		// Spring forward (02:00 -> 03:00): a day of 23 hours.
		{runtime.Day, berlin, time.Date(2026, 3, 29, 12, 0, 0, 0, berlin),
			time.Date(2026, 3, 29, 0, 0, 0, 0, berlin), time.Date(2026, 3, 30, 0, 0, 0, 0, berlin), 23},
		// Fall back (03:00 -> 02:00): 25 hours.
		{runtime.Day, berlin, time.Date(2026, 10, 25, 2, 30, 0, 0, berlin),
			time.Date(2026, 10, 25, 0, 0, 0, 0, berlin), time.Date(2026, 10, 26, 0, 0, 0, 0, berlin), 25},
		// Chile skips midnight (00:00 -> 01:00) on 2026-09-06.
		{runtime.Day, santiago, time.Date(2026, 9, 6, 12, 0, 0, 0, santiago),
			time.Date(2026, 9, 6, 1, 0, 0, 0, santiago), time.Date(2026, 9, 7, 0, 0, 0, 0, santiago), 23},
		{runtime.Day, santiago, time.Date(2026, 9, 5, 23, 30, 0, 0, santiago),
			time.Date(2026, 9, 5, 0, 0, 0, 0, santiago), time.Date(2026, 9, 6, 1, 0, 0, 0, santiago), 24},
		{runtime.Week, time.UTC, time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC), // a Sunday
			time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC), 168},
		{runtime.Week, time.UTC, time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC), // a Monday
			time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 14, 0, 0, 0, 0, time.UTC), 168},
		{runtime.Month, time.UTC, time.Date(2028, 2, 29, 12, 0, 0, 0, time.UTC),
			time.Date(2028, 2, 1, 0, 0, 0, 0, time.UTC), time.Date(2028, 3, 1, 0, 0, 0, 0, time.UTC), 29 * 24},
		{runtime.Month, time.UTC, time.Date(2027, 2, 28, 23, 0, 0, 0, time.UTC),
			time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC), 28 * 24},
		{runtime.Month, berlin, time.Date(2026, 1, 31, 23, 30, 0, 0, berlin),
			time.Date(2026, 1, 1, 0, 0, 0, 0, berlin), time.Date(2026, 2, 1, 0, 0, 0, 0, berlin), 31 * 24},
		// The instant is in February in UTC and still January in Berlin.
		{runtime.Month, berlin, time.Date(2026, 1, 31, 23, 30, 0, 0, time.UTC),
			time.Date(2026, 2, 1, 0, 0, 0, 0, berlin), time.Date(2026, 3, 1, 0, 0, 0, 0, berlin), 28 * 24},
		{runtime.Year, time.UTC, time.Date(2026, 12, 31, 23, 59, 59, 999, time.UTC),
			time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), 365 * 24},
	} {
		cal := runtime.Calendar{Period: c.cal}
		start, end := cal.Window(c.at, c.loc)
		name := cal.Period.String() + " in " + c.loc.String() + " at " + c.at.String()
		require.True(t, start.Equal(c.start), "%s: start %v, want %v", name, start, c.start)
		require.True(t, end.Equal(c.end), "%s: end %v, want %v", name, end, c.end)
		require.Equal(t, c.hours, end.Sub(start).Hours(), name)
		require.False(t, c.at.Before(start), name)
		require.True(t, c.at.Before(end), name)
	}
}

// TestCalendarWindowsTile walks a year in three zones, an hour at a time,
// and checks that each instant's window holds it and that windows follow
// one another without gap or overlap.
func TestCalendarWindowsTile(t *testing.T) {
	for _, name := range []string{"UTC", "Europe/Berlin", "America/Santiago", "Australia/Lord_Howe"} {
		loc := mustZone(t, name)
		for _, p := range []runtime.Period{runtime.Day, runtime.Week, runtime.Month, runtime.Year} {
			cal := runtime.Calendar{Period: p, Zone: name}
			at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			start, end := cal.Window(at, loc)
			for range 366 * 24 {
				at = at.Add(time.Hour)
				s, e := cal.Window(at, loc)
				require.False(t, at.Before(s), "%s %s at %v", name, p, at)
				require.True(t, at.Before(e), "%s %s at %v", name, p, at)
				if !s.Equal(start) {
					require.True(t, s.Equal(end), "%s %s at %v: window %v-%v follows %v-%v", name, p, at, s, e, start, end)
					start, end = s, e
				}
				require.True(t, e.Equal(end), "%s %s at %v", name, p, at)
			}
		}
	}
}

func TestCalendarLimitValidate(t *testing.T) {
	ok := runtime.Limit{Name: "Exports", Algorithm: runtime.FixedWindow, Max: 1000, Calendar: runtime.Calendar{Period: runtime.Month, Zone: "Europe/Berlin"}}
	require.NoError(t, ok.Validate())
	require.Equal(t, "Exports (1000 per month in Europe/Berlin)", ok.String())
	for _, c := range []struct {
		change func(*runtime.Limit)
		msg    string
	}{
		{func(l *runtime.Limit) { l.Algorithm = runtime.SlidingLog }, "calendar windows are fixed windows"},
		{func(l *runtime.Limit) { l.Algorithm = "" }, "calendar windows are fixed windows"},
		{func(l *runtime.Limit) { l.Window = time.Hour }, "set Window to 0"},
		{func(l *runtime.Limit) { l.Calendar.Period = 9 }, "unknown Calendar"},
		{func(l *runtime.Limit) { l.Max = 0 }, "at least 1"},
	} {
		l := ok
		c.change(&l)
		require.ErrorContains(t, l.Validate(), c.msg)
	}
}

// TestCalendarZones checks that CalendarZones loads zones, caches a
// bounded number of calendars while still serving the others, computes
// the boundaries around an instant, and names a zone it cannot load.
func TestCalendarZones(t *testing.T) {
	var z runtime.CalendarZones
	berlin := mustZone(t, "Europe/Berlin")
	w, err := z.Windows(runtime.Calendar{Period: runtime.Day, Zone: "Europe/Berlin"})
	require.NoError(t, err)
	at := time.Date(2026, 3, 29, 12, 0, 0, 0, berlin)
	b := w.At(at.UnixMicro())
	require.Equal(t, runtime.Boundaries{
		Prev:  time.Date(2026, 3, 28, 0, 0, 0, 0, berlin).UnixMicro(),
		Start: time.Date(2026, 3, 29, 0, 0, 0, 0, berlin).UnixMicro(),
		End:   time.Date(2026, 3, 30, 0, 0, 0, 0, berlin).UnixMicro(),
		Next:  time.Date(2026, 3, 31, 0, 0, 0, 0, berlin).UnixMicro(),
	}, b)
	require.Equal(t, b, w.At(b.End-1), "the window's last µs")
	require.Equal(t, b.End, w.At(b.End).Start, "the next window")
	again, err := z.Windows(runtime.Calendar{Period: runtime.Day, Zone: "Europe/Berlin"})
	require.NoError(t, err)
	require.Same(t, w, again, "loaded once")

	_, err = z.Windows(runtime.Calendar{Period: runtime.Day, Zone: "Not/A_Zone"})
	require.ErrorContains(t, err, `"Not/A_Zone"`)
	require.ErrorContains(t, err, "tzdata")

	// More calendars than it keeps: every zone of the database, by day.
	tab, err := os.ReadFile("/usr/share/zoneinfo/zone1970.tab")
	if err != nil {
		t.Skipf("no zone table to draw zones from: %v", err)
	}
	n := 0
	for _, line := range strings.Split(string(tab), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || strings.HasPrefix(f[0], "#") {
			continue
		}
		w, err := z.Windows(runtime.Calendar{Period: runtime.Day, Zone: f[2]})
		require.NoError(t, err)
		require.Less(t, w.At(at.UnixMicro()).Start, w.At(at.UnixMicro()).End)
		n++
	}
	require.Greater(t, n, 256)
	require.LessOrEqual(t, runtime.CachedCalendars(&z), 256)
}

func TestLimitErrorCalendar(t *testing.T) {
	l := runtime.Limit{Name: "Exports.Run", Algorithm: runtime.FixedWindow, Max: 1000,
		Calendar: runtime.Calendar{Period: runtime.Month, Zone: "Europe/Berlin"}}
	err := &runtime.LimitError{Limit: l, Decision: runtime.Decision{RetryAfter: 90 * time.Minute}}
	require.Equal(t, `ratelimit: "Exports.Run" allows 1000 calls per month in Europe/Berlin; retry in 1h30m0s`, err.Error())
}
