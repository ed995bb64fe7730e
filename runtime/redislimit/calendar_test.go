package redislimit

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

func calZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err, "the time zone database (Debian: tzdata) must be installed")
	return loc
}

// setClock moves c to at.
func setClock(c *fakeClock, at time.Time) { c.Advance(at.Sub(c.Now())) }

func calLimit(name string, p runtime.Period, zone string, max int) runtime.Limit {
	return runtime.Limit{Name: name, Algorithm: runtime.FixedWindow, Calendar: runtime.Calendar{Period: p, Zone: zone}, Max: max}
}

// calBoundary is a boundary of a calendar limit's windows, and the end of
// the window it starts.
type calBoundary struct {
	l         runtime.Limit
	at, until time.Time
}

// calBoundaries are the boundaries the calendar tests step across:
// daylight-saving changes (Berlin's spring and autumn days of 23 and 25
// hours, Santiago's day whose midnight is skipped), month ends (a 31-day
// month, February of 2027 and of the leap year 2028) and a year's end.
func calBoundaries(t *testing.T) []calBoundary {
	berlin, santiago := calZone(t, "Europe/Berlin"), calZone(t, "America/Santiago")
	utc := time.UTC
	day := func(z string) runtime.Limit { return calLimit("cal.day."+z, runtime.Day, z, 3) }
	month := func(z string) runtime.Limit { return calLimit("cal.month."+z, runtime.Month, z, 4) }
	return []calBoundary{
		// Berlin springs forward on 2026-03-29: the day lasts 23 hours.
		{day("Europe/Berlin"), time.Date(2026, 3, 29, 0, 0, 0, 0, berlin), time.Date(2026, 3, 30, 0, 0, 0, 0, berlin)},
		{day("Europe/Berlin"), time.Date(2026, 3, 30, 0, 0, 0, 0, berlin), time.Date(2026, 3, 31, 0, 0, 0, 0, berlin)},
		// and falls back on 2026-10-25: 25 hours.
		{day("Europe/Berlin"), time.Date(2026, 10, 25, 0, 0, 0, 0, berlin), time.Date(2026, 10, 26, 0, 0, 0, 0, berlin)},
		{day("Europe/Berlin"), time.Date(2026, 10, 26, 0, 0, 0, 0, berlin), time.Date(2026, 10, 27, 0, 0, 0, 0, berlin)},
		// Santiago skips midnight on 2026-09-06: the day starts at 01:00.
		{day("America/Santiago"), time.Date(2026, 9, 6, 1, 0, 0, 0, santiago), time.Date(2026, 9, 7, 0, 0, 0, 0, santiago)},
		{day("America/Santiago"), time.Date(2026, 9, 7, 0, 0, 0, 0, santiago), time.Date(2026, 9, 8, 0, 0, 0, 0, santiago)},
		{month("UTC"), time.Date(2027, 2, 1, 0, 0, 0, 0, utc), time.Date(2027, 3, 1, 0, 0, 0, 0, utc)},
		{month("UTC"), time.Date(2027, 3, 1, 0, 0, 0, 0, utc), time.Date(2027, 4, 1, 0, 0, 0, 0, utc)},
		{month("Europe/Berlin"), time.Date(2028, 3, 1, 0, 0, 0, 0, berlin), time.Date(2028, 4, 1, 0, 0, 0, 0, berlin)},
		{month("Europe/Berlin"), time.Date(2028, 2, 1, 0, 0, 0, 0, berlin), time.Date(2028, 3, 1, 0, 0, 0, 0, berlin)},
		{calLimit("cal.year", runtime.Year, "", 2), time.Date(2027, 1, 1, 0, 0, 0, 0, utc), time.Date(2028, 1, 1, 0, 0, 0, 0, utc)},
		{calLimit("cal.week", runtime.Week, "Europe/Berlin", 2), time.Date(2026, 10, 26, 0, 0, 0, 0, berlin), time.Date(2026, 11, 2, 0, 0, 0, 0, berlin)},
	}
}

