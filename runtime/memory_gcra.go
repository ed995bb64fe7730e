package runtime

// gcra is the in-memory twin of lua/gcra.lua: the theoretical arrival time
// in µs.
type gcra struct {
	tat int64
	set bool
}

func (g *gcra) check(now int64, p params) verdict {
	interval := ceilDiv(p.window, p.max)
	tolerance := p.burst * interval
	tat := now
	if g.set && g.tat > now {
		tat = g.tat
	}
	next := tat + p.cost*interval
	v := verdict{remaining: max(0, floorDiv(tolerance-(tat-now), interval)), reset: tat - now, scratch: next}
	if next-now > tolerance {
		v.retry = next - tolerance - now
		return v
	}
	v.ok = true
	return v
}

func (g *gcra) commit(now int64, p params, v *verdict) {
	g.tat, g.set = v.scratch, true
	// The script's floor((burst*interval - (tat'-now)) / interval), with
	// tat' = tat + cost*interval, is check's floor((burst*interval -
	// (tat-now)) / interval) less cost, which check did not clamp at 0: an
	// admitted call left at least cost intervals of tolerance. Taking it
	// from check saves two divisions under the shard's lock.
	v.remaining -= p.cost
	v.reset = g.tat - now
}
