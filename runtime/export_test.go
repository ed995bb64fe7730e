package runtime

// ApplyOverrides returns reqs with o's overrides in force, for the tests
// of package runtime_test.
var ApplyOverrides = (*Overrides).apply

// CachedCalendars returns how many calendars z keeps.
func CachedCalendars(z *CalendarZones) int { return lenOf(z.m.Load()) }