// TestCalendarDifferential steps both backends, on one fake clock, across
// calendar boundaries, and requires the same Decisions at every step: a
// key filled before the boundary is denied until its last microsecond,
// with RetryAfter to the boundary, and counts again from 0 at the
// boundary, with ResetAfter to the next one. Around each boundary a
// random walk then mixes calls, several-limit calls with a plain fixed
// window, holds settled at random and peeks, with the clock stepping by
// microseconds to days, now and then back.
func TestCalendarDifferential(t *testing.T) {
	srv := redistest.StartServer(t)
	h := newDiffHarness(t, srv.Client(t))
	plain := runtime.Limit{Name: "cal.plain", Algorithm: runtime.FixedWindow, Window: 5 * time.Hour, Max: 3}
	rng := rand.New(rand.NewPCG(46, 1))
	step := 0
	for bi, b := range calBoundaries(t) {
		key := fmt.Sprintf("k%d", bi)
		max := b.l.Max
		// Fill the window before the boundary, 2s before it.
		setClock(h.clock, b.at.Add(-2*time.Second))
		for i := range max {
			d := h.single(step, b.l, key, 1)
			step++
			require.True(t, d.Allowed, "%v call %d", b.l, i)
			require.Equal(t, max-1-i, d.Remaining)
			require.Equal(t, 2*time.Second, d.ResetAfter, "%v resets at %v", b.l, b.at)
		}
		d := h.single(step, b.l, key, 1)
		step++
		require.False(t, d.Allowed)
		require.Equal(t, 2*time.Second, d.RetryAfter, "%v: retry at %v", b.l, b.at)
		setClock(h.clock, b.at.Add(-time.Microsecond))
		d = h.single(step, b.l, key, 1)
		step++
		require.False(t, d.Allowed)
		require.Equal(t, time.Microsecond, d.RetryAfter)
		require.Equal(t, time.Microsecond, d.ResetAfter)
		// At the boundary the count starts again.
		setClock(h.clock, b.at)
		d = h.single(step, b.l, key, 1)
		step++
		require.True(t, d.Allowed, "%v at %v", b.l, b.at)
		require.Equal(t, max-1, d.Remaining)
		require.Equal(t, b.until.Sub(b.at), d.ResetAfter, "%v: the window %v to %v", b.l, b.at, b.until)

		// A random walk around the boundary.
		keys := []string{key, key + "x"}
		var pending []diffHold
		setClock(h.clock, b.at.Add(-time.Duration(rng.Int64N(int64(time.Hour)))))
		for range 60 {
			switch r := rng.Float64(); {
			case r < 0.3:
				h.clock.Advance(time.Duration(1 + rng.Int64N(1000)))
			case r < 0.6:
				h.clock.Advance(time.Duration(rng.Int64N(int64(time.Hour))))
			case r < 0.8:
				h.clock.Advance(time.Duration(rng.Int64N(int64(30 * 24 * time.Hour))))
			case r < 0.9:
				setClock(h.clock, b.until.Add(time.Duration(rng.Int64N(5)-2)*time.Microsecond))
			default:
				h.clock.Advance(-time.Duration(rng.Int64N(int64(2 * time.Hour))))
			}
			k := keys[rng.IntN(len(keys))]
			n := 1 + rng.IntN(max)
			switch r := rng.Float64(); {
			case r < 0.3:
				h.single(step, b.l, k, n)
			case r < 0.45:
				h.all(step, []runtime.Request{{Limit: b.l, Key: k, Cost: int64(n)}, {Limit: plain, Key: k}})
			case r < 0.55:
				h.peek(step, b.l, k, n)
			case r < 0.8:
				if p, ok := h.hold(step, b.l, k, n); ok {
					pending = append(pending, p)
				}
			default:
				if len(pending) > 0 {
					i := rng.IntN(len(pending))
					h.settle(step, pending[i], rng.Int64N(pending[i].capacity+2))
					pending = append(pending[:i], pending[i+1:]...)
				}
			}
			step++
		}
	}
}

// TestCalendarSettle checks that a give-back applies while the call's
// window is the current one, and does nothing once it has ended, on both
// backends.
func TestCalendarSettle(t *testing.T) {
	srv := redistest.StartServer(t)
	h := newDiffHarness(t, srv.Client(t))
	l := calLimit("cal.settle", runtime.Day, "Europe/Berlin", 5)
	b := calBoundaries(t)[0].at
	setClock(h.clock, b.Add(-time.Minute))
	p, ok := h.hold(0, l, "k", 3)
	require.True(t, ok)
	h.settle(1, p, 1) // gives back 2 in the same window
	require.Equal(t, 3, h.single(2, l, "k", 1).Remaining)

	p, ok = h.hold(3, l, "k", 3)
	require.True(t, ok)
	setClock(h.clock, b)
	require.Equal(t, 4, h.single(4, l, "k", 1).Remaining, "a new window")
	h.settle(5, p, 0) // its window has ended: nothing given back
	d := h.single(6, l, "k", 1)
	require.Equal(t, 3, d.Remaining, "the settle of an ended window gave back nothing")
	for _, lim := range []runtime.Limiter{h.mem, h.red} {
		ds, err := lim.(runtime.Peeker).Peek(ctx, runtime.Request{Limit: l, Key: "k"})
		require.NoError(t, err)
		require.Equal(t, 3, ds.Each[0].Remaining)
	}
}

