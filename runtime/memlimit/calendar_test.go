package memlimit

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestCalendarWindow checks a calendar limit's windows in memory: counts
// start again at the boundary (Berlin's 23-hour day), RetryAfter and
// ResetAfter run to it, a give-back of an ended window does nothing, and
// the state is kept apart from a plain fixed window's of the same name.
func TestCalendarWindow(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err, "the time zone database (Debian: tzdata) must be installed")
	clock := newFakeClock()
	clock.Advance(time.Date(2026, 3, 29, 23, 59, 0, 0, berlin).Sub(clock.Now()))
	m := New(WithClock(clock.Now))
	ctx := context.Background()
	l := runtime.Limit{Name: "cal", Algorithm: runtime.FixedWindow, Max: 2,
		Calendar: runtime.Calendar{Period: runtime.Day, Zone: "Europe/Berlin"}}
	plain := runtime.Limit{Name: "cal", Algorithm: runtime.FixedWindow, Max: 1, Window: time.Hour}

	ds, h, err := m.Hold(ctx, runtime.Request{Limit: l, Key: "k"})
	require.NoError(t, err)
	require.True(t, ds.Allowed)
	require.Equal(t, time.Minute, ds.Each[0].ResetAfter)
	d, err := m.Allow(ctx, l, "k")
	require.NoError(t, err)
	require.True(t, d.Allowed)
	d, err = m.Allow(ctx, l, "k")
	require.NoError(t, err)
	require.False(t, d.Allowed)
	require.Equal(t, time.Minute, d.RetryAfter)
	// Not the calendar limit's count.
	d, err = m.Allow(ctx, plain, "k")
	require.NoError(t, err)
	require.True(t, d.Allowed)

	clock.Advance(time.Minute)
	d, err = m.Allow(ctx, l, "k")
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.Equal(t, 1, d.Remaining)
	require.Equal(t, 24*time.Hour, d.ResetAfter, "2026-03-30 is a day of 24 hours")
	require.NoError(t, h.Settle(ctx, 0))
	ds, err = m.Peek(ctx, runtime.Request{Limit: l, Key: "k"})
	require.NoError(t, err)
	require.Equal(t, 1, ds.Each[0].Remaining, "the settle of an ended window gave nothing back")
}

// TestCalendarZoneUnknown checks that a zone that cannot be loaded is an
// error naming it and what to do, on every entry point, never a panic.
func TestCalendarZoneUnknown(t *testing.T) {
	m := New()
	ctx := context.Background()
	l := runtime.Limit{Name: "cal", Algorithm: runtime.FixedWindow, Max: 2,
		Calendar: runtime.Calendar{Period: runtime.Month, Zone: "Nowhere/Atlantis"}}
	_, err := m.Allow(ctx, l, "k")
	require.ErrorContains(t, err, `"Nowhere/Atlantis"`)
	require.ErrorContains(t, err, `import _ "time/tzdata"`)
	_, err = m.Decide(ctx, runtime.Request{Limit: l, Key: "k"}, runtime.Request{Limit: l, Key: "j"})
	require.ErrorContains(t, err, `"Nowhere/Atlantis"`)
	_, _, err = m.Hold(ctx, runtime.Request{Limit: l, Key: "k"})
	require.ErrorContains(t, err, `"Nowhere/Atlantis"`)
}

// TestCalendarZonesBounded checks that a limiter keeps a bounded number of
// calendars, and decides those beyond them all the same.
func TestCalendarZonesBounded(t *testing.T) {
	m := New()
	ctx := context.Background()
	zones := []string{"Europe/Berlin", "America/Santiago", "Asia/Tokyo", "UTC", ""}
	for i := range 600 {
		l := runtime.Limit{Name: "cal", Algorithm: runtime.FixedWindow, Max: 1000,
			Calendar: runtime.Calendar{Period: runtime.Period(1 + i%4), Zone: zones[i%len(zones)]}}
		d, err := m.Allow(ctx, l, "k")
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
}
