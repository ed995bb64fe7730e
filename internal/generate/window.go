package generate

import (
	"fmt"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// durationUnits are the units a window is spelt in, largest first.
var durationUnits = []struct {
	d          time.Duration
	name       string // the time package's constant
	word, plur string // for doc comments
}{
	{time.Hour, "Hour", "hour", "hours"},
	{time.Minute, "Minute", "minute", "minutes"},
	{time.Second, "Second", "second", "seconds"},
	{time.Millisecond, "Millisecond", "millisecond", "milliseconds"},
	{time.Microsecond, "Microsecond", "microsecond", "microseconds"},
	{time.Nanosecond, "Nanosecond", "nanosecond", "nanoseconds"},
}

// windowUnit splits d (> 0) into a count of the largest unit that divides
// it exactly: 90s is 90 seconds, 2m is 2 minutes, 1500ms is 1500
// milliseconds.
func windowUnit(d time.Duration) (n int64, unit int) {
	for i, u := range durationUnits {
		if d%u.d == 0 {
			return int64(d / u.d), i
		}
	}
	return int64(d), len(durationUnits) - 1
}

// windowWords says "per minute" or "per 90 seconds", for doc comments.
func windowWords(d time.Duration) string {
	n, i := windowUnit(d)
	if n == 1 {
		return "per " + durationUnits[i].word
	}
	return fmt.Sprintf("per %d %s", n, durationUnits[i].plur)
}

// limitWindow spells a limit's window as -list and doc comments show it:
// a Go duration as short as it reads ("1m", "1h30m"), or a calendar
// window's period and zone ("month in Europe/Berlin", "day in UTC").
func limitWindow(d time.Duration, c runtime.Calendar) string {
	if !c.IsZero() {
		return c.String()
	}
	return shortDuration(d)
}
