package memlimit

import (
	"math"
	"sync/atomic"
)

// gcra is the in-memory twin of lua/gcra.lua: the theoretical arrival time
// in µs. It is the whole state, so calls swap it with a compare-and-swap and
// take no lock (see Limiter.decideHeld); a call under the shard's lock
// that must hold it across a check and a commit (Decide with several
// limits) claims it instead, swapping in gcraClaimed and keeping the value
// in held until it stores the new one.
type gcra struct {
	tat  atomic.Int64
	held int64
}

// Values of gcra.tat that are not times: below any time a clock gives, so
// that gcraEmpty needs no test of its own.
const (
	gcraEmpty   int64 = math.MinInt64     // no admission yet
	gcraClaimed int64 = math.MinInt64 + 1 // a call under the shard's lock holds it
	gcraDead    int64 = math.MinInt64 + 2 // evicted
)

// gcraCheck decides a call at now on a key whose theoretical arrival time is
// tat (gcraEmpty for none); v.scratch is the new arrival time if admitted.
func gcraCheck(tat, now int64, p params) verdict {
	interval := ceilDiv(p.window, p.max)
	tolerance := p.burst * interval
	if tat < now {
		tat = now
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

// gcraCommit completes an admitting verdict of gcraCheck.
func gcraCommit(now int64, p params, v *verdict) {
	// The script's floor((burst*interval - (tat'-now)) / interval), with
	// tat' = tat + cost*interval, is check's floor((burst*interval -
	// (tat-now)) / interval) less cost, which check did not clamp at 0: an
	// admitted call left at least cost intervals of tolerance. Taking it
	// from check saves two divisions.
	v.remaining -= p.cost
	v.reset = v.scratch - now
}

// check and commit work on held, for a call that claimed the state.
func (g *gcra) check(now int64, p params) verdict { return gcraCheck(g.held, now, p) }

func (g *gcra) commit(now int64, p params, v *verdict) {
	g.held = v.scratch
	gcraCommit(now, p, v)
}

// claim takes the state for a call under the shard's lock, which is then
// the only one that may claim it; calls without the lock that find it
// claimed wait for that lock. The entry must be in its shard's table, so
// not dead.
func (g *gcra) claim() {
	for {
		t := g.tat.Load()
		if g.tat.CompareAndSwap(t, gcraClaimed) {
			g.held = t
			return
		}
	}
}

// giveBack moves held, which the call claimed, d intervals earlier, but
// never before now: a key whose arrival time has passed has nothing to give
// back.
func (g *gcra) giveBack(now int64, p params, d int64) {
	if g.held > now {
		g.held = max(now, g.held-d*ceilDiv(p.window, p.max))
	}
}

// release ends a claim, storing held.
func (g *gcra) release() { g.tat.Store(g.held) }
