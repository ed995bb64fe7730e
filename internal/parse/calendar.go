package parse

import (
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // tz= is checked against the same zones on every machine

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// A calendar window, window=1d, 1w, 1mo or 1y, counts from the start of
// one calendar period to the start of the next (runtime.Calendar), in the
// time zone of tz= (UTC by default). It is told from a Go duration by its
// unit: Go durations have no d, w, mo or y.

// calendarUnits maps the unit of a calendar window to its period.
var calendarUnits = []struct {
	unit   string
	period runtime.Period
}{
	{"d", runtime.Day},
	{"w", runtime.Week},
	{"mo", runtime.Month},
	{"y", runtime.Year},
}

// CalendarWindow returns the period of a calendar window spelt s ("1d",
// "1w", "1mo", "1y"), and whether s is one.
func CalendarWindow(s string) (runtime.Period, bool) {
	n, p, ok := calendarCount(s)
	return p, ok && n == "1"
}

// CalendarSpelling returns the window= value of a calendar window of
// period p: "1d", "1w", "1mo" or "1y".
func CalendarSpelling(p runtime.Period) string {
	for _, u := range calendarUnits {
		if u.period == p {
			return "1" + u.unit
		}
	}
	return ""
}

// calendarCount splits s, if it is a count of calendar periods written
// as digits and a unit ("1mo", "2d", "01w"), into its digits and period.
func calendarCount(s string) (digits string, p runtime.Period, ok bool) {
	for _, u := range calendarUnits {
		if n, cut := strings.CutSuffix(s, u.unit); cut && n != "" && strings.Trim(n, "0123456789") == "" {
			return n, u.period, true
		}
	}
	return "", 0, false
}

// checkCalendarWindow checks a window= value that counts calendar
// periods, and reports whether it does: window=1mo is one, window=2mo is
// refused, as a calendar window is one period long.
func (p *parser) checkCalendarWindow(v value) bool {
	n, period, ok := calendarCount(v.Value)
	if !ok {
		return false
	}
	if n != "1" {
		unit := strings.TrimPrefix(v.Value, n)
		msg := "window " + strconv.Quote(v.Value) + ": calendar windows are one period long, from the start of one " + period.String() + " to the start of the next; write window=1" + unit
		if days, err := strconv.Atoi(n); err == nil && days > 0 && days <= 10000 && (period == runtime.Day || period == runtime.Week) {
			if period == runtime.Week {
				days *= 7
			}
			msg += ", or window=" + strconv.Itoa(days*24) + "h for a duration window of " + strconv.Itoa(days*24) + " hours, not aligned to midnight"
		}
		p.errorf(v.off, "%s", msg)
		return true
	}
	p.d.Calendar.Period = period
	return true
}

// checkTZ checks tz=, the IANA time zone of a calendar window, such as
// Europe/Berlin, by loading it as the runtime will. That it goes with a
// calendar window is checked once every option is known, by
// checkCalendar.
func (p *parser) checkTZ(v value) {
	s := v.Value
	if p.quoted(v, "time zone") {
		return
	}
	if s == "Local" {
		p.errorf(v.off, "tz=Local is the time zone of whichever machine runs the program; name the zone, e.g. tz=Europe/Berlin, or remove tz= for UTC")
		return
	}
	if _, err := time.LoadLocation(s); err != nil {
		p.errorf(v.off, "unknown time zone %q; write an IANA time zone name, e.g. tz=Europe/Berlin or tz=America/New_York (zone names are case-sensitive)", s)
		return
	}
	p.d.Calendar.Zone = s
}

// checkCalendar reports, once every option is known, tz= without a
// calendar window and an algorithm other than fixed windows with one, and
// makes a calendar window's algorithm runtime.FixedWindow. It is silent
// about options already reported as wrong.
func (p *parser) checkCalendar() {
	window, hasWindow := p.d.Lookup("window")
	if p.d.Calendar.Period == 0 {
		if tz, set := p.d.Lookup("tz"); set && (!hasWindow || p.d.Window > 0) {
			what := "this directive has no window="
			if hasWindow {
				what = "window=" + window.Value + " is a duration, the same in every zone"
			}
			p.errs = append(p.errs, &Error{
				Pos: tz.NamePos,
				Msg: "tz= applies only to a calendar window (window=1d, 1w, 1mo or 1y), whose periods begin at midnight in that zone; " + what + ": remove tz=",
			})
		}
		p.d.Calendar.Zone = ""
		return
	}
	switch algo, set := p.d.Lookup("algo"); {
	case !set:
		p.d.Algorithm = runtime.FixedWindow
	case p.d.Algorithm != "" && p.d.Algorithm != runtime.FixedWindow:
		p.errs = append(p.errs, &Error{
			Pos: algo.NamePos,
			Msg: "window=" + window.Value + " is a calendar window, and calendar windows are fixed windows, counted from the start of one " + p.d.Calendar.Period.String() + " to the start of the next; algo=" + algo.Value + " has no calendar boundary: remove algo=, or use a duration window such as window=" + durationOf(p.d.Calendar.Period),
		})
	}
}

// calendarWords maps near misses of a calendar window's unit, lower-cased,
// to the unit.
var calendarWords = map[string]string{
	"day": "d", "days": "d", "dy": "d",
	"week": "w", "weeks": "w", "wk": "w",
	"month": "mo", "months": "mo", "mon": "mo", "mth": "mo", "mos": "mo",
	"year": "y", "years": "y", "yr": "y", "yrs": "y",
}

// calendarSyntax returns how to write s, which is not a window, when it
// looks like a calendar window ("1month", "1D", "1 mo"), or "".
func calendarSyntax(s string) string {
	lower := strings.ToLower(strings.ReplaceAll(s, " ", ""))
	n := strings.TrimRight(lower, "abcdefghijklmnopqrstuvwxyz")
	unit := lower[len(n):]
	if n == "" || strings.Trim(n, "0123456789") != "" {
		return ""
	}
	if u, ok := calendarWords[unit]; ok {
		unit = u
	}
	for _, c := range calendarUnits {
		if c.unit == unit {
			return "window " + strconv.Quote(s) + " is not a window; write window=1" + unit + " for a calendar " + c.period.String() + " (calendar windows are one period long), or a Go duration such as window=60s"
		}
	}
	if s == n+"M" {
		return "window " + strconv.Quote(s) + " is not a Go duration, whose units are lower case; write window=" + n + "m for minutes, or window=1mo for a calendar month"
	}
	return ""
}

// durationOf spells the Go duration nearest to period p, for messages.
func durationOf(p runtime.Period) string {
	switch p {
	case runtime.Week:
		return "168h"
	case runtime.Month:
		return "720h"
	case runtime.Year:
		return "8760h"
	}
	return "24h"
}