// TestCalendarDenyCache checks that a denial the deny cache keeps ends at
// the boundary: the next window admits at once.
func TestCalendarDenyCache(t *testing.T) {
	srv := redistest.StartServer(t)
	clock := newFakeClock()
	lim := New(srv.Client(t), WithClock(clock.Now), WithPrefix("caldeny:"), WithFailurePolicy(FailClosed),
		WithTimeout(10*time.Second), WithDenyCache(1000))
	l := calLimit("cal.deny", runtime.Day, "America/Santiago", 1)
	b := calBoundaries(t)[4]
	setClock(clock, b.at.Add(-10*time.Second))
	d, err := lim.Allow(ctx, l, "k")
	require.NoError(t, err)
	require.True(t, d.Allowed)
	for range 3 {
		ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: "k"})
		require.NoError(t, err)
		require.False(t, ds.Allowed)
		require.LessOrEqual(t, ds.Each[0].RetryAfter, 10*time.Second)
	}
	setClock(clock, b.at)
	ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: "k"})
	require.NoError(t, err)
	require.True(t, ds.Allowed, "the deny cache kept a denial past the boundary: %+v", ds)
	require.Equal(t, runtime.SourceStore, ds.Source)
}

// TestCalendarNoLeases checks that calendar limits are decided by Redis
// even when leases are on: a lease's window is a fixed window's.
func TestCalendarNoLeases(t *testing.T) {
	srv := redistest.StartServer(t)
	lim := New(srv.Client(t), WithPrefix("callease:"), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second),
		WithLeases(10*time.Millisecond))
	l := calLimit("cal.lease", runtime.Day, "", 1000)
	for range 300 {
		ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: "hot"})
		require.NoError(t, err)
		require.True(t, ds.Allowed)
		require.NotEqual(t, runtime.SourceLease, ds.Source)
	}
}

// TestCalendarZoneError checks that a zone that cannot be loaded is an
// error naming it and saying what to do, on both backends, and no panic.
func TestCalendarZoneError(t *testing.T) {
	srv := redistest.StartServer(t)
	l := calLimit("cal.nozone", runtime.Day, "Mars/Olympus_Mons", 1)
	for _, lim := range []runtime.Limiter{
		memlimit.New(),
		New(srv.Client(t), WithPrefix("calzone:"), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second)),
	} {
		_, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: "k"})
		require.Error(t, err)
		for _, want := range []string{`"Mars/Olympus_Mons"`, "time/tzdata", "tzdata", `"cal.nozone"`} {
			require.Contains(t, err.Error(), want)
		}
		_, _, err = lim.(runtime.Holder).Hold(ctx, runtime.Request{Limit: l, Key: "k"})
		require.Error(t, err)
		_, err = lim.(runtime.Peeker).Peek(ctx, runtime.Request{Limit: l, Key: "k"})
		require.Error(t, err)
	}
}

// TestCalendarScriptPicksWindow sends crafted boundaries, as a client
// whose clock is off Redis's would compute them, and checks which window
// the script counts in by Redis's own clock (TIME): the receipt is the
// window's start. A window given that holds Redis's now is picked; when
// none does (a client clock off by more than a window), the nearest, and
// RetryAfter and ResetAfter then run from its nearest instant: never
// negative, at most the window.
func TestCalendarScriptPicksWindow(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	lim := New(client, WithPrefix("calpick:"), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	l := calLimit("cal.pick", runtime.Day, "", 2)
	hour := time.Hour.Microseconds()
	tm, err := client.Time(ctx).Result()
	require.NoError(t, err)
	// Redis's now is at least t0 from here on, and within a minute of it.
	t0 := tm.UnixMicro()
	for _, c := range []struct {
		name                   string
		prev, start, end, next int64
		// want is the window's start; near says whether Redis's now is
		// in it (else it is the nearest).
		want int64
		in   bool
	}{
		{"client on time", t0 - 2*hour, t0 - hour, t0 + hour, t0 + 2*hour, t0 - hour, true},
		{"client ahead", t0 - hour, t0 + hour, t0 + 2*hour, t0 + 3*hour, t0 - hour, true},
		{"client behind", t0 - 3*hour, t0 - 2*hour, t0 - hour, t0 + hour, t0 - hour, true},
		{"client far ahead", t0 + hour, t0 + 2*hour, t0 + 3*hour, t0 + 4*hour, t0 + hour, false},
		{"client far behind", t0 - 4*hour, t0 - 3*hour, t0 - 2*hour, t0 - hour, t0 - 2*hour, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			reqs := []runtime.Request{{Limit: l, Key: c.name, Cost: 1}}
			d := resolvedCall{now: -1, asks: lim.resolve(nil, reqs), vs: make([]verdict, 1), receipts: make([]int64, 1)}
			a := &d.asks[0]
			require.Equal(t, int64(codeCalendar), a.code)
			a.prev, a.window, a.burst, a.next = c.prev, c.start, c.end, c.next
			s, idx := codeScripts[codeCalendar], firstN(1)
			for i := range 3 {
				res, err := s.run(ctx, client, lim.callArgs(s, modeDecide, &d, idx, ""), nil)
				require.NoError(t, err)
				committed, _, err := readCall(res, &d, idx)
				require.NoError(t, err)
				v := d.vs[0]
				require.Equal(t, i < 2, committed, "call %d: %+v", i, v)
				if committed {
					require.Equal(t, c.want, d.receipts[0], "call %d counts in the window starting at %d", i, c.want)
				}
				end := map[int64]int64{c.prev: c.start, c.start: c.end, c.end: c.next}[c.want]
				require.Positive(t, v.reset)
				require.LessOrEqual(t, v.reset, end-c.want)
				if c.in {
					require.LessOrEqual(t, v.reset, end-t0, "ResetAfter runs to the window's end")
				}
				if !committed {
					require.Equal(t, v.reset, v.retry)
				}
			}
			// The key lives until the window's end on Redis's clock, and
			// one whose window ended there for the window's length.
			ttl, err := client.PTTL(ctx, a.key).Result()
			require.NoError(t, err)
			require.Greater(t, ttl, 30*time.Minute)
			fields, err := client.HGetAll(ctx, a.key).Result()
			require.NoError(t, err)
			require.Equal(t, fmt.Sprint(c.want), fields["w"])
			require.Equal(t, "2", fields["n"])
		})
	}
}

