package memlimit

// calendarWindow is the in-memory twin of lua/calendar_window.lua: a
// FixedWindow limit with a runtime.Calendar, whose windows are the
// calendar's periods in its zone (p.cal) rather than multiples of a
// Window. It keeps the window it counts in by its start and end, µs; a
// commit's receipt (verdict.scratch) is the window's start.
type calendarWindow struct {
	w, e, n int64
	set     bool
}

func (c *calendarWindow) check(now int64, p params) verdict {
	b := p.cal.At(now)
	w, e := b.Start, b.End
	var count int64
	if c.set && c.w >= w {
		// A window later than ours was written by a clock ahead of ours.
		w, e, count = c.w, c.e, c.n
	}
	v := windowVerdict(count, e-now, w, p)
	v.end = e
	return v
}

func (c *calendarWindow) commit(now int64, p params, v *verdict) {
	c.w, c.e, c.n, c.set = v.scratch, v.end, v.count+p.cost, true
	v.remaining = p.max - v.count - p.cost
	v.reset = c.e - now
}

// giveBack takes d units back from the window that starts at receipt,
// never below 0, if the key still counts in it and now's window does not
// start after it: a window that has ended gives nothing back.
func (c *calendarWindow) giveBack(now int64, p params, receipt, d int64) {
	if c.set && c.w == receipt && receipt >= p.cal.At(now).Start {
		c.n = max(0, c.n-d)
	}
}
