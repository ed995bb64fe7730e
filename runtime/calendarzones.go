package runtime

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// maxCachedCalendars is how many calendars (period and zone) a
// CalendarZones keeps loaded. A program has a handful; one that makes
// zones from its users' input may name any of the ~600 the database
// holds, and each further one is then loaded on every call rather than
// kept, so that memory stays bounded whatever the input.
const maxCachedCalendars = 256

// CalendarZones loads the zones of calendar limits for one Limiter: each
// zone once, kept with the calendar's last window so that most decisions
// compute nothing. It keeps at most a few hundred calendars; further ones
// are loaded on each use, not kept. The zero value is ready to use; it is
// safe for concurrent use and holds no global state. Backends use it; a
// program has no need to.
type CalendarZones struct {
	mu sync.Mutex
	// m is copied on write: read without a lock on every decision.
	m atomic.Pointer[map[Calendar]*CalendarWindows]
}

// Windows returns c's windows, loading c's Zone on first use. The error
// names the zone and says what to do when it cannot be loaded: the
// program runs without the time zone database, or the name is wrong.
func (z *CalendarZones) Windows(c Calendar) (*CalendarWindows, error) {
	if m := z.m.Load(); m != nil {
		if w := (*m)[c]; w != nil {
			return w, nil
		}
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	old := z.m.Load()
	if old != nil {
		if w := (*old)[c]; w != nil {
			return w, nil
		}
	}
	loc, err := loadZone(c.Zone)
	if err != nil {
		return nil, err
	}
	w := &CalendarWindows{cal: c, loc: loc}
	if old != nil && len(*old) >= maxCachedCalendars {
		return w, nil
	}
	m := make(map[Calendar]*CalendarWindows, 1+lenOf(old))
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[c] = w
	z.m.Store(&m)
	return w, nil
}

func lenOf(m *map[Calendar]*CalendarWindows) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

// loadZone loads the zone name, "" meaning UTC.
func loadZone(name string) (loc *time.Location, err error) {
	if name == "" || name == "UTC" {
		return time.UTC, nil
	}
	defer func() {
		// time.LoadLocation does not panic; a program's own tzdata hook
		// might, and a limiter never does.
		if p := recover(); p != nil {
			loc, err = nil, fmt.Errorf("%v", p)
		}
		if err != nil {
			err = fmt.Errorf("ratelimit: cannot load the calendar time zone %q: %v; check the name (an IANA name such as \"Europe/Berlin\"), and install the time zone database (Debian, Alpine: the tzdata package) or build it into the program with import _ \"time/tzdata\"", name, err)
		}
	}()
	return time.LoadLocation(name)
}

// CalendarWindows computes the windows of one Calendar in its loaded
// zone, keeping the last one computed.
type CalendarWindows struct {
	cal  Calendar
	loc  *time.Location
	last atomic.Pointer[Boundaries]
}

// Boundaries are the window of a calendar that holds an instant and its
// two neighbours, as µs since the Unix epoch: the previous window is
// [Prev, Start), the current one [Start, End), the next [End, Next).
type Boundaries struct {
	Prev, Start, End, Next int64
}

// At returns the boundaries around the window that holds now, µs since
// the Unix epoch.
func (w *CalendarWindows) At(now int64) Boundaries {
	if b := w.last.Load(); b != nil && b.Start <= now && now < b.End {
		return *b
	}
	t := time.UnixMicro(now)
	start, end := w.cal.Window(t, w.loc)
	prev, _ := w.cal.Window(start.Add(-time.Microsecond), w.loc)
	_, next := w.cal.Window(end, w.loc)
	b := Boundaries{Prev: prev.UnixMicro(), Start: start.UnixMicro(), End: end.UnixMicro(), Next: next.UnixMicro()}
	w.last.Store(&b)
	return b
}

// Calendar returns the calendar whose windows w computes.
func (w *CalendarWindows) Calendar() Calendar { return w.cal }