// TestCalendarStorageKey checks that a calendar limit's state is kept
// apart from a plain fixed window's of the same name.
func TestCalendarStorageKey(t *testing.T) {
	srv := redistest.StartServer(t)
	clock := newFakeClock()
	lim := New(srv.Client(t), WithClock(clock.Now), WithPrefix("calkey:"), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	cal := calLimit("shared", runtime.Day, "", 1)
	plain := runtime.Limit{Name: "shared", Algorithm: runtime.FixedWindow, Window: 24 * time.Hour, Max: 1}
	require.NotEqual(t, lim.storageKey(cal, "k"), lim.storageKey(plain, "k"))
	require.True(t, strings.Contains(lim.storageKey(cal, "k"), "}cw="), lim.storageKey(cal, "k"))
	for _, x := range []runtime.Limit{cal, plain} {
		d, err := lim.Allow(ctx, x, "k")
		require.NoError(t, err)
		require.True(t, d.Allowed, "%v", x)
	}
}

// TestCalendarOnRedisClock decides a calendar limit on Redis's own clock
// (no WithClock): the key counts in the day that holds Redis's TIME, and
// ResetAfter runs to that day's end.
func TestCalendarOnRedisClock(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	lim := New(client, WithPrefix("calnow:"), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	tokyo := calZone(t, "Asia/Tokyo")
	l := calLimit("cal.now", runtime.Day, "Asia/Tokyo", 3)
	before, err := client.Time(ctx).Result()
	require.NoError(t, err)
	d, err := lim.Allow(ctx, l, "k")
	require.NoError(t, err)
	after, err := client.Time(ctx).Result()
	require.NoError(t, err)
	start, end := l.Calendar.Window(before, tokyo)
	if !after.Before(end) {
		t.Skip("Redis's clock crossed midnight in Tokyo during the call")
	}
	require.True(t, d.Allowed)
	require.Equal(t, 2, d.Remaining)
	require.LessOrEqual(t, d.ResetAfter, end.Sub(before))
	require.GreaterOrEqual(t, d.ResetAfter, end.Sub(after))
	fields, err := client.HGetAll(ctx, lim.storageKey(l, "k")).Result()
	require.NoError(t, err)
	require.Equal(t, fmt.Sprint(start.UnixMicro()), fields["w"])
	require.Equal(t, fmt.Sprint(end.UnixMicro()), fields["e"])
}

// TestCalendarUnknownShare: while Redis is down and the instances sharing
// it are unknown, FailLocal denies a calendar limit with its ResetAfter at
// the calendar window's end.
func TestCalendarUnknownShare(t *testing.T) {
	srv := redistest.StartServer(t)
	clock := newFakeClock() // 12:00 UTC
	lim := New(srv.Client(t), WithClock(clock.Now), WithTimeout(time.Second))
	srv.Stop(t)
	l := runtime.Limit{Name: "cal.share", Algorithm: runtime.FixedWindow, Max: 3, Calendar: runtime.Calendar{Period: runtime.Day}}
	ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: "k"})
	require.NoError(t, err)
	require.Equal(t, runtime.SourceFallback, ds.Source)
	require.ErrorIs(t, ds.Cause, ErrInstancesUnknown)
	require.False(t, ds.Allowed)
	require.Equal(t, 12*time.Hour, ds.Each[0].ResetAfter, "to midnight UTC")
}
