package runtime

// ApplyOverrides returns reqs with o's overrides in force, for the tests
// of package runtime_test.
func ApplyOverrides(o *Overrides, reqs []Request) []Request {
	return o.apply(reqs, func(Request, error) {})
}

// CachedCalendars returns how many calendars z keeps.
func CachedCalendars(z *CalendarZones) int { return lenOf(z.m.Load()) }
