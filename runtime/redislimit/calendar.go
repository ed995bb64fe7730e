package redislimit

import (
	"fmt"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// Calendar limits (runtime.Calendar) on Redis's clock.
//
// A calendar window's boundaries depend on its zone's rules, which Lua
// does not have, so the client computes them: each ask of a calendar
// limit carries four boundaries around the client's now (WithClock's, or
// time.Now), µs since the epoch: the previous window's start (prev), the
// current window's start and end (window and burst, which a fixed window
// of a calendar has no other use for) and the next window's end (next).
// lua/calendar_window.lua then picks, by the script's now (Redis's TIME
// unless WithClock), the window of the three that holds it, so that a
// client whose clock is a little ahead of Redis's or behind it counts in
// the window Redis's clock is in, as every other algorithm does.
//
// A client whose clock is off Redis's by more than a window sends
// boundaries that do not hold Redis's now: the script then decides as if
// its now were the nearest instant they hold (the first window's start,
// or the last's end less 1µs). Its calls count in the first or last window
// given, each of which admits at most Max, and their RetryAfter and
// ResetAfter run to that window's end from that instant: never negative,
// and at most the window's length. Keys' lifetimes are still set from
// Redis's own now, so a count is never forgotten before its window ends on
// Redis's clock.

// resolveCalendars sets the boundaries of the calendar limits of asks,
// those of reqs (which resolveLimit resolved), around the limiter's now;
// it fails only for a zone that cannot be loaded.
func (r *Limiter) resolveCalendars(asks []ask, reqs []runtime.Request) error {
	var now int64
	for i := range asks {
		a := &asks[i]
		if a.algo() != codeCalendar {
			continue
		}
		w, err := r.zones.Windows(reqs[i].Limit.Calendar)
		if err != nil {
			return fmt.Errorf("%w (limit %q)", err, reqs[i].Limit.Name)
		}
		if now == 0 {
			now = r.calendarNow()
		}
		b := w.At(now)
		a.prev, a.window, a.burst, a.next = b.Prev, b.Start, b.End, b.Next
	}
	return nil
}

// calendarNow returns the client's now for calendar boundaries, µs.
func (r *Limiter) calendarNow() int64 {
	if r.cfg.clock != nil {
		return r.cfg.clock().UnixMicro()
	}
	if r.cfg.calendarClock != nil {
		return r.cfg.calendarClock().UnixMicro()
	}
	return time.Now().UnixMicro()
}
