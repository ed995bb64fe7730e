package runtime

import (
	"fmt"
	"time"
)

// A Calendar aligns a FixedWindow limit's windows to the periods of a
// calendar in a time zone, in place of Window: "1,000 exports per month,
// reset on the 1st", "50 SMS per day, reset at midnight in the customer's
// time zone". Each window runs from the start of one Period to the start
// of the next, in Zone, so a day lasts 23, 24 or 25 hours as daylight
// saving time begins or ends, and a month 28 to 31 days. The zero value
// is no calendar: the limit's windows are its Window.
type Calendar struct {
	// Period is the calendar period of each window.
	Period Period
	// Zone is the IANA name of the time zone whose calendar counts, such
	// as "Europe/Berlin", as time.LoadLocation reads it; "" means UTC. A
	// Limiter that cannot load it returns an error naming it.
	Zone string
}

// A Period is a calendar period. Each starts at midnight in its zone or,
// on a day whose midnight is skipped by a daylight-saving change, at the
// day's first instant.
type Period uint8

const (
	// Day runs from midnight to the next midnight.
	Day Period = iota + 1
	// Week runs from Monday's midnight to the next Monday's (ISO 8601).
	Week
	// Month runs from the 1st's midnight to the next month's 1st.
	Month
	// Year runs from January 1st's midnight to the next year's.
	Year
)

// String returns the period's name: "day", "week", "month" or "year".
func (p Period) String() string {
	switch p {
	case Day:
		return "day"
	case Week:
		return "week"
	case Month:
		return "month"
	case Year:
		return "year"
	}
	return fmt.Sprintf("Period(%d)", uint8(p))
}

// IsZero reports whether c is no calendar.
func (c Calendar) IsZero() bool { return c.Period == 0 }

// String returns c as "month in Europe/Berlin", or "day in UTC".
func (c Calendar) String() string {
	zone := c.Zone
	if zone == "" {
		zone = "UTC"
	}
	return c.Period.String() + " in " + zone
}

// Window returns the window of c that holds t: from start, included, to
// end, excluded, in loc, the location of c's Zone (nil means UTC). Windows
// follow one another without gap or overlap.
func (c Calendar) Window(t time.Time, loc *time.Location) (start, end time.Time) {
	if loc == nil {
		loc = time.UTC
	}
	y, m, d := t.In(loc).Date()
	switch c.Period {
	case Week:
		// Days since Monday.
		d -= (int(t.In(loc).Weekday()) + 6) % 7
		return dayStart(y, m, d, loc), dayStart(y, m, d+7, loc)
	case Month:
		return dayStart(y, m, 1, loc), dayStart(y, m+1, 1, loc)
	case Year:
		return dayStart(y, 1, 1, loc), dayStart(y+1, 1, 1, loc)
	}
	return dayStart(y, m, d, loc), dayStart(y, m, d+1, loc)
}

// dayStart returns the first instant of the day y-m-d (normalized as
// time.Date does) in loc: its midnight, or, when a daylight-saving change
// skips midnight, the instant the day begins.
func dayStart(y int, m time.Month, d int, loc *time.Location) time.Time {
	t := time.Date(y, m, d, 0, 0, 0, 0, loc)
	// Noon exists on every day of every zone, and names the day wanted.
	wy, wm, wd := time.Date(y, m, d, 12, 0, 0, 0, loc).Date()
	if ty, tm, td := t.Date(); ty == wy && tm == wm && td == wd {
		return t
	}
	// time.Date resolved the skipped midnight before the change, on the
	// day before: the day begins at that day's next midnight, in the
	// offset that was in effect until the change.
	h, mi, s := t.Clock()
	return t.Add(24*time.Hour - time.Duration(h)*time.Hour - time.Duration(mi)*time.Minute - time.Duration(s)*time.Second - time.Duration(t.Nanosecond()))
}

// validateCalendar validates what is particular to l, whose Calendar is
// set.
// It does not load the Zone, which Validate would then read on every
// decision: a Limiter loads it once, and reports a Zone it cannot load.
func validateCalendar(l Limit) error {
	switch {
	case l.Calendar.Period > Year:
		return fmt.Errorf("ratelimit: limit %q has unknown Calendar %v; use Day, Week, Month or Year", l.Name, l.Calendar.Period)
	case l.algorithm() != FixedWindow:
		return fmt.Errorf("ratelimit: limit %q has a Calendar and Algorithm %s; calendar windows are fixed windows: set Algorithm to FixedWindow", l.Name, l.algorithm())
	case l.Window != 0:
		return fmt.Errorf("ratelimit: limit %q has a Calendar and Window %v; a calendar's period is its window: set Window to 0", l.Name, l.Window)
	}
	return nil
}
