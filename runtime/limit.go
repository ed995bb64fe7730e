package runtime

import (
	"fmt"
	"time"
)

// Limit is a rate-limiting policy: Max units per Window for each key,
// counted by Algorithm, whose constant states the exact guarantee. The
// zero value is not valid; see Validate.
//
// Validate accepts exactly the limits that both backends decide alike:
// Max and Burst at most MaxUnits (2^52), a SlidingLog's Max at most
// MaxSlidingLog (1,000,000), and a Window such that every time the algorithm
// counts lies within 2^52 µs (about 142 years) of now:
//
//	SlidingLog, FixedWindow   Window ≤ 2^52 µs
//	SlidingWindow             11·⌈Window/10⌉ ≤ 2^52 µs (about 129 years)
//	TokenBucket               Window·Burst ≤ 2^52 µs
//	GCRA                      2·Burst·⌈Window/Max⌉ ≤ 2^52 µs
//
// (Window in µs, Burst meaning Max when 0.) A call's cost is at most the
// limit's Capacity.
type Limit struct {
	// Name identifies the limit in storage keys, errors and metrics, for
	// example "Notifier.SendCode". Two limits with the same Name and key share
	// one count, so give different policies different names.
	Name string
	// Window is the window length: the period in which Max units are
	// admitted; for Concurrency, a permit's lease. It must be at least 1µs
	// and is used in whole microseconds, unless Calendar is set: it must
	// then be 0.
	Window time.Duration
	// Calendar, when set, makes the windows of a FixedWindow limit the
	// periods of a calendar (see Calendar), in place of Window.
	Calendar Calendar
	// Max is the number of units admitted per Window (for Concurrency, of
	// calls in flight). It must be at least 1 and at most MaxUnits, or
	// MaxSlidingLog for SlidingLog.
	Max int
	// Algorithm selects how admissions are counted; the zero value means
	// SlidingLog.
	Algorithm Algorithm
	// Burst is the capacity of TokenBucket and GCRA: how many units may be
	// admitted at once after an idle period. 0 means Max; at most
	// MaxUnits. Other algorithms ignore it.
	Burst int
	// Mode says whether the limit's denials are enforced (the zero value),
	// only reported (ModeShadow), or the limit is skipped (ModeOff). See
	// Mode for where it applies.
	Mode Mode
}

// Validate reports whether l can be used by a Limiter. Limiters call it on
// every decision, so an invalid Limit yields an error, never a panic.
func (l Limit) Validate() error {
	switch {
	case l.Name == "":
		return fmt.Errorf("ratelimit: limit has no Name; set Limit.Name to identify it, e.g. \"Notifier.SendCode\"")
	case l.Window < time.Microsecond && l.Calendar.IsZero():
		return fmt.Errorf("ratelimit: limit %q has Window %v; it must be at least 1µs", l.Name, l.Window)
	case l.Max < 1:
		return fmt.Errorf("ratelimit: limit %q has Max %d; it must be at least 1", l.Name, l.Max)
	case int64(l.Max) > MaxUnits:
		return fmt.Errorf("ratelimit: limit %q has Max %d; it can be at most 2^52 (%d), the largest count both backends keep exactly; for a limit that never denies, use ModeOff", l.Name, l.Max, MaxUnits)
	case l.Mode > ModeOff:
		return fmt.Errorf("ratelimit: limit %q has unknown %#v; use ModeEnforce, ModeShadow or ModeOff", l.Name, l.Mode)
	}
	if !l.Calendar.IsZero() {
		return validateCalendar(l)
	}
	return validateAlgorithm(l)
}

// String formats l as "Name (Max per Window)", or "Name (Max per month in
// Europe/Berlin)" with a Calendar, for logs and error messages.
func (l Limit) String() string {
	if !l.Calendar.IsZero() {
		return fmt.Sprintf("%s (%d per %v)", l.Name, l.Max, l.Calendar)
	}
	return fmt.Sprintf("%s (%d per %v)", l.Name, l.Max, l.Window)
}
