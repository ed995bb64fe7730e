package memlimit

// fixedWindow is the in-memory twin of lua/fixed_window.lua. A commit's
// receipt (verdict.scratch) is the index of the window it counted in.
type fixedWindow struct {
	w, n int64
	set  bool
}

func (f *fixedWindow) check(now int64, p params) verdict {
	w := floorDiv(now, p.window)
	var count int64
	if f.set && f.w >= w {
		// A window later than ours was written by a clock ahead of ours.
		w, count = f.w, f.n
	}
	return windowVerdict(count, (w+1)*p.window-now, w, p)
}

// windowVerdict is the verdict of a fixed window (plain or of a calendar)
// that holds count units and ends in ends µs, with its receipt.
func windowVerdict(count, ends, receipt int64, p params) verdict {
	v := verdict{remaining: max(0, p.max-count), scratch: receipt, count: count}
	if count > 0 {
		v.reset = ends
	}
	if count+p.cost > p.max {
		v.retry = ends
		return v
	}
	v.ok = true
	return v
}

func (f *fixedWindow) commit(now int64, p params, v *verdict) {
	f.w, f.n, f.set = v.scratch, v.count+p.cost, true
	v.remaining = p.max - v.count - p.cost
	v.reset = (f.w+1)*p.window - now
}

// giveBack takes d units back from window receipt, never below 0, if the
// key still counts in it and now's window is not past it: a window that
// has ended gives nothing back, as in lua/fixed_window.lua, even when no
// later call has opened the next one.
func (f *fixedWindow) giveBack(now int64, p params, receipt, d int64) {
	if f.set && f.w == receipt && receipt >= floorDiv(now, p.window) {
		f.n = max(0, f.n-d)
	}
}
