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
	interval := ceilDiv(p.window, p.max)
	g.tat, g.set = v.scratch, true
	v.remaining = floorDiv(p.burst*interval-(g.tat-now), interval)
	v.reset = g.tat - now
}
